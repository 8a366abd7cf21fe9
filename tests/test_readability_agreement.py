"""One readability module: the same text gets the same FKGL through every command that
reports one (link / stats, evaluate, simplify)."""

from __future__ import annotations

import json

import pytest

from medsimp.cli import main
from medsimp.selfcorrect.runner import readability
from medsimp.text.readability import document_scores
from pipelines.jobs.link import compute

LINES = [
    "The patient was admitted with community-acquired pneumonia.",
    "Blood cultures grew Streptococcus pneumoniae after 2 days.",
    "She improved on antibiotics and went home.",
]


class _NoLinker:
    """link's compute() with no concept vocabulary for the language: readability only."""

    def has_language(self, language: str) -> bool:
        return False


@pytest.fixture(scope="module")
def expected() -> float:
    value = document_scores(LINES, "en", ["en"])["fkgl"]
    assert value is not None and 5 < value < 20  # a real grade, not a default
    return value


def test_link_and_stats_report_the_toolkit_fkgl(expected):
    assert compute(_NoLinker(), LINES, "en", ["en"])["document"]["fkgl"] == expected


def test_simplify_reports_the_toolkit_fkgl(expected):
    assert readability(" ".join(LINES))["fkgl"] == expected


@pytest.mark.slow  # evaluate scores every default metric, METEOR (Java) included
def test_evaluate_reports_the_toolkit_fkgl(expected, tmp_path):
    hyp, ref, out = tmp_path / "hyp.txt", tmp_path / "ref.txt", tmp_path / "scores.json"
    hyp.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    ref.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    assert main(["evaluate", "files", "--hyp", str(hyp), "--ref", str(ref), "--json", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["scores"]["fkgl"] == pytest.approx(expected, abs=1e-9)
