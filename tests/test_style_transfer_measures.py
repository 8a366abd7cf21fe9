"""Cao et al. (2020) measures: style accuracy, perplexity, UMLS-masked edit distance (issue 19)."""

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsimp.cli import main
from medsimp.metrics.scoring import tokenize
from medsimp.metrics.style import (
    MASK,
    corpus_perplexity,
    load_causal_lm,
    masked_edit_distance,
    masked_tokens,
    style_accuracy,
    style_corpus,
    train_style_classifier,
    word_edit_distance,
)
from medsimp.params_schema import Msd

ROOT = Path(__file__).resolve().parents[1]
UMLS = ROOT / "data" / "sample" / "umls"
EXPERT = [
    "patients present with dyspnea and tachycardia",
    "hepatic cirrhosis causes portal hypertension",
    "administer intravenous antibiotics for bacteremia",
    "myocardial infarction requires percutaneous intervention",
]
LAYMAN = [
    "you may feel short of breath and your heart beats fast",
    "liver damage can make you feel very tired",
    "your doctor will give you medicine to fight the infection",
    "a heart attack needs quick care at a hospital",
]


@pytest.fixture
def toy_builder(tmp_path) -> Path:
    """A builder folder as `medsimp build msd` writes it: sentences/train-*.parquet, text+label."""
    folder = tmp_path / "msd" / "sentences"
    folder.mkdir(parents=True)
    rows = [{"text": t, "label": 0} for t in EXPERT] + [{"text": t, "label": 1} for t in LAYMAN]
    pq.write_table(pa.Table.from_pylist(rows), folder / "train-0000.parquet")
    pq.write_table(pa.Table.from_pylist([{"text": "held out", "label": 0}]), folder / "test-0000.parquet")
    return tmp_path / "msd"


def test_style_accuracy_on_a_separable_toy_corpus(toy_builder, tmp_path):
    texts, labels = style_corpus(toy_builder)
    assert len(texts) == 8 and labels == [0, 0, 0, 0, 1, 1, 1, 1]  # the train split only
    classifier = train_style_classifier(texts, labels, "tfidf_logreg")  # the option (default: fastText)
    layman_outputs = ["you may feel tired and short of breath", "your doctor will give you medicine"]
    expert_outputs = ["patients present with tachycardia", "administer intravenous antibiotics"]
    assert style_accuracy(classifier, layman_outputs) == 1.0
    assert style_accuracy(classifier, expert_outputs) == 0.0
    assert style_accuracy(classifier, layman_outputs + expert_outputs) == 0.5
    assert style_accuracy(classifier, []) is None
    # deterministic: retraining on the same rows gives the same model
    again = train_style_classifier(texts, labels, "tfidf_logreg")
    probe = layman_outputs + expert_outputs
    assert (again.predict_proba(probe) == classifier.predict_proba(probe)).all()


def test_style_corpus_needs_both_labels(tmp_path):
    pq.write_table(pa.Table.from_pylist([{"text": "a b", "label": 1}]), tmp_path / "one.parquet")
    with pytest.raises(ValueError, match="both labels"):
        style_corpus(tmp_path / "one.parquet")


WORDS = ["the", "patient", "has", "high", "blood", "pressure", "fever", "."]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> str:
    """A random 1-layer GPT-2 with a word-level tokenizer, built offline (as test_selfcorrect_local)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["[UNK]", "[BOS]", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=16, n_layer=1, n_head=2, bos_token_id=1)
    path = tmp_path_factory.mktemp("tiny-lm")
    GPT2LMHeadModel(cfg).save_pretrained(path)
    fast.save_pretrained(path)
    return str(path)


def test_perplexity_is_exp_of_the_mean_token_nll(tiny_lm):
    import torch

    tokenizer, model = load_causal_lm(tiny_lm)
    texts = ["the patient has high blood pressure .", "fever .", "the patient"]
    # independently: torch's cross entropy of each sequence (BOS + words), every word predicted
    total, count = 0.0, 0
    for text in texts:
        ids = torch.tensor([[1, *(WORDS.index(w) + 2 for w in text.split())]])
        with torch.no_grad():
            logits = model(ids).logits[0, :-1]
        total += float(torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="sum"))
        count += ids.shape[1] - 1
    assert count == 7 + 2 + 2
    assert corpus_perplexity(tokenizer, model, texts) == pytest.approx(math.exp(total / count), rel=1e-6)
    assert corpus_perplexity(tokenizer, model, []) is None


def test_masked_edit_distance_hand_case():
    source = "Patients with dyspnea need oxygen ."
    paraphrase = "Patients with shortness of breath need oxygen ."
    assert masked_tokens(source, [(14, 21)], tokenize) == ["patients", "with", MASK, "need", "oxygen", "."]
    # overlapping spans merge into one mask
    assert masked_tokens(paraphrase, [(14, 23), (17, 33)], tokenize) == masked_tokens(
        source, [(14, 21)], tokenize
    )
    assert word_edit_distance(["a", "b", "c"], ["a", "x", "c", "d"]) == 2  # one substitution, one insertion
    assert word_edit_distance([], ["a", "b"]) == 2
    spans = {source: [(14, 21)], paraphrase: [(14, 33)], "They need oxygen .": []}
    # pair 1: the concept's rewording is masked away -> 0 (unmasked: 1 substitution + 2 insertions = 3)
    # pair 2: [they, need, oxygen, .] vs [patients, with, MASK, need, oxygen, .] -> 1 substitution + 2 deletions
    got = masked_edit_distance(
        [source, source], [paraphrase, "They need oxygen ."], spans.__getitem__, tokenize
    )
    assert got == pytest.approx((0 + 3) / 2)
    assert word_edit_distance(tokenize(paraphrase), tokenize(source)) == 3
    assert masked_edit_distance([], [], spans.__getitem__, tokenize) is None


@pytest.fixture(scope="module")
def umls_index(tmp_path_factory) -> Path:
    from pipelines.text.umls import build_index

    dest = tmp_path_factory.mktemp("umls") / "index"
    build_index(str(UMLS / "MRCONSO.RRF"), str(UMLS / "MRSTY.RRF"), dest, ["ENG"])
    return dest


def test_evaluate_measures_with_classifier_lm_and_umls_index(
    tmp_path, monkeypatch, capsys, toy_builder, tiny_lm, umls_index
):
    """`evaluate --measures` with the three params set: real QuickUMLS masking with the sample
    index ("dyspnea" and "shortness of breath" are one concept), the toy classifier, the tiny LM."""
    monkeypatch.chdir(ROOT)
    (tmp_path / "src.txt").write_text("Patients with dyspnea need oxygen .\n")
    (tmp_path / "hyp.txt").write_text("you may feel shortness of breath and need oxygen .\n")
    (tmp_path / "ref.txt").write_text("You feel short of breath and need oxygen .\n")
    files = [
        "--hyp",
        str(tmp_path / "hyp.txt"),
        "--ref",
        str(tmp_path / "ref.txt"),
        "--src",
        str(tmp_path / "src.txt"),
    ]
    sets = [
        f"evaluate.style_data={toy_builder}",
        f"evaluate.perplexity_model={tiny_lm}",
        f"evaluate.umls_index={umls_index}",
        "evaluate.style_classifier=tfidf_logreg",  # the options; the defaults: tests/test_cao_fidelity.py
        "evaluate.masked_edit_pair=output",
    ]
    out = tmp_path / "s.json"
    argv = ["evaluate", "files", *files, "--select", "bleu", "--measures", "--json", str(out)]
    assert main([*argv, *(x for s in sets for x in ("--set", s))]) == 0
    data = json.loads(out.read_text())
    found = data["extra"]["measures"]
    assert found["style_accuracy"] == 1.0
    tokenizer, model = load_causal_lm(tiny_lm)
    assert found["perplexity"] == pytest.approx(
        corpus_perplexity(tokenizer, model, ["you may feel shortness of breath and need oxygen ."]), abs=1e-6
    )
    # [you, may, feel, MASK, and, need, oxygen, .] vs [patients, with, MASK, need, oxygen, .]:
    # 2 substitutions + 2 insertions (unmasked: 3 substitutions + 4 insertions = 7)
    assert found["masked_edit_distance"] == 4.0
    sig = data["signature"]
    assert "|style_accuracy:tfidf-word1-2+logreg" in sig and "|perplexity:causal-lm-" in sig
    assert "|masked_edit_distance:word-levenshtein-output-input-umls-masked-" in sig
    assert "not computed" not in capsys.readouterr().err


def test_unconfigured_measures_are_null_and_said_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    (tmp_path / "src.txt").write_text("pt had htn .\n")
    (tmp_path / "a.txt").write_text("the patient had high blood pressure .\n")
    (tmp_path / "b.txt").write_text("pt had htn .\n")
    (tmp_path / "ref.txt").write_text("the patient had high blood pressure .\n")
    out = tmp_path / "s.json"
    hyps = ["--hyp", str(tmp_path / "a.txt"), "--hyp", str(tmp_path / "b.txt")]
    argv = [
        "evaluate",
        "files",
        *hyps,
        "--ref",
        str(tmp_path / "ref.txt"),
        "--src",
        str(tmp_path / "src.txt"),
    ]
    assert main([*argv, "--select", "bleu", "--measures", "--json", str(out)]) == 0
    systems = json.loads(out.read_text())["systems"]
    for result in systems.values():
        assert {
            result["extra"]["measures"][m] for m in ("style_accuracy", "perplexity", "masked_edit_distance")
        } == {None}
        assert set(result["extra"]["not_computed"]) == {
            "style_accuracy",
            "perplexity",
            "masked_edit_distance",
        }
    err = capsys.readouterr().err
    assert err.count("note: perplexity not computed") == 1 and "evaluate.umls_index" in err


def test_msd_pairs_versions_by_title_and_icd9_else_by_topic():
    """Cao et al. pair professional and consumer documents by title + ICD-9 code; without the code
    (or with `msd.pair_key: topic`) the topic slug pairs them."""
    from pipelines.sources.msd import assemble, parse_line
    from pipelines.sources.records import FormatError, Line

    def record(audience: str, topic: str, extra: str, pair_key: str = "title_icd9"):
        text = (
            f'{{"topic": "{topic}", "audience": "{audience}", {extra}'
            '"sections": [{"heading": "Symptoms", "text": "Wheezing occurs."}]}'
        )
        return parse_line(Line(text, 1, 1, "msd.jsonl:1"), "msd", False, pair_key)

    keyed = 'title": "Asthma", "icd9": "493.0", '
    pro = record("professional", "Asthma (Professional)", '"' + keyed)
    con = record("consumer", "Asthma in Adults", '"' + keyed)
    assert pro.doc_id == con.doc_id == "asthma--icd9-493-0"  # different topics, one title + code
    rows, groups, _, _ = assemble(pro.doc_id, [pro, con], {"symptoms": "symptoms"}, splitter=Msd().splitter)
    assert {r["side"] for r in rows} == {"complex", "simple"} and len(groups) == 1
    assert record("consumer", "Asthma in Adults", '"title": "Asthma", ').doc_id == "asthma-in-adults"
    assert record("consumer", "Asthma in Adults", '"' + keyed, "topic").doc_id == "asthma-in-adults"
    with pytest.raises(FormatError) as bad:
        record("consumer", "Asthma", '"title": "Asthma", "icd9": 493, ')
    assert bad.value.reason == "bad_icd9"


def test_msd_table2_avg_readability_and_annotations_hand_case():
    """Cao et al.'s Table 2 rows in the MSD builder's stats: "Avg. Readability" = the mean of the
    FleshKincaid, Gunning and Coleman rows (each a mean over sentences, unscored sentences
    skipped); "#Annotation" = the number of parallel annotations, the same for both styles (not
    concept mentions, the old reading)."""
    from medsimp.corpora.msd import table2_statistics

    def row(side: str, scores: tuple[float, float, float] | None, n_concepts: int) -> dict:
        readability = (
            None
            if scores is None
            else {"fkgl": scores[0], "gunning_fog": scores[1], "coleman_liau": scores[2], "ari": 1.0}
        )
        concept = {
            "start": 0,
            "end": 1,
            "term": "x",
            "cui": f"C{n_concepts}",
            "semtypes": [],
            "similarity": 1.0,
        }
        return {
            "side": side,
            "text": "Some text .",
            "readability": readability,
            "concepts": [concept] * n_concepts,
        }

    # expert: FK (10 + 14) / 2 = 12, Gunning (18 + 20) / 2 = 19, Coleman (11 + 13) / 2 = 12 -> 43 / 3
    # layman: FK 6, Gunning 9, Coleman 6 (the unscored sentence skipped) -> 7
    rows = [
        row("complex", (10.0, 18.0, 11.0), 2),
        row("complex", (14.0, 20.0, 13.0), 1),
        row("simple", (6.0, 9.0, 6.0), 0),
        row("simple", None, 1),
    ]
    assert table2_statistics(rows, annotations=2) == {
        "avg_readability_expert": round(43 / 3, 4),
        "annotations_expert": 2,
        "avg_readability_layman": 7.0,
        "annotations_layman": 2,
    }
    # Table 2's MSD Train column: FK 12.61, Gunning 18.43, Coleman 12.66 -> 14.57; no annotations
    train = [row("complex", (12.61, 18.43, 12.66), 5), row("simple", (9.97, 15.29, 10.41), 5)]
    assert table2_statistics(train, annotations=0) == {
        "avg_readability_expert": 14.5667,
        "annotations_expert": 0,
        "avg_readability_layman": 11.89,
        "annotations_layman": 0,
    }


def test_table2_avg_readability_is_the_mean_of_the_three_indices_in_all_six_cells():
    # Table 2 (FleshKincaid, Gunning, Coleman, Avg. Readability) per column
    table2 = {
        "MSD Train expert": (12.61, 18.43, 12.66, 14.57),
        "MSD Train layman": (9.97, 15.29, 10.41, 11.89),
        "MSD Test expert": (12.05, 17.89, 12.26, 14.07),
        "MSD Test layman": (9.53, 15.07, 9.74, 11.45),
        "SimpWiki expert": (12.10, 17.66, 10.89, 13.55),
        "SimpWiki layman": (9.63, 14.86, 9.70, 11.40),
    }
    for fk, gunning, coleman, avg in table2.values():
        assert round((fk + gunning + coleman) / 3, 2) == avg


def test_a_folder_that_is_not_a_model_is_one_line(tmp_path):
    from medsimp.metrics.style import load_causal_lm

    with pytest.raises(OSError, match="no config.json") as err:
        load_causal_lm(tmp_path)
    assert "\n" not in str(err.value)
