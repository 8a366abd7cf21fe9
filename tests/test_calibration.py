"""Issue 37 item 3: the aligner's probabilities calibrated on development gold, and the precision
they estimate for a corpus, in the data report and on the card."""

from __future__ import annotations

import json

import pytest

from alignment.calibration import Calibration, describe, heldout, model_digest, row_correctness
from medsimp import resources


def test_isotonic_fit_is_monotone_clipped_and_estimates_the_mean_calibrated_correctness():
    # overconfident scores: rows at 0.9 are right half the time, rows at 0.99 always
    cal = Calibration.fit(
        [0.2, 0.3, 0.9, 0.9, 0.99, 0.99], [0.0, 0.0, 1.0, 0.0, 1.0, 1.0], "hand gold", "union"
    )
    assert list(cal.precision) == sorted(cal.precision) and cal.rows == 6
    assert cal.probability([0.25, 0.9, 0.99]).tolist() == [0.0, 0.5, 1.0]
    assert cal.probability([0.0, 1.0]).tolist() == [0.0, 1.0]  # clipped beyond the fitted range
    est = cal.estimate([0.9, 0.99])
    assert est is not None
    assert est["precision"] == pytest.approx(0.75) and est["mean_score"] == pytest.approx(0.945)
    assert est["rows"] == 2 and cal.estimate([]) is None
    assert describe(est).startswith("expected row precision 0.750 (the mean share of a row's pairs")
    assert Calibration.from_json(cal.as_json()) == cal


GOOD = {"gold": "g", "rows": 2, "scores": [0.1, 0.9], "precision": [0.2, 0.8], "merge": "union"}


@pytest.mark.parametrize(
    "change, why",
    [
        ({"precision": [0.8, 0.2]}, "never decreases"),
        ({"scores": [0.5, 0.5]}, "scores increase"),
        ({"scores": "19"}, "two non-empty lists"),
        ({"scores": [0.1, float("nan")]}, "numbers in \\[0, 1\\]"),
        ({"precision": [0.2, 1.5]}, "numbers in \\[0, 1\\]"),
        ({"rows": True}, "positive count"),
        ({"rows": 0}, "positive count"),
        ({"merge": "both"}, "its merge"),
    ],
)
def test_a_malformed_calibration_is_refused_with_the_reason(change, why):
    assert Calibration.from_json(GOOD).merge == "union"
    with pytest.raises(ValueError, match=why):
        Calibration.from_json({**GOOD, **change})
    with pytest.raises(ValueError, match="one correctness value"):
        Calibration.fit([0.5], [1.0, 0.0], "g", "union")


def test_a_malformed_packaged_entry_is_one_error_naming_it(tmp_path, monkeypatch):
    from medsimp.errors import MedsimpError

    bad = tmp_path / "aligner_heldout.json"
    bad.write_text(
        json.dumps({"0123456789abcdef": {"precision": 0.5, "recall": 0.5, "f1": 0.5, "calibration": [1]}})
    )
    monkeypatch.setattr(resources, "path", lambda name: bad)
    with pytest.raises(
        MedsimpError, match="aligner_heldout.json, model '0123456789abcdef': a calibration is a mapping"
    ):
        heldout("m sha256:0123456789abcdef")
    assert heldout("m sha256:fedcba9876543210") is None  # another model: not measured, no error


def test_row_correctness_is_the_share_of_a_rows_predicted_pairs_in_the_gold():
    predicted = {(0, 0): 0.9, (1, 1): 0.6, (2, 1): 0.8}
    blocks = [((0,), (0,)), ((1, 2), (1,)), ((3,), ())]  # a 1-1, an N-1 and a deletion
    rows = row_correctness(predicted, blocks, {(0, 0), (2, 1)})
    assert rows == [(0.9, 1.0), (pytest.approx(0.7), 0.5)]


def test_the_packaged_measurements_are_found_by_the_models_content_hash_only():
    known = json.loads(resources.path("aligner_heldout.json").read_text(encoding="utf-8"))
    digest = next(k for k in known if not k.startswith("_"))
    facts = heldout(f"out/models/crf_aligner sha256:{digest}")
    assert facts is not None and facts["f1"] == known[digest]["f1"]
    cal = facts["calibration"]  # the DAG's aligner is calibrated (scripts/calibrate_aligner.py)
    assert isinstance(cal, Calibration) and "validation reviews" in cal.gold
    assert "22" not in cal.gold and cal.merge == "union"  # never the MC-CLEAN test reviews
    assert heldout("elsewhere sha256:0123456789abcdef") is None
    assert heldout("x sha256:_about") is None and model_digest("m sha256:missing") == ""


def test_the_data_report_estimates_precision_over_english_crf_rows_only():
    from medsimp.report.data import config_stats

    cal = Calibration.fit([0.2, 0.9, 0.99], [0.0, 0.5, 1.0], "hand gold", "union")
    rows = [
        {"complex_text": "A b c.", "simple_text": "A b.", "method": "crf", "crf_score": 0.9},
        {"complex_text": "D e f.", "simple_text": "D e.", "method": "crf", "crf_score": 0.99},
        {"complex_text": "G h.", "simple_text": "G h.", "method": "gold", "crf_score": None},
        {"complex_text": "I j.", "simple_text": "Ij.", "method": "crf+vecalign", "crf_score": 0.2},
    ]
    st = config_stats(rows, None, 0.5, ["en"], 3, calibration=cal)
    assert st["precision"]["rows"] == 2 and st["precision"]["precision"] == pytest.approx(0.75)
    assert "hand gold" in st["precision"]["text"]
    assert config_stats(rows, None, 0.5, ["en"], 3)["precision"] is None  # no calibration: no number
