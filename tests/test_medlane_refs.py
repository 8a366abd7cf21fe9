"""MedLane compat mode's reference preparation (issue 27): by default as the authors' released
evaluation run (cscyuge/medlane `Bert/tmp/ref*.txt`: `nltk.word_tokenize` of 2021), with
machinelearning4health/MedLane's `bleu_eval_new.py` (BERT basic tokens) as the named option.
Hand-written, non-MIMIC lines, one per rule; scripts/eval_medlane_compat.py checks the full
released file line for line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from medsimp.metrics import ScoringOptions
from medsimp.metrics import scoring as S
from medsimp.metrics.bleu import coco_bleu_n
from medsimp.params_schema import Evaluate
from medsimp.text.medlane_refs import PreparationError, obtain_line, reference_tokens

ROOT = Path(__file__).resolve().parents[1]

# raw reference (as the authors' reader hands it: lowercased, prefix cut) ->
# (released tokens, bleu_eval_new tokens)
CASES = {
    "possessive 's stays whole": (
        "the doctor's note was short .",
        "the doctor 's note was short .",
        "the doctor ' s note was short .",
    ),
    "s/p stays one token, so its annotation is expanded": (
        "he is s/p[status post] knee surgery .",
        "he is status post knee surgery .",
        "he is s / p knee surgery .",
    ),
    "year-old stays whole": (
        "a 40 year-old man came in .",
        "a 40 year-old man came in .",
        "a 40 year - old man came in .",
    ),
    "an opening quote before a word of several letters stays on it (NLTK before PR #3687)": (
        "she took 'water pills' daily .",
        "she took 'water pills ' daily .",
        "she took ' water pills ' daily .",
    ),
    "an opening quote before a one-letter word is split off": (
        "grade 'a stenosis .",
        "grade ' a stenosis .",
        "grade ' a stenosis .",
    ),
    "punkt ends a sentence at a mid-line period of a plain word": (
        "she felt better. the fever went down .",
        "she felt better . the fever went down .",
        "she felt better . the fever went down .",
    ),
    "punkt keeps a known abbreviation's period (dr.)": (
        "seen by dr. jones today .",
        "seen by dr. jones today .",
        "seen by dr . jones today .",
    ),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_preparation_rule(rule):
    raw, released, bleu_eval_new = CASES[rule]
    assert " ".join(reference_tokens(raw)[0]) == released
    assert " ".join(reference_tokens(raw, "bleu_eval_new")[0]) == bleu_eval_new
    # the scorer's entry point follows the released run by default (old code: BERT tokens)
    assert S.medlane_reference(raw)[0] == released
    assert S.medlane_reference(raw, "bleu_eval_new")[0] == bleu_eval_new


def test_annotations_and_the_authors_line_format():
    tokens, cudic = reference_tokens("PT[patient] had an MI[heart attack] , pt is stable .")
    assert cudic == {"pt": "patient", "mi": "heart attack"}  # lowercased as the authors' file is
    assert tokens == ["patient", "had", "an", "heart attack", ",", "patient", "is", "stable", "."]
    # their ref0..3.txt lines: every token followed by one space
    assert obtain_line(tokens) == "patient had an heart attack , patient is stable . "
    assert obtain_line([]) == ""
    with pytest.raises(PreparationError):
        reference_tokens("x", "moses")


def test_a_released_reference_scored_as_the_hypothesis_gives_bleu_one():
    raws = [CASES[r][0] for r in sorted(CASES)]
    items = [S.EvalItem(None, [raw, raw.replace(" .", " !")]) for raw in raws]
    hyps = [obtain_line(reference_tokens(raw)[0]) for raw in raws]  # the released ref0 lines
    got = S.score("medlane", hyps, items, set(), ["medlane_bleu"], ScoringOptions(meteor=False))
    assert [got[f"bleu_{n}"] for n in range(1, 5)] == pytest.approx([1.0] * 4)
    options = ScoringOptions(meteor=False, medlane_references="bleu_eval_new")
    old = S.score("medlane", hyps, items, set(), ["medlane_bleu"], options)
    assert old["bleu_4"] < 0.95  # the other preparation does not reproduce those lines
    assert coco_bleu_n(hyps, [[h.strip()] for h in hyps])[3] == pytest.approx(1.0)


def test_the_params_value_the_user_gets_is_the_released_run():
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert params["evaluate"]["medlane_references"] == "released"
    assert Evaluate().medlane_references == "released"


@pytest.mark.parametrize(
    "line",
    ["pt with HTN[] on admission", "pt with HTN[ ] on admission", "pt with HTN[hypertension] on [admission]"],
)
def test_the_reader_and_the_scorer_read_one_annotation_format_alike(line):
    # issue 56: two regexes parsed `abbr[full]`; for `HTN[ ]` and `HTN[]` the reader found no
    # term and the scorer found one, with an empty expansion that deleted the abbreviation
    from pipelines.sources.medlane import expand_terms, find_terms

    reader = [(t["abbreviation"].lower(), t["expansion"].lower()) for t in find_terms(line)]
    assert S.annotated_terms(line) == reader
    assert S.expand(line) == expand_terms(line)
    if "hypertension" in line:
        assert reader == [("htn", "hypertension")]
        assert S.expand(line) == "pt with hypertension on [admission]"
    else:
        assert reader == [] and S.expand(line) == line  # an empty bracket annotates nothing
