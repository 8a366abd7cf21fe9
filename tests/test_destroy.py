"""Nothing medsimp did not write is destroyed (issue 28 items 1, 14, 16; issue 30 item 6).

Each case runs the real CLI (or, where a race or a full disk must be staged, the real
`medsimp.atomic` in a second process) and hashes the tree before and after."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from medsimp import atomic, ownership
from medsimp.errors import UsageError
from medsimp.markers import MARKER

REPO = Path(__file__).resolve().parents[1]
SAMPLE_NOTES = REPO / "data/sample/NOTEEVENTS.csv"
SAMPLE_COCHRANE = REPO / "data/sample/cochrane.jsonl"


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def cli(*args: str, cwd: Path = REPO, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,
    )


def one_line_exit_2(result: subprocess.CompletedProcess, says: str) -> None:
    assert result.returncode == 2, result.stderr[-800:]
    last = result.stderr.strip().splitlines()[-1]
    assert says in last and len(last) < 400 and "Traceback" not in result.stderr


def notes_output(folder: Path) -> None:
    """A folder as `medsimp notes` leaves it (its marker): the normal rerun would replace it."""
    folder.mkdir(parents=True)
    (folder / MARKER).write_text('{"command": "notes", "lineage": ["mimic-iii"], "tool": "medsimp"}\n')
    (folder / "stats.json").write_text("{}\n")


# --- item 1: an input inside the output folder is never deleted --------------------------------


@pytest.mark.parametrize(
    "case",
    ["input_in_output", "input_nested", "force_other_command", "params_input", "params_file"],
)
def test_an_input_inside_the_output_is_never_deleted(tmp_path, case):
    out = tmp_path / "OUT"
    notes_output(out)
    params = tmp_path / "params.yaml"
    params.write_text("{}\n")
    if case == "input_in_output":
        mine = out / "MY_ONLY_COPY.csv"
        mine.write_bytes(SAMPLE_NOTES.read_bytes())
        args = ["notes", "--input", str(mine), "--output", str(out)]
    elif case == "input_nested":
        mine = out / "raw" / "notes.csv"
        mine.parent.mkdir()
        mine.write_bytes(SAMPLE_NOTES.read_bytes())
        args = ["notes", "--input", str(mine), "--output", str(out)]
    elif case == "force_other_command":
        mine = out / "raw" / "cochrane.jsonl"
        mine.parent.mkdir()
        mine.write_bytes(SAMPLE_COCHRANE.read_bytes())
        args = ["--force", "cochrane", "--input", str(mine), "--output", str(out)]
    elif case == "params_input":  # no --input: the input is named by the params file
        mine = out / "raw" / "notes.csv"
        mine.parent.mkdir()
        mine.write_bytes(SAMPLE_NOTES.read_bytes())
        params.write_text(f"notes:\n  input: {mine}\n  output: {out}\n")
        args = ["--params", str(params), "notes"]
    else:  # the params file itself lives in the output folder
        mine = out / "params.yaml"
        mine.write_text(f"notes:\n  input: {SAMPLE_NOTES}\n")
        args = ["--params", str(mine), "notes", "--output", str(out)]
    before = tree_hash(tmp_path)
    result = cli(*args)
    one_line_exit_2(result, "holds the input")
    assert mine.is_file() and tree_hash(tmp_path) == before


def test_every_atomic_dir_checks_the_registered_inputs(tmp_path):
    """The guard needs no caller to pass `inputs=`: the CLI registers them once."""
    out = tmp_path / "out"
    notes_output(out)
    (out / "mine.csv").write_text("only copy\n")
    atomic.configure("notes", inputs=[out / "mine.csv"])
    try:
        with pytest.raises(UsageError, match="holds the input"), atomic.atomic_dir(out):
            pass
        assert (out / "mine.csv").read_text() == "only copy\n"
        # a params path may name the output itself (humaneval.forms is forms' output)...
        atomic.configure("notes", params_inputs=[out])
        with atomic.atomic_dir(out) as tmp:
            (tmp / "stats.json").write_text("{}\n")
        (out / "mine.csv").write_text("only copy\n")
        # ...but never something inside it
        atomic.configure("notes", params_inputs=[out / "mine.csv"])
        with pytest.raises(UsageError, match="holds the input"), atomic.atomic_dir(out):
            pass
    finally:
        atomic.configure("")


# --- item 14: two commands started together on one new --output ---------------------------------

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from medsimp.atomic import atomic_dir
    out, ready, go = map(Path, sys.argv[1:4])
    with atomic_dir(out, "notes", lineage=["mimic-iii"]) as tmp:
        (tmp / "stats.json").write_text('{"first": true}\\n')
        ready.write_text("writing")
        deadline = time.time() + 60
        while not go.exists() and time.time() < deadline:
            time.sleep(0.02)
    """
)


def test_a_second_command_on_an_output_being_written_is_refused(tmp_path):
    out, ready, go = tmp_path / "new-out", tmp_path / "ready", tmp_path / "go"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out), str(ready), str(go)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        deadline = time.time() + 60
        while not ready.exists() and time.time() < deadline:
            time.sleep(0.02)
        assert ready.exists(), "the first writer never started"
        assert not out.exists()  # still new: the old check let a second writer through here
        result = cli("cochrane", "--output", str(out))
        one_line_exit_2(result, "being written by another medsimp command")
        with pytest.raises(UsageError, match="being written"), atomic.atomic_dir(out, "cochrane"):
            pass
    finally:
        go.write_text("go")
        assert holder.wait(timeout=60) == 0
    assert json.loads((out / "stats.json").read_text()) == {"first": True}  # the first output stands
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no lock left


# --- round two item 2: a user's file named like the output lock -----------------------------------


def test_a_users_file_named_like_the_output_lock_is_refused_untouched(tmp_path):
    """Before, `.<out>.medsimp-lock` was truncated to `pid N` and deleted on release, whatever it held."""
    out = tmp_path / "OUT"
    lock = tmp_path / f".OUT{atomic.LOCK_SUFFIX}"
    lock.write_text("my notes, not a lock\n")
    before = tree_hash(tmp_path)
    result = cli("cochrane", "--output", str(out))
    one_line_exit_2(result, "is a file medsimp did not write")
    with pytest.raises(UsageError, match="medsimp did not write"), atomic.atomic_dir(out, "cochrane"):
        pass
    assert lock.read_text() == "my notes, not a lock\n" and tree_hash(tmp_path) == before


def test_the_output_lock_is_signed_and_a_stale_or_empty_one_is_handled(tmp_path):
    out = tmp_path / "OUT"
    lock = tmp_path / f".OUT{atomic.LOCK_SUFFIX}"
    with atomic.atomic_dir(out, "notes", lineage=[]) as tmp:
        assert lock.read_text() == f"{atomic.LOCK_SIGNATURE}pid {os.getpid()}"
        (tmp / "stats.json").write_text("{}\n")
    assert not lock.exists()  # created here: removed
    lock.write_text(f"{atomic.LOCK_SIGNATURE}pid 999999999")  # left by a killed medsimp
    with atomic.atomic_dir(out, "notes", lineage=[]) as tmp:
        (tmp / "stats.json").write_text("{}\n")
    assert not lock.exists()
    lock.write_text("")  # an empty file of the user's: used as the lock, left as it was found
    with atomic.atomic_dir(out, "notes", lineage=[]) as tmp:
        (tmp / "stats.json").write_text("{}\n")
    assert lock.is_file() and lock.read_bytes() == b""


# --- item 16: a full disk while the ownership record is written ---------------------------------

WRITE = "import sys; from medsimp.atomic import write_text; write_text(sys.argv[1], sys.argv[2])"


def _small_files_only() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))  # the data fits, the record does not


def test_a_full_disk_while_recording_ownership_keeps_the_old_file_and_record(tmp_path):
    """RLIMIT_FSIZE makes the kernel fail the record's write (EFBIG, as ENOSPC on a full disk)."""
    target = tmp_path / "report.txt"
    atomic.write_text(target, "first\n")
    failed = subprocess.run(
        [sys.executable, "-c", WRITE, str(target), "second\n"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        preexec_fn=_small_files_only,
        timeout=120,
    )
    assert failed.returncode != 0 and "File too large" in failed.stderr
    assert target.read_text() == "first\n"  # not replaced: its record could not be written
    records = ownership.record_path(target).parent
    assert [p.name for p in records.iterdir() if ".tmp-" in p.name] == []  # no empty temp record
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]
    atomic.write_text(target, "third\n")  # a later run still owns the file
    assert target.read_text() == "third\n"


KILLED_AT_SWAP = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from medsimp.atomic import write_text
    target = Path(sys.argv[1]).absolute()
    real = os.replace
    def replace(src, dst, *a, **k):
        if Path(dst).absolute() == target:  # the record is written; the file is not yet swapped
            os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst, *a, **k)
    os.replace = replace
    write_text(target, sys.argv[2])
    """
)


def test_a_kill_between_the_record_and_the_swap_leaves_the_old_file_owned(tmp_path):
    """Issue 28 round two item 1: the record named only the new content, so a SIGKILL before
    the rename left the old file disowned and every later run refused to replace it."""
    target = tmp_path / "report.txt"
    atomic.write_text(target, "first\n")
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AT_SWAP, str(target), "second\n"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -9
    assert target.read_text() == "first\n"
    record = json.loads(ownership.record_path(target).read_text())
    assert record["sha256"] == hashlib.sha256(b"second\n").hexdigest()  # the crash point was reached
    assert ownership.owned(target)  # the old content is still medsimp's...
    atomic.write_text(target, "third\n")  # ...so the next run replaces it
    assert target.read_text() == "third\n"
    record = json.loads(ownership.record_path(target).read_text())
    assert record["sha256"] == hashlib.sha256(b"third\n").hexdigest() and "replacing" not in record
    target.write_text("first\n")  # the user writes the old bytes back: settled, no longer owned
    with pytest.raises(UsageError, match="not written by medsimp"):
        atomic.write_text(target, "fourth\n")


# --- issue 30 item 6: no ownership file beside the user's files ----------------------------------


def test_single_file_outputs_leave_no_hidden_file_beside_them(tmp_path):
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    (metrics / "mine.json").write_text('{"mine": 1}\n')
    atomic.write_json(metrics / "notes.json", {"kept": 1})
    atomic.write_json(metrics / "notes.json", {"kept": 2})  # its own: replaced
    assert sorted(p.name for p in metrics.iterdir()) == ["mine.json", "notes.json"]
    with pytest.raises(UsageError, match="not written by medsimp"):
        atomic.write_json(metrics / "mine.json", {"kept": 3})
    (metrics / "notes.json").write_text('{"edited": true}\n')  # changed since: no longer ours
    with pytest.raises(UsageError, match="not written by medsimp"):
        atomic.write_json(metrics / "notes.json", {"kept": 4})


def test_a_legacy_sidecar_is_honoured_once_and_removed(tmp_path):
    target = tmp_path / "latest.json"
    target.write_text('{"old": true}\n')
    sha = hashlib.sha256(target.read_bytes()).hexdigest()
    legacy = tmp_path / ".latest.json.medsimp-owner"
    legacy.write_text(json.dumps({"command": "refresh", "sha256": sha, "tool": "medsimp"}))
    atomic.write_json(target, {"new": True})
    assert json.loads(target.read_text()) == {"new": True} and not legacy.exists()


# --- item 2: refresh prunes only what refresh wrote; its lock touches nothing beside it ----------

REPORT = {
    "status": "nothing_to_do",
    "exit_code": 3,
    "started_at": "s",
    "finished_at": "f",
    "duration_s": 1.0,
    "git": {"revision": None, "dirty": None},
    "params_hash": "h",
    "summary": "",
    "cache": {"hits": 0, "misses": 0},
    "stages": {},
    "fingerprints": {},
    "fingerprints_changed": [],
}


def test_an_input_named_by_another_params_section_is_guarded_too(tmp_path):
    """`umls-index` reads `umls.mrconso`/`umls.mrsty` (its PARAMS_SECTIONS), not a section of its
    own name: before, a MRCONSO copy inside the output folder was deleted with exit 0."""
    out = tmp_path / "idx"
    umls = REPO / "data/sample/umls"
    first = cli("umls-index", "--mrconso", str(umls / "MRCONSO.RRF"), "--mrsty", str(umls / "MRSTY.RRF"),
                "--output", str(out), cwd=tmp_path)  # fmt: skip
    assert first.returncode == 0, first.stderr[-800:]
    mine = out / "MY_ONLY_MRCONSO.RRF"
    mine.write_bytes((umls / "MRCONSO.RRF").read_bytes())
    result = cli("--set", f"umls.mrconso={mine}", "--set", f"umls.mrsty={umls / 'MRSTY.RRF'}", "umls-index",
                 "--output", str(out), cwd=tmp_path)  # fmt: skip
    one_line_exit_2(result, "holds the input")
    assert mine.is_file()


def test_refresh_never_replaces_a_users_latest_md(tmp_path):
    from medsimp.refresh import report as rr

    (tmp_path / "latest.md").write_text("my own notes\n")
    with pytest.raises(UsageError):
        rr.write_report(tmp_path, REPORT, "20260101T000000Z", keep=2)
    assert (tmp_path / "latest.md").read_text() == "my own notes\n"


@pytest.mark.parametrize("keep", [1, 2])
def test_refresh_prunes_only_the_reports_it_wrote(tmp_path, keep):
    from medsimp.refresh import report as rr

    mine = {
        "notes.json": '{"mine": 1}\n',
        "zzz.json": '{"sorts last": 1}\n',
        "zzz.md": "my notes\n",
        "20250101T000000Z.json": '{"named like a report": 1}\n',  # but refresh did not write it
        "20250101T000000Z.md": "mine too\n",
    }
    for name, text in mine.items():
        (tmp_path / name).write_text(text)
    stamps = ["20260101T000000Z", "20260101T000000Z-2", "20260101T000000Z-10", "20260101T000001Z"]
    for stamp in stamps:
        (tmp_path / f"{stamp}.log").write_text("dvc said\n")
        written = rr.write_report(tmp_path, REPORT, stamp, keep=keep)
        assert written.is_file()  # never pruned while its path is printed
    kept = stamps[-keep:]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*mine, "latest.json", "latest.md", *(f"{s}{x}" for s in kept for x in (".json", ".md", ".log"))]
    )
    assert all((tmp_path / name).read_text() == text for name, text in mine.items())


def test_refresh_lock_leaves_the_users_files_alone(tmp_path):
    from medsimp.refresh.dvc import LockHeld
    from medsimp.refresh.run import refresh_lock

    lock = tmp_path / "my.lock"
    beside = tmp_path / "my.lock.json"
    beside.write_text('{"the user\'s": 1}\n')
    with refresh_lock(lock):
        with pytest.raises(LockHeld, match=r"another refresh is running \(pid \d+"), refresh_lock(lock):
            pass
    assert beside.read_text() == '{"the user\'s": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my.lock", "my.lock.json"]
    with refresh_lock(lock):  # released, and a lock file it wrote is reused
        pass
    users = tmp_path / "notes.txt"
    users.write_text("not a lock\n")
    with pytest.raises(UsageError, match="medsimp did not write"), refresh_lock(users):
        pass
    assert users.read_text() == "not a lock\n"


# --- item 3: `report` writes PNGs only inside --plots, and only its own -------------------------


def builder_folder(root: Path, config_name: str, builder: str = "bld") -> Path:
    folder = root / "builders" / "bld"
    folder.mkdir(parents=True)
    card = {"medsimp": {"builder": builder}, "configs": [{"config_name": config_name, "data_files": []}]}
    (folder / "README.md").write_text(f"---\n{json.dumps(card)}\n---\n# card\n")
    (folder / "stats.json").write_text("{}\n")
    return folder


@pytest.mark.parametrize("name", ["../../x", "/tmp/abs-x", "a$b$c", "en/../../x", "..", ""])
def test_report_refuses_a_config_name_that_is_a_path(tmp_path, name):
    folder = builder_folder(tmp_path / "in", name)
    work = tmp_path / "work"
    (work / "plots").mkdir(parents=True)
    before = tree_hash(tmp_path)
    result = cli(
        "report", str(folder), "--output", str(work / "out"), "--plots", str(work / "plots"), cwd=work
    )
    one_line_exit_2(result, "is not a plain name")
    assert tree_hash(tmp_path) == before and not Path("/tmp/abs-x.png").exists()


def test_report_refuses_a_builder_name_that_is_a_path_as_default_output(tmp_path):
    folder = builder_folder(tmp_path / "in", "en", builder="../../escaped")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    result = cli("report", str(folder), cwd=work)
    one_line_exit_2(result, "is not a plain name")
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "a" / "escaped").exists()


def test_report_a_dollar_in_a_builder_name_is_text(tmp_path):
    folder = builder_folder(tmp_path / "in", "en", builder="cost$in$dollars")
    result = cli("report", str(folder), "--output", str(tmp_path / "out"), "--plots", str(tmp_path / "plots"))
    assert result.returncode == 0, result.stderr[-800:]
    assert (tmp_path / "plots" / "en.png").read_bytes()[:4] == b"\x89PNG"


def test_report_never_overwrites_a_users_png(tmp_path):
    folder = builder_folder(tmp_path / "in", "en")
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "en.png").write_bytes(b"my own figure")
    out = tmp_path / "out"
    result = cli("report", str(folder), "--output", str(out), "--plots", str(plots))
    one_line_exit_2(result, "not written by medsimp")
    assert (plots / "en.png").read_bytes() == b"my own figure" and not out.exists()


@pytest.mark.slow
def test_report_replaces_its_own_png_and_leaves_nothing_beside_it(tmp_path):
    folder = builder_folder(tmp_path / "in", "en")
    plots, out = tmp_path / "plots", tmp_path / "out"
    result = cli("report", str(folder), "--output", str(out), "--plots", str(plots))
    assert result.returncode == 0, result.stderr[-800:]
    result = cli("report", str(folder), "--output", str(out), "--plots", str(plots))
    assert result.returncode == 0, result.stderr[-800:]
    assert sorted(p.name for p in plots.iterdir()) == ["en.png"]  # no record beside it
    assert ownership.owned(plots / "en.png")  # so the rerun may replace it
