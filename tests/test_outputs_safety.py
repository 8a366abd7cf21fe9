"""Outputs never destroy what medsimp did not write; spreadsheet exports cannot carry formulas.

Each case runs the real CLI and hashes the tree before and after."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from medsimp.atomic import atomic_dir, check_output_target, sweep_stale
from medsimp.csvcells import cell_escape, cell_unescape
from medsimp.errors import UsageError
from medsimp.markers import MARKER, marker_of

REPO = Path(__file__).resolve().parents[1]


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("target", ["user_folder", "input_folder", "existing_file", "parent_of_builders"])
def test_output_over_what_medsimp_did_not_write_is_refused(tmp_path, target):
    user = tmp_path / "user"
    user.mkdir()
    (user / "NOTEEVENTS.csv").write_bytes((REPO / "data/sample/NOTEEVENTS.csv").read_bytes())
    (user / "mine.txt").write_text("keep me")
    builders = tmp_path / "builders"
    (builders / "msd").mkdir(parents=True)
    (builders / "msd" / MARKER).write_text('{"command": "build msd", "tool": "medsimp"}')
    (builders / "README.md").write_text("tracked")
    output = {
        "user_folder": user,
        "input_folder": user,
        "existing_file": user / "mine.txt",
        "parent_of_builders": builders,
    }[target]
    before = tree_hash(tmp_path)
    args = (
        ["cochrane", "--output", str(output)]
        if target != "input_folder"
        else ["notes", "--input", str(user / "NOTEEVENTS.csv"), "--output", str(output)]
    )
    result = cli(*args)
    assert result.returncode == 2, result.stderr[-500:]
    assert len(result.stderr.strip().splitlines()[-1]) < 300 and "Traceback" not in result.stderr
    assert tree_hash(tmp_path) == before


@pytest.mark.slow
def test_rerun_replaces_own_output_and_force_crosses_commands_only(tmp_path):
    out = tmp_path / "out"
    assert cli("cochrane", "--output", str(out)).returncode == 0
    assert marker_of(out) == {"command": "cochrane", "tool": "medsimp", "lineage": ["cochrane"]}
    assert cli("cochrane", "--output", str(out)).returncode == 0  # the normal rerun (dvc repro)
    refused = cli("msd", "--output", str(out))
    assert refused.returncode == 2 and "--force" in refused.stderr
    assert cli("msd", "--output", str(out), "--force").returncode == 0
    assert marker_of(out)["command"] == "msd"


def test_force_never_replaces_an_unmarked_folder_or_an_input(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.txt").write_text("x")
    with pytest.raises(UsageError, match="did not write"):
        check_output_target(user, "cochrane", force=True)
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / MARKER).write_text('{"command": "cochrane"}')
    (marked / "input.jsonl").write_text("{}")
    with pytest.raises(UsageError, match="holds the input"):
        check_output_target(marked, "cochrane", inputs=[marked / "input.jsonl"], force=True)


def test_sigterm_leaves_no_temp_files_and_stale_ones_are_swept(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "medsimp.cli", "cochrane", "--output", str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline and not list(tmp_path.glob(".out.tmp-*")):
        time.sleep(0.05)
    assert list(tmp_path.glob(".out.tmp-*")), "the job never started writing"
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)
    assert not list(tmp_path.glob(".out.*")) and not out.exists()
    stale = _killed_writers_temp(out)  # a temp dir of a medsimp process that no longer runs
    assert stale.is_dir()
    sweep_stale(out)
    assert not stale.exists()


def _killed_writers_temp(out: Path) -> Path:
    """The temp folder a medsimp writer leaves when killed mid-write (no clean-up runs)."""
    pid = os.fork()
    if pid == 0:  # the child dies inside `atomic_dir`, as under SIGKILL
        try:
            with atomic_dir(out, "t") as tmp:
                (tmp / "part.parquet").write_text("half")
                os._exit(9)
        finally:
            os._exit(9)
    os.waitpid(pid, 0)
    return out.with_name(f".{out.name}.tmp-{pid}")


def _killed_file_writers_temp(path: Path) -> Path:
    """The temp file `atomic_file` leaves when its process is killed mid-write."""
    from medsimp.atomic import atomic_file

    pid = os.fork()
    if pid == 0:
        try:
            with atomic_file(path) as tmp:
                tmp.write_text("half")
                os._exit(9)
        finally:
            os._exit(9)
    os.waitpid(pid, 0)
    return path.with_name(f".{path.stem}.tmp-{pid}{path.suffix}")


def test_a_users_folder_or_file_named_like_a_leftover_is_never_swept(tmp_path):
    """Issue 54: the sweep decided by name and a dead pid, so a user's `.out.tmp-<n>` folder
    was deleted. Only what medsimp marked as its own goes, whatever the name."""
    from medsimp.atomic import atomic_file, write_json

    out = tmp_path / "out"
    users = {
        tmp_path / ".out.tmp-999999998": "folder",
        tmp_path / ".out.old-999999997": "folder",
        tmp_path / ".out.tmp-999999996": "file",
        tmp_path / ".report.tmp-999999995.json": "file",
    }
    for path, kind in users.items():
        if kind == "folder":
            path.mkdir()
            (path / "thesis.tex").write_text("years of work")
        else:
            path.write_text("the user's notes")
    forged = tmp_path / ".out.tmp-999999994"  # a marker of another tool is not medsimp's
    forged.mkdir()
    (forged / MARKER).write_text('{"tool": "other"}')
    ours = _killed_writers_temp(out)
    ours_file = _killed_file_writers_temp(tmp_path / "report.json")
    assert ours.is_dir() and ours_file.is_file()
    with atomic_dir(out, "t") as tmp:
        (tmp / "a").write_text("1")
    write_json(tmp_path / "report.json", {"n": 1})
    with atomic_file(tmp_path / "report.json", same_content_ok=True) as tmp:
        tmp.write_text('{\n  "n": 1\n}\n')
    assert not ours.exists() and not ours_file.exists()  # medsimp's own leftovers are swept
    for path, kind in users.items():
        assert path.exists(), path
        assert (path / "thesis.tex").is_file() if kind == "folder" else path.read_text() == "the user's notes"
    assert forged.is_dir()


def test_a_users_folder_with_this_processs_temp_name_is_refused_not_deleted(tmp_path):
    out = tmp_path / "out"
    mine = tmp_path / f".out.tmp-{os.getpid()}"
    mine.mkdir()
    (mine / "data.txt").write_text("keep")
    with pytest.raises(UsageError, match="medsimp did not write it"), atomic_dir(out, "t"):
        pass
    assert (mine / "data.txt").read_text() == "keep" and not out.exists()


def test_atomic_dir_keeps_the_old_output_on_error(tmp_path):
    out = tmp_path / "o"
    with atomic_dir(out, "t") as tmp:
        (tmp / "a").write_text("1")
    with pytest.raises(RuntimeError), atomic_dir(out, "t") as tmp:
        (tmp / "a").write_text("2")
        raise RuntimeError
    assert (out / "a").read_text() == "1" and not list(tmp_path.glob(".o.*"))


@pytest.mark.parametrize(
    "value",
    [
        '=HYPERLINK("http://x")',
        "+1",
        "-2+3",
        "@SUM(A1)",
        "\tx",
        "\rx",
        "'=already",
        "''",
        "plain",
        "'quoted",
        "",
        "-",
    ],
)
def test_cell_escape_round_trips_and_defuses(value):
    escaped = cell_escape(value)
    assert cell_unescape(escaped) == value
    if value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        assert escaped.startswith("'")


def test_workbook_cells_are_text_not_formulas(tmp_path):
    from openpyxl import load_workbook

    from medsimp.humaneval.forms import write_workbook

    manifest = {
        "systems": ["a", "b"],
        "items": [{"item_id": "1", "source": "=1+1", "outputs": {"a": "@cmd", "b": "ok"}}],
        "layperson_assignment": {},
    }
    path = tmp_path / "forms.xlsx"
    write_workbook(manifest, path)
    sheet = load_workbook(path)["items"]
    cells = [c for row in sheet.iter_rows(min_row=2) for c in row]
    assert all(c.data_type != "f" for c in cells)
    assert [c.value for c in cells] == ["1", "'=1+1", "'@cmd", "ok"]


def test_a_killed_single_file_write_leaves_a_temp_file_the_next_write_sweeps(tmp_path):
    """SIGKILL inside `atomic_file` cannot clean up; the next write to that path removes the
    temp files of processes that no longer run, and nothing else."""
    from medsimp.atomic import atomic_file

    target = tmp_path / "[m] metrics.json"  # glob characters in the name are literal
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys\nfrom medsimp.atomic import atomic_file\n"
            f"with atomic_file({str(target)!r}) as tmp:\n"
            "    tmp.write_text('{')\n    os.kill(os.getpid(), 9)\n",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert child.wait(timeout=60) == -signal.SIGKILL
    left = list(tmp_path.glob(".*.tmp-*"))
    assert [p.name for p in left] == [f".[m] metrics.tmp-{child.pid}.json"]
    alive = tmp_path / ".[m] metrics.tmp-1.json"  # pid 1 runs: not ours to judge
    other = tmp_path / ".[m] metrics.tmp-x.json"
    huge = tmp_path / ".[m] metrics.tmp-99999999999.json"  # no process has that number
    linked = tmp_path / ".[m] metrics.tmp-999999999.json"  # a symlink is not our temp file
    alive.write_text("")
    other.write_text("")
    huge.write_text("")
    linked.symlink_to(alive)
    with atomic_file(target) as tmp:
        tmp.write_text("{}")
    assert target.read_text() == "{}"
    left = sorted(p.name for p in tmp_path.glob(".*.tmp-*"))
    assert left == sorted([alive.name, other.name, huge.name, linked.name])


def test_a_link_planted_at_the_temp_name_is_not_written_through(tmp_path, monkeypatch):
    """Issue 35 item 12: a symlink at `.<stem>.tmp-<pid><suffix>` made a write land in another file."""
    import os

    from medsimp import atomic
    from medsimp.errors import UsageError

    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n", encoding="utf-8")
    target = tmp_path / "out.json"
    (tmp_path / f".out.tmp-{os.getpid()}.json").symlink_to(victim)
    monkeypatch.setattr(atomic, "_RUN", {**atomic._RUN, "inputs": (), "params_inputs": ()})
    with pytest.raises(UsageError, match="not a temp file of this user"):
        with atomic.atomic_file(target) as tmp:
            tmp.write_text("{}\n", encoding="utf-8")
    assert victim.read_text(encoding="utf-8") == "the user's file\n" and not target.exists()


def test_replacing_an_output_swaps_it_in_one_step(tmp_path, monkeypatch):
    """A folder swap never leaves the name missing (issue 35 item 12): the finished folder and
    the old output trade names in one renameat2(RENAME_EXCHANGE). A process killed between the
    two renames of the old way (simulated: the second rename never happens) left no output,
    and the next run swept the old one away as a dead process's temp folder."""
    import medsimp.atomic as atomic

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    if not atomic.exchange(tmp_path / "a", tmp_path / "b"):
        pytest.skip("no renameat2(RENAME_EXCHANGE) here: atomic_dir renames twice")
    (tmp_path / "a").rmdir()
    (tmp_path / "b").rmdir()
    out = tmp_path / "out"
    with atomic.atomic_dir(out, "cochrane") as tmp:
        (tmp / "v").write_text("old")
    renames = []

    def crash_after_first_rename(src, dst):  # a SIGKILL right after one rename
        renames.append((src, dst))
        raise SystemExit("killed")

    monkeypatch.setattr(atomic.os, "replace", crash_after_first_rename)
    with atomic.atomic_dir(out, "cochrane") as tmp:
        (tmp / "v").write_text("new")
    assert renames == []  # one exchange, no rename
    assert (out / "v").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the old output is gone


def test_exchange_swaps_two_folders(tmp_path):
    from medsimp.atomic import exchange

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_text("a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "y").write_text("b")
    assert exchange(tmp_path / "a", tmp_path / "b")
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["y"]
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["x"]


def test_a_users_file_with_this_processs_temp_file_name_is_refused_not_deleted(tmp_path):
    """The review of issue 54's fix: `atomic_file` replaced any file of this user named like its
    own temp file; only one medsimp recorded as this pid's temp file is replaced now."""
    from medsimp import ownership
    from medsimp.atomic import remove_marked, write_json

    mine = tmp_path / f".report.tmp-{os.getpid()}.json"
    mine.write_text("the user's notes")
    with pytest.raises(UsageError, match="is not a temp file of this user"):
        write_json(tmp_path / "report.json", {"n": 1})
    assert mine.read_text() == "the user's notes" and not (tmp_path / "report.json").exists()
    ownership.claim_temp(mine, os.getpid())  # a leftover medsimp recorded (a reused pid) is replaced
    write_json(tmp_path / "report.json", {"n": 1})
    assert not mine.exists() and json.loads((tmp_path / "report.json").read_text()) == {"n": 1}
    marked = tmp_path / ".out.old-1"  # removed with its marker last
    (marked / "sub").mkdir(parents=True)
    (marked / MARKER).write_text('{"tool": "medsimp"}')
    (marked / "sub" / "part.parquet").write_text("x")
    remove_marked(marked)
    assert not marked.exists()
