"""Progress a person can read for a long Beam job (issue 53 item 4): documents done / total,
rate and time left, on a terminal as a bar and in a log as a line a minute, counted by the
workers beside Beam's counters; the output is the same with or without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medsimp import progress
from medsimp.cli import main

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "data" / "sample" / "align_gold.jsonl"


def test_the_line_says_done_total_rate_and_time_left():
    assert progress.describe(0, 100, 5.0) == "0 of 100 documents"
    assert progress.describe(40, 100, 120.0) == "40 of 100 documents, 0.33/s, about 3 min left"
    assert progress.describe(100, 100, 50.0) == "100 of 100 documents, 2/s"


def test_workers_sinks_add_up_in_the_launchers_log_and_the_folder_goes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "WRITE_EVERY", 0.0)
    monkeypatch.setattr(progress, "POLL_EVERY", 0.05)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    folder = str(tmp_path / "out" / ".progress")
    import time

    with progress.watch(folder, 10, "align corpus"):
        sinks = [progress.ProgressSink(folder) for _ in range(2)]  # two workers
        for sink in sinks:
            for _ in range(3):
                sink.tick()
        deadline = time.monotonic() + 10
        while "6 of 10 documents" not in capsys.readouterr().err and time.monotonic() < deadline:
            time.sleep(0.05)
        assert time.monotonic() < deadline, "the launcher never logged the workers' 6 documents"
    assert not (tmp_path / "out" / ".progress").exists()


@pytest.mark.slow
def test_align_corpus_shows_progress_in_a_log_and_writes_the_same_output(tmp_path, monkeypatch, capsys):
    fast = ["--set", "align.crf.encoder={kind: e5}", "--set", "align.crf.epochs=2"]
    fast += ["--set", "align.self_training.enabled=false", "--set", f"cache.dir={tmp_path / 'cache'}"]
    assert main([*fast, "cochrane", "--output", str(tmp_path / "cochrane")]) == 0
    model = tmp_path / "model"
    assert main([*fast, "align", "train", "--gold", str(GOLD), "--output", str(model)]) == 0
    corpus = ["align", "corpus", "--input", str(tmp_path / "cochrane"), "--model", str(model)]
    assert main([*fast, *corpus, "--output", str(tmp_path / "quiet")]) == 0
    capsys.readouterr()
    monkeypatch.setattr(progress, "WRITE_EVERY", 0.0)
    monkeypatch.setattr(progress, "POLL_EVERY", 0.01)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    assert main([*fast, *corpus, "--output", str(tmp_path / "shown")]) == 0
    err = capsys.readouterr().err
    documents = json.loads((tmp_path / "shown" / "stats.json").read_text())["read"]
    assert f"align corpus: {documents} of {documents} documents" in err or f"of {documents} documents" in err
    quiet = sorted(p.relative_to(tmp_path / "quiet") for p in (tmp_path / "quiet").rglob("*"))
    shown = sorted(p.relative_to(tmp_path / "shown") for p in (tmp_path / "shown").rglob("*"))
    assert quiet == shown and not any(".progress" in str(p) for p in shown)
    for rel in shown:
        if (tmp_path / "quiet" / rel).is_file() and rel.name != ".medsimp-output":
            assert (tmp_path / "quiet" / rel).read_bytes() == (tmp_path / "shown" / rel).read_bytes(), rel


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_align_train_shows_each_step_in_a_log_and_trains_the_same_model(tmp_path, monkeypatch, capsys):
    # issue 53 item 4: `align train` (12 min on 480 real reviews) printed nothing until it ended
    fast = ["--set", "align.crf.encoder={kind: e5}", "--set", "align.crf.epochs=2"]
    fast += ["--set", "align.self_training.enabled=false", "--set", f"cache.dir={tmp_path / 'cache'}"]
    train = ["align", "train", "--gold", str(GOLD)]
    assert main([*fast, *train, "--output", str(tmp_path / "quiet")]) == 0
    assert "aligner" not in capsys.readouterr().err  # a short step prints no progress
    monkeypatch.setattr(progress, "POLL_EVERY", 0.001)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    assert main([*fast, *train, "--output", str(tmp_path / "shown")]) == 0
    err = capsys.readouterr().err
    documents = json.loads((tmp_path / "shown" / "stats.json").read_text())["documents"]
    assert any(
        line.startswith("aligner features: ") and line.find(f" of {documents} documents") > 0
        for line in err.splitlines()
    )
    assert "aligner training: " in err and " of 4 epochs" in err
    for name in ("model.pt", "stats.json"):
        assert (tmp_path / "quiet" / name).read_bytes() == (tmp_path / "shown" / name).read_bytes(), name


def test_a_loop_in_this_process_is_counted_once_a_minute_in_a_log(monkeypatch, capsys):
    import time

    monkeypatch.setattr(progress, "POLL_EVERY", 0.01)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    with progress.counting("self-training: labelling reviews", 3) as tick:
        tick()
        tick()
        deadline = time.monotonic() + 10
        while "2 of 3 documents" not in capsys.readouterr().err and time.monotonic() < deadline:
            time.sleep(0.02)
        assert time.monotonic() < deadline, "the loop's 2 documents were never logged"
