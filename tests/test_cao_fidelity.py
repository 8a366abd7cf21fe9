"""Cao et al. (2020) as the paper does it (issue 27 item 5): fastText style classifiers in both
directions (§4.3) and Table 3's masked edit distance between the parallel gold sentences (§3.2)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_style_transfer_measures import EXPERT, LAYMAN, ROOT, UMLS  # the same small style sets

from medsimp.cli import main
from medsimp.metrics.scoring import tokenize
from medsimp.metrics.style import (
    MASK,
    STYLE_TARGET,
    FastTextStyle,
    gold_masked_edit_distance,
    masked_chars,
    style_accuracy,
    train_style_classifier,
)

LAYMAN_OUT = ["you may feel tired and short of breath", "your doctor will give you medicine"]
EXPERT_OUT = ["patients present with tachycardia", "administer intravenous antibiotics"]


def _rows() -> tuple[list[str], list[int]]:
    return (EXPERT + LAYMAN) * 10, ([0] * 4 + [1] * 4) * 10


def test_default_style_classifier_is_fasttext_and_scores_both_directions():
    texts, labels = _rows()
    classifier = train_style_classifier(texts, labels)
    assert isinstance(classifier, FastTextStyle)
    assert classifier.predict(LAYMAN_OUT + EXPERT_OUT) == [1, 1, 0, 0]
    # E2L outputs should be layman, L2E outputs expert
    assert STYLE_TARGET == {"e2l": 1, "l2e": 0}
    assert style_accuracy(classifier, LAYMAN_OUT, STYLE_TARGET["e2l"]) == 1.0
    assert style_accuracy(classifier, LAYMAN_OUT, STYLE_TARGET["l2e"]) == 0.0
    assert style_accuracy(classifier, EXPERT_OUT + LAYMAN_OUT[:1], STYLE_TARGET["l2e"]) == pytest.approx(
        2 / 3
    )
    # one thread, seed 13: retraining on the same rows gives the same probabilities
    again = train_style_classifier(texts, labels)
    probe = LAYMAN_OUT + EXPERT_OUT
    assert [list(p) for p in again.model.predict(probe)[1]] == [
        list(p) for p in classifier.model.predict(probe)[1]
    ]
    with pytest.raises(ValueError, match="fasttext or tfidf_logreg"):
        train_style_classifier(texts, labels, "svm")


def test_gold_masked_edit_distance_is_character_level_between_source_and_reference():
    source = "Many cause dyspnea."
    reference = "Many cause shortness of breath."
    assert masked_chars(source, [(11, 18)]) == [*"Many cause ", MASK, "."]
    spans = {source: [(11, 18)], reference: [(11, 30)], "Few cause dyspnea.": [(10, 17)]}.__getitem__
    # masked: "Many cause <c>." twice -> 0; unmasked it would be 7 vs 19 characters apart
    assert gold_masked_edit_distance([source], [reference], spans, tokenize) == 0.0
    # "Many" -> "Few": M->F, a->e, n->w, delete y = 4 characters; 1 word
    pairs = ([source, source], [reference, "Few cause dyspnea."])
    assert gold_masked_edit_distance(*pairs, spans, tokenize) == pytest.approx((0 + 4) / 2)
    assert gold_masked_edit_distance(*pairs, spans, tokenize, "word") == pytest.approx((0 + 1) / 2)
    assert gold_masked_edit_distance([], [], spans, tokenize) is None
    with pytest.raises(ValueError, match="char or word"):
        gold_masked_edit_distance(*pairs, spans, tokenize, "byte")


@pytest.fixture(scope="module")
def umls_index(tmp_path_factory) -> Path:
    from pipelines.text.umls import build_index

    dest = tmp_path_factory.mktemp("umls") / "index"
    build_index(str(UMLS / "MRCONSO.RRF"), str(UMLS / "MRSTY.RRF"), dest, ["ENG"])
    return dest


@pytest.fixture
def style_builder(tmp_path) -> Path:
    folder = tmp_path / "msd" / "sentences"
    folder.mkdir(parents=True)
    texts, labels = _rows()
    rows = [{"text": t, "label": y} for t, y in zip(texts, labels, strict=True)]
    pq.write_table(pa.Table.from_pylist(rows), folder / "train-0000.parquet")
    return tmp_path / "msd"


@pytest.mark.slow
def test_evaluate_defaults_fasttext_and_gold_character_edit_distance(
    tmp_path, monkeypatch, style_builder, umls_index
):
    monkeypatch.chdir(ROOT)
    (tmp_path / "src.txt").write_text("Patients with dyspnea need oxygen .\n")
    (tmp_path / "hyp.txt").write_text("you may feel tired and short of breath\n")
    (tmp_path / "ref.txt").write_text("Patients with shortness of breath need air .\n")
    files = [f"--{k}={tmp_path / (k + '.txt')}" for k in ("hyp", "ref", "src")]
    sets = [f"evaluate.style_data={style_builder}", f"evaluate.umls_index={umls_index}"]
    out = tmp_path / "s.json"

    def run(*extra: str) -> dict:
        argv = ["evaluate", "files", *files, "--select", "bleu", "--measures", "--json", str(out)]
        assert main([*argv, *(x for s in [*sets, *extra] for x in ("--set", s))]) == 0
        return json.loads(out.read_text())

    data = run()
    found, sig = data["extra"]["measures"], data["signature"]
    assert found["style_accuracy"] == 1.0 and "|style_accuracy:fasttext-supervised-" in sig
    # gold pair, concepts masked: "oxygen" -> "air" = 6 character edits (the output plays no part)
    assert found["masked_edit_distance"] == 6.0
    assert "|masked_edit_distance:char-levenshtein-gold-umls-masked-" in sig
    assert run("evaluate.masked_edit_unit=word")["extra"]["measures"]["masked_edit_distance"] == 1.0
    assert run("evaluate.style_direction=l2e")["extra"]["measures"]["style_accuracy"] == 0.0


def test_cao_params_values_the_user_gets():
    from medsimp.config import load_params
    from medsimp.params_schema import Evaluate

    ev = load_params(ROOT / "params.yaml").evaluate
    got = (ev.style_classifier, ev.style_direction, ev.masked_edit_pair, ev.masked_edit_unit)
    assert got == ("fasttext", "e2l", "gold", "char")
    d = Evaluate()
    assert (d.style_classifier, d.style_direction, d.masked_edit_pair, d.masked_edit_unit) == got


def test_msd_split_holds_out_20_percent_for_validation_and_tests_on_the_paired_documents():
    """Cao et al. §4.2: "We leave 20% of the training data for validation"; the test set is the
    expert-annotated parallel documents, so no other document is drawn into test."""
    from collections import Counter

    from medsimp.config import load_params
    from medsimp.corpora.msd import _split_of
    from medsimp.params_schema import BuildMsd

    split = load_params(ROOT / "params.yaml").build.msd.split
    assert (
        (split.validation, split.test) == (0.2, 0.0) == (BuildMsd().split.validation, BuildMsd().split.test)
    )
    docs = [f"doc{i}" for i in range(200)]
    counts = Counter(_split_of(docs, {"doc0", "doc1"}, split).values())
    assert counts["test"] == 2  # the paired documents only
    assert 0.15 < counts["validation"] / 198 < 0.25 and counts["train"] + counts["validation"] == 198


def test_msd_sentences_are_split_with_nltk_punkt_as_cao_did():
    """Cao et al. §3.2: "We split the sentences using NLTK" (punkt, English parameters); the
    earlier pysbd splitter with medsimp's repairs stays an option."""
    from medsimp.config import load_params
    from medsimp.params_schema import Msd
    from pipelines.sources.msd import MsdRecord, assemble

    assert load_params(ROOT / "params.yaml").msd.splitter == "nltk" == Msd().splitter
    text = "Symptoms include fever, e.g. a high temperature. Treatment is rest."
    rec = MsdRecord("d", "t", "complex", "T", (("Symptoms", text),), (), "f:1")
    nltk_rows, *_ = assemble("d", [rec], {}, splitter="nltk")
    pysbd_rows, *_ = assemble("d", [rec], {}, splitter="pysbd")
    # punkt's English model has no "e.g" abbreviation; pysbd keeps the sentence whole
    assert [r["text"] for r in nltk_rows] == [
        "Symptoms include fever, e.g.",
        "a high temperature.",
        "Treatment is rest.",
    ]
    assert [r["text"] for r in pysbd_rows] == [
        "Symptoms include fever, e.g. a high temperature.",
        "Treatment is rest.",
    ]
    assert [(r["char_start"], r["char_end"]) for r in nltk_rows] == [(0, 28), (29, 48), (49, 67)]
    from medsimp.text.multilingual import split_sentences

    # punkt's first span keeps the text's leading space; the sentence table's offsets do not
    assert [(s.start, s.end, s.text) for s in split_sentences("  Fever. Rest.", "en", "nltk")] == [
        (2, 8, "Fever."),
        (9, 14, "Rest."),
    ]
