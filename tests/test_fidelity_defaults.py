"""Defaults follow the papers (issue 19 item 10): overlap filter "exceeds" 0.5 (Joseph et al.
2023), Vecalign's published settings (Thompson & Koehn 2019), PLABA 70/15/15 by question
(Attal et al. 2023); our variants stay available as named options."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from medsimp.alignment import vecalign
from medsimp.alignment.overlap import filter_row, overlap_r, passes
from medsimp.builders.common import exact_split
from medsimp.builders.plaba import DEFAULT_SPLIT, plaba_split

ROOT = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))


def test_overlap_filter_keeps_only_r_exceeding_the_threshold():
    # hand case: Ls = {fever, cough}, Lc = {fever} -> r = 1/2, exactly the threshold
    row = {
        "language": "en",
        "complex_text": "Fever.",
        "simple_text": "Fever cough.",
        "pivot_ids": [],
        "pivot_text": "",
    }
    assert overlap_r("Fever.", "Fever cough.") == 0.5
    assert filter_row(row, 0.5)["keep"] is False  # paper: r must exceed 0.5
    assert filter_row(row, 0.5, "ge")["keep"] is True  # option: the old r >= 0.5
    assert passes(0.51, 0.5) and not passes(0.5, 0.5)
    with pytest.raises(ValueError):
        passes(0.5, 0.5, "gte")
    assert PARAMS["filter"]["comparison"] == "gt" and PARAMS["filter"]["threshold"] == 0.5


def test_vecalign_defaults_are_thompsons_published_ones():
    published = {
        "alignment_max_size": 4,
        "del_percentile_frac": 0.2,
        "del_percentile_of": "random",
        "center": False,
        "length_weight": 0.0,
        "number_weight": 0.0,
    }
    p = vecalign.resolve(None)
    assert {k: p[k] for k in published} == published
    v = PARAMS["align"]["vecalign"]
    assert {k: v[k] for k in published} == published and v["preset"] is None
    assert {k: vecalign.resolve(v)[k] for k in published} == published
    ours = vecalign.resolve({**v, "preset": "medsimp"})
    assert (
        ours["alignment_max_size"],
        ours["del_percentile_frac"],
        ours["del_percentile_of"],
        ours["center"],
        ours["length_weight"],
        ours["number_weight"],
    ) == (5, 0.1, "unmatched", True, 0.6, 0.3)
    with pytest.raises(ValueError, match="preset"):
        vecalign.resolve({"preset": "best"})


def test_plaba_split_is_70_15_15_by_question():
    assert DEFAULT_SPLIT == {"seed": 13, "validation": 0.15, "test": 0.15, "method": "exact"}
    assert PARAMS["build"]["plaba"]["split"]["validation"] == 0.15
    assert PARAMS["build"]["plaba"]["split"]["test"] == 0.15
    questions = {f"q{i}" for i in range(20)}
    split = plaba_split(questions, DEFAULT_SPLIT)
    counts = {s: sum(v == s for v in split.values()) for s in ("train", "validation", "test")}
    assert counts == {"train": 14, "validation": 3, "test": 3}  # 70/15/15 of 20
    # 75 questions (PLABA's size): 11.25 -> 11 test, 11 validation, 53 train
    big = exact_split({f"q{i}" for i in range(75)}, 0.15, 0.15, 13)
    assert sorted(big.values()).count("test") == 11 and sorted(big.values()).count("train") == 53
    hashed = plaba_split(questions, {**DEFAULT_SPLIT, "method": "hash"})
    assert set(hashed) == questions  # the refresh-stable option still works
