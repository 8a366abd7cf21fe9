"""Refresh pieces without DVC: stage classification, count diffs, fingerprints, the lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from medsimp.refresh import report as rr
from medsimp.refresh.dvc import Dag, LockHeld, Snapshot, classify, stages_to_run
from medsimp.refresh.run import refresh_lock


def _entry(cmd: str, dep: str, out: str) -> dict:
    return {"cmd": cmd, "deps": [{"path": "in", "md5": dep}], "outs": [{"path": "o", "md5": out}]}


def test_classify_reads_lock_run_cache_and_status():
    """notes up to date; cochrane's input changed and it ran; align got a run-cache hit;
    build failed (still changed after repro) so evaluate, downstream of it, never ran."""
    dag = Dag(
        names=["notes", "cochrane", "align", "build", "evaluate", "other"],
        metrics={},
        upstream={
            "notes": set(),
            "cochrane": set(),
            "align": {"cochrane"},
            "build": {"align"},
            "evaluate": {"build"},
            "other": set(),
        },
        scope={"notes", "cochrane", "align", "build", "evaluate"},
    )
    before = Snapshot(
        lock={
            "notes": _entry("n", "1", "1"),
            "cochrane": _entry("c", "1", "1"),
            "align": _entry("a", "1", "1"),
            "build": _entry("b", "1", "1"),
        },
        run_cache={"runs/x": _entry("a", "2", "2")},
    )
    after = Snapshot(
        lock={**before.lock, "cochrane": _entry("c", "2", "2"), "align": _entry("a", "2", "2")},
        run_cache={**before.run_cache, "runs/y": _entry("c", "2", "2")},
    )
    will = stages_to_run(dag, {"cochrane"})
    assert will == ["cochrane", "align", "build", "evaluate"]
    assert classify(dag, will, before, after, still_changed={"build", "evaluate"}) == {
        "notes": "skipped",
        "cochrane": "ran",
        "align": "restored",
        "build": "failed",
        "evaluate": "not_run",
        "other": "not_run",
    }


def test_classify_downstream_with_identical_inputs_is_skipped():
    dag = Dag(names=["a", "b"], metrics={}, upstream={"a": set(), "b": {"a"}}, scope={"a", "b"})
    before = Snapshot(lock={"a": _entry("a", "1", "1"), "b": _entry("b", "1", "1")}, run_cache={})
    after = Snapshot(lock={**before.lock, "a": _entry("a", "2", "1")}, run_cache={})
    assert classify(dag, ["a", "b"], before, after, set()) == {"a": "ran", "b": "skipped"}


def test_stages_to_run_follows_downstream_within_scope():
    dag = Dag(
        names=["a", "b", "c", "d"],
        metrics={},
        upstream={"a": set(), "b": {"a"}, "c": {"b"}, "d": set()},
        scope={"a", "b", "d"},
    )
    assert stages_to_run(dag, {"a"}) == ["a", "b"]
    assert stages_to_run(dag, set()) == []


def test_flatten_changes_and_cache_counts():
    flat = rr.flatten_numbers(
        {"read": 5, "ok": True, "name": "x", "embed": {"cache_hits": 3, "cache_misses": 1}, "cache_hits": 2}
    )
    assert flat == {"read": 5, "embed.cache_hits": 3, "embed.cache_misses": 1, "cache_hits": 2}
    assert rr.cache_counts(flat) == {"hits": 5, "misses": 1}
    assert rr.cache_counts({"read": 1}) is None
    changes = rr.count_changes({"read": 5, "gone": 1, "r": 0.5}, {"read": 7, "new": 2, "r": 0.75})
    assert changes == {
        "gone": {"previous": 1, "current": None, "delta": None},
        "new": {"previous": None, "current": 2, "delta": None},
        "r": {"previous": 0.5, "current": 0.75, "delta": 0.25},
        "read": {"previous": 5, "current": 7, "delta": 2},
    }
    assert rr.count_changes(None, {"read": 7}) == {}  # no previous run: nothing to compare


def test_fingerprints_ignore_card_and_temp_dirs(tmp_path: Path):
    builder = tmp_path / "builders" / "toy"
    (builder / "data").mkdir(parents=True)
    (builder / "data" / "train.parquet").write_bytes(b"rows")
    (builder / "README.md").write_text("card, revision abc")
    before = rr.fingerprint_builders(tmp_path / "builders")
    (builder / "README.md").write_text("card, revision def")
    (tmp_path / "builders" / ".toy.tmp-1").mkdir()
    assert rr.fingerprint_builders(tmp_path / "builders") == before
    assert before["toy"]["files"] == 1 and before["toy"]["bytes"] == 4
    (builder / "data" / "train.parquet").write_bytes(b"rows+1")
    after = rr.fingerprint_builders(tmp_path / "builders")
    assert rr.fingerprint_changes({"fingerprints": before}, after) == ["toy"]
    assert rr.fingerprint_changes(None, after) is None  # a first report compares with nothing
    assert rr.fingerprint_builders(tmp_path / "absent") == {}


def test_a_first_report_marks_no_builder_changed():
    report = {
        "status": "nothing_to_do",
        "exit_code": 3,
        "started_at": "s",
        "finished_at": "f",
        "duration_s": 1.0,
        "git": {"revision": None, "dirty": None},
        "params_hash": "h",
        "summary": "1 skipped",
        "cache": {"hits": 0, "misses": 0},
        "stages": {},
        "fingerprints": {"toy": {"files": 1, "bytes": 4, "sha256": "0" * 64}},
        "fingerprints_changed": None,
    }
    md = rr.render_markdown(report)
    assert "| toy | 1 | 4 | 0000000000000000 | first report |" in md and "| yes |" not in md


def test_second_lock_holder_is_refused(tmp_path: Path):
    lock = tmp_path / "refresh.lock"
    with refresh_lock(lock):
        with pytest.raises(LockHeld, match=r"another refresh is running \(pid \d+"):
            with refresh_lock(lock):
                pass
    with refresh_lock(lock):  # released
        pass


def test_write_report_keeps_latest_and_prunes(tmp_path: Path):
    report = {
        "status": "nothing_to_do",
        "exit_code": 3,
        "started_at": "s",
        "finished_at": "f",
        "duration_s": 1.0,
        "git": {"revision": None, "dirty": None},
        "params_hash": "h",
        "summary": "2 skipped",
        "cache": {"hits": 0, "misses": 0},
        "stages": {"notes": {"status": "skipped", "counts": {"read": 1}, "changes": {}}},
        "fingerprints": {},
        "fingerprints_changed": [],
    }
    for stamp in ("20260101T000000Z", "20260101T000001Z", "20260101T000002Z"):
        rr.write_report(tmp_path, report, stamp, keep=2)
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [
        "20260101T000001Z.json",
        "20260101T000002Z.json",
        "latest.json",
    ]
    assert rr.load_previous(tmp_path)["status"] == "nothing_to_do"
    md = (tmp_path / "latest.md").read_text()
    assert md.startswith("# medsimp refresh: nothing to do (exit 3)")
    assert "- up to date: notes" in md and "| stage |" not in md


def test_the_report_says_which_params_each_stage_ran_with(tmp_path: Path):
    """Issue 54: the report recorded the hash of params.yaml as read at the start, though a
    stage that ran after the file changed used other params. Each stage's run record says
    what it ran with; the top-level hash is null when they differ from the start's."""
    import json

    from medsimp.refresh.run import ran_with

    metrics = tmp_path / "metrics"
    metrics.mkdir()
    for name, used in (("a", "1111"), ("b", "2222")):
        (metrics / f"{name}.json").write_text('{"read": 1}')
        (metrics / f"{name}.json.run.json").write_text(json.dumps({"params_hash": used}))
    stages = rr.stage_entries(
        tmp_path,
        {"a": "ran", "b": "ran", "c": "skipped"},
        {"a": ["metrics/a.json"], "b": ["metrics/b.json"], "c": []},
        None,
    )
    assert (stages["a"]["params_hash"], stages["b"]["params_hash"]) == ("1111", "2222")
    assert "params_hash" not in stages["c"]
    assert ran_with("1111", stages) == {
        "params_hash": None,
        "params_changed_during_run": {"at_start": "1111", "stages": {"a": "1111", "b": "2222"}},
    }
    same = {k: v for k, v in stages.items() if k != "b"}
    assert ran_with("1111", same) == {"params_hash": "1111"}
    assert ran_with("9999", {"c": stages["c"]}) == {"params_hash": "9999"}  # none ran: the start's


def test_a_stage_records_the_hash_of_the_params_it_ran_with(tmp_path: Path):
    import json

    from medsimp.cli import main
    from medsimp.config import load_params, params_hash

    root = Path(__file__).resolve().parents[1]
    params = tmp_path / "params.yaml"
    params.write_text(
        (root / "params.yaml").read_text(encoding="utf-8").replace("data/sample/", f"{root}/data/sample/")
    )
    metrics = tmp_path / "m.json"
    argv = ["--params", str(params), "--set", "filter.threshold=0.4", "cochrane"]
    assert main([*argv, "--output", str(tmp_path / "out"), "--metrics", str(metrics)]) == 0
    run = json.loads(Path(str(metrics) + ".run.json").read_text())
    assert run["params_hash"] == params_hash(load_params(params, ["filter.threshold=0.4"]))
    assert run["params_hash"] != params_hash(load_params(params, []))
