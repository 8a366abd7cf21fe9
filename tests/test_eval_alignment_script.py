"""scripts/eval_alignment.py's real-data helpers on hand-written fixtures (no ../shared)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "scripts" / "eval_alignment.py"


@pytest.fixture(scope="module")
def ev():
    spec = importlib.util.spec_from_file_location("eval_alignment", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cochrane_gold_places_released_pairs_in_their_documents(ev, tmp_path):
    """Pairs are located by DOI in the line holding their sentences; a pair whose abstract
    sentence is outside the document (Methods) is counted, not kept."""
    (tmp_path / "test.source").write_text(
        "Other review. Nothing here.\n"
        "We included 14 trials with 2165 women. Pain fell with the drug. Harms were rare.\n",
        encoding="utf-8",
    )
    (tmp_path / "test.target").write_text(
        "Other summary.\nWe found 14 studies. The drug helped with pain. The search is up to date.\n",
        encoding="utf-8",
    )
    rows = [
        {
            "doi": "10.1/CD1",
            "input": "We included 14 trials with 2165 women.",
            "gold": "We found 14 studies.",
        },
        {"doi": "10.1/CD1", "input": "Pain fell with the drug.", "gold": "The drug helped with pain."},
        {"doi": "10.1/CD1", "input": "We searched in May.", "gold": "The search is up to date."},
    ]
    (tmp_path / "pairs.json").write_text(json.dumps(rows), encoding="utf-8")
    docs, info = ev.cochrane_gold(tmp_path / "pairs.json", tmp_path)
    assert len(docs) == 1 and docs[0].doc_id == "10.1/CD1"
    assert docs[0].complex[0] == "We included 14 trials with 2165 women." and len(docs[0].simple) == 3
    assert docs[0].pairs == {(0, 0), (1, 1)}
    assert info["complex_not_in_document"] == 1 and info["gold_pairs_in_documents"] == 2


def test_overlap_drop_counts_the_paraphrase_of_issue_29(ev):
    pairs = [
        (
            "Fourteen RCTs were included (2165 women).",
            "We found 14 randomised controlled trials with 2165 participants.",
        ),
        ("Pain was reduced with the drug.", "Pain was reduced with the drug."),
    ]
    out = ev.overlap_drop(pairs, 0.5, "gt")
    assert out["gold_pairs"] == 2 and out["dropped"] == 1 and out["dropped_fraction"] == 0.5
