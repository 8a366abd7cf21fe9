"""What a run prints: one announce line, the summary table, warnings that matter in plain
words, and no library chatter (Beam worker start-up, apitools) unless -v."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from medsimp.stats import summary_notes

ROOT = Path(__file__).resolve().parents[1]


def test_notes_name_dead_letters():
    assert summary_notes({"read": 3, "kept": 3, "rejected": 0}) == []
    flat = summary_notes({"rejected": 2, "rejected_by": {"bad_json": 1, "missing_doi": 1}})
    assert "2 record(s)" in flat[0] and "bad_json 1, missing_doi 1" in flat[0]
    assert summary_notes({}, ["a fallback encoder"]) == ["a fallback encoder"]


def test_fallback_encoder_is_counted_per_language_pair():
    from alignment.encoders import PairEncoders
    from medsimp.params_schema import E5Spec, UseSpec

    encoders = PairEncoders([UseSpec(languages=["en", "es"]), E5Spec()])
    encoders.built = {0: object(), 1: object()}  # built on first use; not needed here
    encoders.for_pair("en", "es")
    encoders.for_pair("en", "fa")
    encoders.for_pair("en", "fa")
    assert encoders.fallbacks == {"en-fa": 2}


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "medsimp.cli",
            "--params",
            str(ROOT / "params.yaml"),
            *extra,
            "cochrane",
            "--output",
            str(tmp_path / "o"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_a_beam_stage_prints_only_what_it_did(tmp_path):
    done = _run(tmp_path, "--set", "beam.num_workers=2")  # worker processes: their start-up chatter
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("medsimp cochrane: ")
    for chatter in ("apitools", "semi_persistent", "Logging handler", "WARNING", "Traceback"):
        assert chatter not in done.stderr
    assert "note: 5 record(s) could not be used" in done.stderr
    assert done.stderr.count("note:") == 1  # said once
    assert len(lines) < 40
