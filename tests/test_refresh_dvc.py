"""`medsimp refresh` on a tiny real DVC project built in tmp_path (git + dvc + 3 toy stages)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from medsimp.refresh.run import EXIT_LOCK_HELD, EXIT_NOTHING_TO_DO, EXIT_OK, EXIT_STAGE_FAILED

pytestmark = pytest.mark.slow  # every test here runs DVC on a copy of the project

STAGE_SCRIPT = Path(__file__).parent / "fixtures" / "refresh" / "toy_stage.py"
REVIEWS = [
    {
        "doi": "10.1002/14651858.CD000001",
        "abstract": "Aspirin lowers risk. Harms were rare",
        "pls": "Aspirin helps. Side effects were rare",
    },
    {
        "doi": "10.1002/14651858.CD000002",
        "abstract": "Exercise improves mood. Evidence is weak",
        "pls": "Exercise may help mood. We are unsure",
    },
    {"doi": "10.1002/14651858.CD000003", "abstract": "No plain summary here", "pls": ""},
]
NEW_REVIEW = {
    "doi": "10.1002/14651858.CD000004",
    "abstract": "Zinc shortens colds. Data are few",
    "pls": "Zinc may shorten colds. There is little data",
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _dvc_yaml(persist: bool) -> str:
    py = f"{sys.executable} toy_stage.py"
    builder = "builders/toy:\n          persist: true" if persist else "builders/toy"
    return f"""stages:
  extract:
    cmd: {py} extract
    deps: [toy_stage.py, data/reviews.jsonl]
    outs: [out/extract]
    metrics: [{{metrics/extract.json: {{cache: false}}}}]
  align:
    cmd: {py} align
    deps: [toy_stage.py, out/extract]
    outs: [out/align]
    metrics: [{{metrics/align.json: {{cache: false}}}}]
  build:
    cmd: {py} build
    deps: [toy_stage.py, out/align]
    outs:
      - {builder}
    metrics: [{{metrics/build.json: {{cache: false}}}}]
"""


def write_reviews(root: Path, reviews: list[dict]) -> None:
    (root / "data" / "reviews.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reviews))


def make_project(root: Path, persist: bool = False) -> Path:
    (root / "data").mkdir(parents=True)
    shutil.copy(STAGE_SCRIPT, root / "toy_stage.py")
    write_reviews(root, REVIEWS)
    (root / "dvc.yaml").write_text(_dvc_yaml(persist))
    (root / "params.yaml").write_text("refresh:\n  report_dir: reports/refresh\n")
    (root / ".gitignore").write_text(".cache/\nreports/\nbuild.started\nhold-build\n")
    _git(root, "init", "-q")
    subprocess.run([sys.executable, "-m", "dvc", "init", "-q"], cwd=root, check=True)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "toy")
    return root


def refresh_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "medsimp.cli", "refresh", *args]


def run_refresh(root: Path, *argv: str) -> tuple[int, str]:
    """`medsimp ARGV` (default: refresh) in-process from `root`: (exit code, stdout + stderr)."""
    from medsimp.cli import main

    out, cwd = io.StringIO(), os.getcwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(list(argv) if argv and argv[0].startswith("--set") else ["refresh", *argv])
    finally:
        os.chdir(cwd)
    return code, out.getvalue()


def latest(root: Path) -> dict:
    return json.loads((root / "reports" / "refresh" / "latest.json").read_text())


def start_held_build(root: Path) -> subprocess.Popen:
    """Start a refresh whose build stage pauses half-way; return once it is paused."""
    (root / "build.started").unlink(missing_ok=True)
    (root / "hold-build").touch()
    proc = subprocess.Popen(
        refresh_cmd(),
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while not (root / "build.started").exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.time() < deadline, "build stage never started"
        time.sleep(0.05)
    return proc


def load_builder(root: Path, cache: Path) -> int:
    """Rows of the toy builder, loaded with a fresh datasets cache."""
    import datasets

    ds = datasets.load_dataset(
        str(root / "builders" / "toy"), "default", cache_dir=str(cache / str(time.monotonic_ns()))
    )
    return ds["train"].num_rows


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.fixture(scope="module")
def built_template(tmp_path_factory) -> Path:
    root = make_project(tmp_path_factory.mktemp("template") / "proj")
    assert run_refresh(root)[0] == EXIT_OK
    return root


@pytest.fixture
def built(built_template: Path, tmp_path: Path) -> Path:
    """A copy of a project after one successful refresh (builder with 4 rows). What medsimp
    wrote is recorded in the project (medsimp.ownership), so the copy knows it as it is."""
    return Path(shutil.copytree(built_template, tmp_path / "proj", symlinks=True))


def test_first_run_then_noop_then_one_new_review(project: Path):
    code, out = run_refresh(project)
    assert code == EXIT_OK, out
    report = latest(project)
    assert report["status"] == "success"
    assert {n: s["status"] for n, s in report["stages"].items()} == {
        "extract": "ran",
        "align": "ran",
        "build": "ran",
    }
    assert report["stages"]["align"]["cache"] == {"hits": 0, "misses": 2}
    assert report["git"]["revision"] and len(report["params_hash"]) == 16
    assert report["fingerprints"]["toy"]["files"] == 1
    assert (project / "reports" / "refresh" / report["log"]).exists()

    code, out = run_refresh(project)
    assert code == EXIT_NOTHING_TO_DO, out
    assert "nothing to do" in out
    report = latest(project)
    assert report["status"] == "nothing_to_do" and report["exit_code"] == EXIT_NOTHING_TO_DO
    assert all(s["status"] == "skipped" and not s["changes"] for s in report["stages"].values())
    assert report["stages"]["extract"]["counts"] == {"kept": 2, "read": 3, "rejected": 1}
    assert report["cache"] == {"hits": 0, "misses": 0}
    assert report["fingerprints_changed"] == []
    assert report["previous_report"] and report["previous_report"] != report["report"]
    assert "nothing to do" in (project / "reports" / "refresh" / "latest.md").read_text()

    write_reviews(project, [*REVIEWS, NEW_REVIEW])
    code, out = run_refresh(project)
    assert code == EXIT_OK, out
    report = latest(project)
    stages = report["stages"]
    assert {n: s["status"] for n, s in stages.items()} == {"extract": "ran", "align": "ran", "build": "ran"}
    assert stages["extract"]["changes"]["read"] == {"previous": 3, "current": 4, "delta": 1}
    assert stages["align"]["changes"]["pairs"]["delta"] == 2
    assert stages["align"]["cache"] == {"hits": 2, "misses": 1}
    assert report["cache"] == {"hits": 2, "misses": 1}
    assert report["fingerprints_changed"] == ["toy"]
    md = (project / "reports" / "refresh" / "latest.md").read_text()
    assert "| align | ran | cache_hits +2, cache_misses -1, pairs +2, reviews +1 | 2 / 1 | - |" in md
    # issue 55: what each stage cost, from its run record (medsimp.stats.cost)
    spent = stages["extract"]["cost"]
    assert spent["documents"] == 4 and 0 < spent["cpu_seconds"] and 0 < spent["wall_seconds"] < 600
    assert "align" in stages and "cost" not in stages["align"]  # no run record: nothing claimed
    assert (
        "| extract | ran | " in md and f"| {spent['wall_seconds']:g} / {spent['cpu_seconds']:g}, 4, - |" in md
    )


NOTES_STAGE = f"""  notes:
    cmd: {sys.executable} toy_stage.py notes
    deps: [data/notes.txt]
    metrics: [{{metrics/notes.json: {{cache: false}}}}]
"""


def test_a_copied_project_with_nothing_recorded_elsewhere_refreshes_only_what_a_new_review_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Issue 55 §2: after `cp -a` of a repro'd project, with a fresh state folder (a new
    container, another user, a restored backup), refresh after one new review failed at the
    first stage that reran: "metrics/extract.json.run.json exists and was not written by
    medsimp" (records were per absolute path, in the per-user state folder). The records now
    travel with the project: exactly the stages that depend on the reviews rerun, the copied
    document cache and reports are used, and a file the user changed is still refused."""
    root = make_project(tmp_path / "here")
    (root / "data" / "notes.txt").write_text("one\ntwo\n")
    with (root / "dvc.yaml").open("a") as fh:
        fh.write(NOTES_STAGE)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "notes")
    monkeypatch.setenv("MEDSIMP_STATE_DIR", str(tmp_path / "state-here"))
    code, out = run_refresh(root)
    assert code == EXIT_OK, out
    moved = tmp_path / "there"
    subprocess.run(["cp", "-a", str(root), str(moved)], check=True)
    shutil.rmtree(root)  # the old place is gone, as on another machine
    monkeypatch.setenv("MEDSIMP_STATE_DIR", str(tmp_path / "state-there"))  # nothing recorded here
    notes = (moved / "metrics" / "notes.json").read_bytes()

    write_reviews(moved, [*REVIEWS, NEW_REVIEW])
    code, out = run_refresh(moved)
    assert code == EXIT_OK, out
    assert "not written by medsimp" not in out
    report = latest(moved)
    assert {n: s["status"] for n, s in report["stages"].items()} == {
        "extract": "ran",
        "align": "ran",
        "build": "ran",
        "notes": "skipped",
    }
    assert report["stages"]["extract"]["changes"]["read"] == {"previous": 3, "current": 4, "delta": 1}
    assert report["stages"]["align"]["cache"] == {"hits": 2, "misses": 1}  # the copied cache
    assert report["fingerprints_changed"] == ["toy"]
    run_record = json.loads((moved / "metrics" / "extract.json.run.json").read_text())
    assert run_record["input_bytes"] == (moved / "data" / "reviews.jsonl").stat().st_size
    assert run_record["documents"] == 4 and set(run_record) == {
        "input_bytes",
        "documents",
        "wall_seconds",
        "cpu_seconds",
        "history",  # the copied record's run and this one (medsimp.refresh.plan fits on them)
    }
    assert [p["documents"] for p in run_record["history"]] == [3, 4]
    assert (moved / "metrics" / "notes.json").read_bytes() == notes
    assert not (tmp_path / "state-there").exists()  # every record went to the project

    # what medsimp did not write is still refused: a run record the user edited
    (moved / "metrics" / "extract.json.run.json").write_text('{"mine": 1}\n')
    write_reviews(moved, REVIEWS[:2])  # new to DVC's run cache: extract runs
    code, out = run_refresh(moved)
    assert code == EXIT_STAGE_FAILED, out
    assert "metrics/extract.json.run.json exists and was not written by medsimp" in out
    assert (moved / "metrics" / "extract.json.run.json").read_text() == '{"mine": 1}\n'


SCORE_STAGE = f"""  score:
    cmd: {sys.executable} toy_stage.py score
    deps: [toy_stage.py, out/extract]
    outs: [out/score]
    metrics: [{{metrics/score.json: {{cache: false}}}}]
"""


def _forecast(out: str, stage: str) -> tuple[float, str]:
    """The CPU seconds the dry run expects for `stage`, and its line."""
    line = next(x for x in out.splitlines() if x.startswith(f"  {stage}: "))
    found = re.search(r"(?:at most|about) ([0-9.e+]+) s CPU", line)
    assert found, line
    return float(found.group(1)), line


def test_the_dry_run_forecasts_each_stage_s_cpu_within_2x_of_the_run_that_follows(project: Path):
    """Issue 55 §3: `refresh --dry-run` says, per stage that would rerun, the documents and the
    CPU it expects from the runs measured here; each forecast is within 2x of the run that then
    happens. `score` costs a start-up and 0.4 CPU-s per review its cache does not hold: the first
    forecast has one cold run to go on (an upper bound), the next fits start-up and per-review
    cost on the runs so far."""
    with (project / "dvc.yaml").open("a") as fh:
        fh.write(SCORE_STAGE)
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "score")
    assert run_refresh(project)[0] == EXIT_OK  # cold: both reviews with a summary computed
    new = [
        {
            **NEW_REVIEW,
            "doi": f"10.1002/14651858.CD00001{i}",
            "abstract": f"Zinc {i} shortens colds. Data are few",
        }
        for i in range(3)
    ]
    seen = []
    for added in (new[:1], new[1:3]):
        write_reviews(project, [*REVIEWS, *[r for r in new if r in added or r["doi"] in seen]])
        seen += [r["doi"] for r in added]
        code, out = run_refresh(project, "--dry-run")
        assert code == EXIT_OK and "would run: extract, align, build, score" in out, out
        expected, line = _forecast(out, "score")
        assert run_refresh(project)[0] == EXIT_OK
        spent = latest(project)["stages"]["score"]
        assert spent["cache"]["misses"] == len(added)
        measured = spent["cost"]["cpu_seconds"]
        assert 0.5 <= expected / measured <= 2, (line, measured)
        if len(seen) == 1:
            assert "at most" in line and "one run gives no start-up cost" in line
        else:
            assert "fit of 2 runs here" in line and "documents" in line
    assert "  together: about " in out


def test_dry_run_and_targets(project: Path):
    code, out = run_refresh(project, "--dry-run")
    assert code == EXIT_OK and "would run: extract, align, build" in out
    assert "  extract: no record of an earlier run here" in out
    assert not (project / "reports").exists()
    code, out = run_refresh(project, "--targets", "align")
    assert code == EXIT_OK, out
    write_reviews(project, [*REVIEWS, NEW_REVIEW])
    code, out = run_refresh(project, "--dry-run")  # what each stage will cost, from its last run
    spent = latest(project)["stages"]["extract"]["cost"]
    expected, line = _forecast(out, "extract")  # one run, more documents: scaled by the work
    assert line.startswith("  extract: 4 documents, 4 to compute, about ")
    assert f"the last run here ({spent['cpu_seconds']:g} s) scaled by the work" in line
    assert spent["cpu_seconds"] < expected < 2 * spent["cpu_seconds"]
    assert "  align: no record of an earlier run here" in out  # no run record: nothing claimed
    assert "  together: about " in out
    write_reviews(project, REVIEWS)
    assert {n: s["status"] for n, s in latest(project)["stages"].items()} == {
        "extract": "ran",
        "align": "ran",
        "build": "not_run",
    }
    assert run_refresh(project, "--targets", "align")[0] == EXIT_NOTHING_TO_DO
    code, out = run_refresh(project, "--set", "align.num_shards=2", "refresh")
    assert code == 2 and "only refresh.* may be overridden" in out


def test_a_params_file_named_with_params_is_read_as_named_when_refresh_reads_it_again(project: Path):
    """Issue 35 item 9: `--params params.yaml` names the file, so the implicit ./params.yaml rule
    (refused when everyone can write it) does not apply; refresh read it a second time by that
    rule and refused the file the user had named."""
    (project / "params.yaml").chmod(0o666)
    code, out = run_refresh(project, "--dry-run")  # found implicitly: refused, as documented
    assert code == 2 and "writable by everyone" in out
    code, out = run_refresh(
        project,
        "--set",
        "refresh.report_dir=reports/refresh",
        "--params",
        "params.yaml",
        "refresh",
        "--dry-run",
    )
    assert code == EXIT_OK and "would run: extract, align, build" in out, out


def tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every path under `root` (folders too) -> sha256 of its content ("dir" for a folder)."""
    import hashlib

    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel in skip:
            continue
        out[rel] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# DVC's own status takes its repository and read/write locks here (as `dvc status` does)
DVC_LOCKS = (".dvc/tmp/lock", ".dvc/tmp/rwlock", ".dvc/tmp/rwlock.lock")


def test_refresh_outside_a_dvc_repository_is_one_line_and_writes_nothing(tmp_path: Path):
    """Issue 54: refresh created ./.dvc/tmp for its lock before finding the DVC root: in a git
    repository without DVC it set one up (and then found "nothing to do")."""
    repo = tmp_path / "gitonly"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a")
    before = tree(repo)
    for argv in (("--dry-run",), ()):
        for where in (repo, repo / "src"):
            code, out = run_refresh(where, *argv)
            line = [x for x in out.splitlines() if "DVC repository" in x]
            assert code == 2, out
            assert line == [
                f"medsimp refresh: {where} is not inside a DVC repository (no .dvc/ folder in it or "
                "above it); run refresh inside one (`dvc root` names it), or create one with `dvc init`"
            ], out
            assert "Traceback" not in out
            assert tree(repo) == before  # no .dvc/, no lock, no report
    assert not (repo / ".dvc").exists()


def test_refresh_from_a_subfolder_works_on_the_root_and_never_moves_it(built: Path):
    """Issue 54: from a monorepo subfolder refresh created `<sub>/.dvc/tmp`, which moved `dvc
    root` there. It now finds the root first (as `dvc root`), runs on it, writes its lock and
    report only inside it (the report where params.yaml says, from the root), and `--dry-run`
    writes nothing (DVC's own status locks aside)."""
    sub = built / "pkg" / "deep"
    sub.mkdir(parents=True)
    (sub / "notes.txt").write_text("mine\n")
    lock = built / ".dvc" / "tmp" / "medsimp-refresh.lock"
    lock.unlink(missing_ok=True)
    before = tree(built, DVC_LOCKS)
    code, out = run_refresh(sub, "--dry-run")
    assert code == EXIT_NOTHING_TO_DO and "nothing to do" in out, out
    assert tree(built, DVC_LOCKS) == before  # nothing written, not even refresh's lock
    write_reviews(built, [*REVIEWS, NEW_REVIEW])
    before = tree(built, DVC_LOCKS)
    code, out = run_refresh(sub, "--dry-run")
    assert code == EXIT_OK and "would run: extract, align, build" in out, out  # the root's stage names
    assert tree(built, DVC_LOCKS) == before
    write_reviews(built, REVIEWS)
    reports = built / "reports" / "refresh"
    before = tree(built, DVC_LOCKS)
    code, out = run_refresh(sub)
    assert code == EXIT_NOTHING_TO_DO, out
    after = tree(built, DVC_LOCKS)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert changed and all(
        p.startswith(("reports/refresh/", ".dvc/tmp/medsimp/")) or p == ".dvc/tmp/medsimp-refresh.lock"
        for p in changed
    ), changed  # the report, refresh's lock, and the records of what it wrote (medsimp.ownership)
    assert latest(built)["status"] == "nothing_to_do" and reports.is_dir()
    assert sorted(p.name for p in sub.iterdir()) == ["notes.txt"]  # no .dvc/, no reports/ here
    root = subprocess.run(
        [sys.executable, "-m", "dvc", "root"], cwd=sub, capture_output=True, text=True, check=True
    )
    assert (sub / root.stdout.strip()).resolve() == built.resolve()


def test_stage_failure_exit_code_and_restore(built: Path):
    project = built
    (project / "toy_stage.py").write_text(
        (project / "toy_stage.py")
        .read_text()
        .replace("def build():\n", "def build():\n    raise SystemExit(7)\n")
    )
    code, out = run_refresh(project)
    assert code == EXIT_STAGE_FAILED, out
    report = latest(project)
    assert report["status"] == "failed" and report["failed_stages"] == ["build"]
    assert report["stages"]["extract"]["status"] == "ran"  # its dep (the script) changed
    assert report["restored"] is True
    assert (project / "builders" / "toy" / "data" / "train.jsonl").exists()
    assert json.loads((project / "metrics" / "build.json").read_text()) == {"rows": 4}


def test_second_concurrent_run_gets_lock_held(project: Path):
    first = start_held_build(project)
    try:
        code, out = run_refresh(project)
        assert code == EXIT_LOCK_HELD
        assert "another refresh is running (pid" in out
    finally:
        (project / "hold-build").unlink()
    out, _ = first.communicate(timeout=60)
    assert first.returncode == EXIT_OK, out


def test_sigterm_mid_stage_restores_builder_and_next_run_resumes(built: Path, tmp_path: Path):
    project = built
    assert load_builder(project, tmp_path / "hf") == 4
    write_reviews(project, [*REVIEWS, NEW_REVIEW])
    proc = start_held_build(project)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    (project / "hold-build").unlink()
    assert proc.returncode == EXIT_STAGE_FAILED, out
    report = latest(project)
    assert report["status"] == "interrupted" and report["failed_stages"] == ["build"]
    assert report["restored"] is True
    assert load_builder(project, tmp_path / "hf") == 4  # the previous builder, loadable
    assert report["stages"]["build"]["counts"] == {"rows": 4}  # its metrics put back too
    code, out = run_refresh(project)
    assert code == EXIT_OK, out
    stages = latest(project)["stages"]
    assert [stages[n]["status"] for n in ("extract", "align", "build")] == ["skipped", "skipped", "ran"]
    assert load_builder(project, tmp_path / "hf") == 6


def test_sigkill_of_everything_mid_stage_leaves_persisted_builder_loadable(tmp_path: Path):
    project = make_project(tmp_path / "proj", persist=True)
    assert run_refresh(project)[0] == EXIT_OK
    write_reviews(project, [*REVIEWS, NEW_REVIEW])
    proc = start_held_build(project)
    stage_pgid = os.getpgid(int((project / "build.started").read_text()))
    os.killpg(stage_pgid, signal.SIGKILL)  # dvc and the stage command
    os.killpg(proc.pid, signal.SIGKILL)  # refresh itself
    proc.communicate(timeout=30)
    (project / "hold-build").unlink()
    assert load_builder(project, tmp_path / "hf") == 4
    # the orphaned DVC process (group leader) must be reaped by init before DVC's own
    # rwlock stops naming it as a holder
    deadline = time.time() + 60
    while psutil.pid_exists(stage_pgid) and time.time() < deadline:
        time.sleep(0.1)
    code, out = run_refresh(project)
    assert code == EXIT_OK, out
    assert latest(project)["stages"]["build"]["status"] == "ran"
    assert load_builder(project, tmp_path / "hf") == 6


def test_sigkill_of_refresh_alone_ends_dvc_and_its_stage(built: Path):
    """SIGKILL cannot be forwarded: before, DVC (in its own session) and the stage it ran
    kept going, orphaned. Now the group's guard ends them (issue 28, item 17)."""
    write_reviews(built, [*REVIEWS, NEW_REVIEW])
    proc = start_held_build(built)
    stage = psutil.Process(int((built / "build.started").read_text()))
    group = os.getpgid(stage.pid)
    assert group != proc.pid  # DVC's own group, which a signal to refresh's group misses
    proc.kill()
    proc.communicate(timeout=30)
    try:
        deadline = time.time() + 30
        while time.time() < deadline and stage.is_running() and stage.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.1)
        assert not stage.is_running() or stage.status() == psutil.STATUS_ZOMBIE
    finally:
        (built / "hold-build").unlink()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
