"""Refresh pieces without DVC: output parsing, count diffs, fingerprints, the lock."""
from __future__ import annotations

from pathlib import Path

import pytest

from medsimp import refresh_report as rr
from medsimp.refresh import refresh_lock
from medsimp.refresh_dvc import Dag, LockHeld, ReproParser, stages_to_run

DVC_OUTPUT = """\
Stage 'notes' didn't change, skipping
Running stage 'cochrane':
> medsimp cochrane --metrics metrics/cochrane.json
Updating lock file 'dvc.lock'

Stage 'align' is cached - skipping run, checking out outputs
Updating lock file 'dvc.lock'

Running stage 'build':
> medsimp build
ERROR: failed to reproduce 'build': failed to run: medsimp build, exited with 1
"""


def test_parser_classifies_every_stage():
    parser = ReproParser()
    for line in DVC_OUTPUT.splitlines(keepends=True):
        parser.feed(line)
    assert parser.outcome.stages == {"notes": "skipped", "cochrane": "ran", "align": "restored",
                                     "build": "failed"}
    assert not parser.outcome.lock_busy


def test_parser_stage_cut_off_mid_run_counts_as_failed():
    parser = ReproParser()
    for line in ["Running stage 'link':", "> medsimp link"]:
        parser.feed(line)
    assert parser.outcome.stages == {"link": "failed"}


def test_stages_to_run_follows_downstream_within_scope():
    dag = Dag(names=["a", "b", "c", "d"], metrics={},
              upstream={"a": set(), "b": {"a"}, "c": {"b"}, "d": set()},
              scope={"a", "b", "d"})
    assert stages_to_run(dag, {"a"}) == ["a", "b"]
    assert stages_to_run(dag, set()) == []


def test_flatten_changes_and_cache_counts():
    flat = rr.flatten_numbers({"read": 5, "ok": True, "name": "x",
                               "embed": {"cache_hits": 3, "cache_misses": 1}, "cache_hits": 2})
    assert flat == {"read": 5, "embed.cache_hits": 3, "embed.cache_misses": 1, "cache_hits": 2}
    assert rr.cache_counts(flat) == {"hits": 5, "misses": 1}
    assert rr.cache_counts({"read": 1}) is None
    changes = rr.count_changes({"read": 5, "gone": 1, "r": 0.5}, {"read": 7, "new": 2, "r": 0.75})
    assert changes == {"gone": {"previous": 1, "current": None, "delta": None},
                       "new": {"previous": None, "current": 2, "delta": None},
                       "r": {"previous": 0.5, "current": 0.75, "delta": 0.25},
                       "read": {"previous": 5, "current": 7, "delta": 2}}
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
    assert rr.fingerprint_builders(tmp_path / "absent") == {}


def test_second_lock_holder_is_refused(tmp_path: Path):
    lock = tmp_path / "refresh.lock"
    with refresh_lock(lock):
        with pytest.raises(LockHeld, match=r"another refresh is running \(pid \d+"):
            with refresh_lock(lock):
                pass
    with refresh_lock(lock):  # released
        pass


def test_write_report_keeps_latest_and_prunes(tmp_path: Path):
    report = {"status": "nothing_to_do", "exit_code": 3, "started_at": "s", "finished_at": "f",
              "duration_s": 1.0, "git": {"revision": None, "dirty": None}, "params_hash": "h",
              "summary": "2 skipped", "cache": {"hits": 0, "misses": 0}, "stages": {
                  "notes": {"status": "skipped", "counts": {"read": 1}, "changes": {}}},
              "fingerprints": {}, "fingerprints_changed": []}
    for stamp in ("20260101T000000Z", "20260101T000001Z", "20260101T000002Z"):
        rr.write_report(tmp_path, report, stamp, keep=2)
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [
        "20260101T000001Z.json", "20260101T000002Z.json", "latest.json"]
    assert rr.load_previous(tmp_path)["status"] == "nothing_to_do"
    md = (tmp_path / "latest.md").read_text()
    assert md.startswith("# medsimp refresh: nothing to do (exit 3)")
    assert "- up to date: notes" in md and "| stage |" not in md
