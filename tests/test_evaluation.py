"""Issue 15: `--select`, the signature and scales, EASSE measures, multi-system report, bootstrap, API."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from medsimp.cli import main

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--set", "evaluate.meteor=false", "--set", "evaluate.bertscore=false"]


def _files(tmp_path: Path) -> list[str]:
    (tmp_path / "hyp.txt").write_text("the patient had high blood pressure .\nhe is stable .\n")
    (tmp_path / "ref.txt").write_text("the patient had high blood pressure .\nhe is stable now .\n")
    (tmp_path / "src.txt").write_text("pt had htn .\nhe is stable .\n")
    return ["--hyp", str(tmp_path / "hyp.txt"), "--ref", str(tmp_path / "ref.txt"), "--src", str(tmp_path / "src.txt")]


def test_select_computes_only_the_named_metrics_with_the_same_values(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    args = _files(tmp_path)
    assert main([*FAST, "evaluate", *args, "--json", str(tmp_path / "all.json")]) == 0
    assert main(["evaluate", *args, "--select", "bleu,sari", "--json", str(tmp_path / "some.json")]) == 0
    full = json.loads((tmp_path / "all.json").read_text())["scores"]
    some = json.loads((tmp_path / "some.json").read_text())["scores"]
    assert set(some) == {"bleu", "bleu_1", "bleu_2", "bleu_3", "bleu_4", "sari", "sari_keep", "sari_del", "sari_add"}
    assert all(some[k] == full[k] for k in some)
    assert main(["evaluate", *args, "--select", "ascore", "--json", str(tmp_path / "a.json")]) == 0
    a = json.loads((tmp_path / "a.json").read_text())["scores"]
    assert a["ascore"] == full["ascore"] and {"bleu", "hit", "cwr"} <= set(a)
    capsys.readouterr()
    assert main(["evaluate", *args, "--select", "bleu,blue"]) == 2
    assert "blue" in capsys.readouterr().err


def test_every_result_carries_a_signature_and_one_scale_per_value(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "s.json"
    assert main([*FAST, "evaluate", *_files(tmp_path), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["scales"]) == {k for k, v in result["scores"].items()}
    assert result["scales"]["sari"] == "0-100" and result["scales"]["bleu"] == "0-1"
    assert result["scales"]["cider"] == "0-10"
    sig = result["signature"]
    assert sig.startswith("medsimp:") and "|mode:default|tok:nltk-treebank|case:lc|refs:1|" in sig
    assert "|rouge_l:rouge-score-f1@0.1.2|" in sig and "meteor" not in sig  # METEOR off: not in it
    err = capsys.readouterr().err
    assert f"signature: {sig}" in err and "sari (0-100)" in err


def test_api_score_matches_the_cli(tmp_path, monkeypatch):
    from medsimp.training.evaluation import score

    monkeypatch.chdir(ROOT)
    out = tmp_path / "s.json"
    assert main(["evaluate", *_files(tmp_path), "--select", "bleu,sari,hit,cwr,ascore", "--json", str(out)]) == 0
    cli = json.loads(out.read_text())
    api = score(["the patient had high blood pressure .", "he is stable ."],
                [["the patient had high blood pressure ."], ["he is stable now ."]],
                sources=["pt had htn .", "he is stable ."], select=["bleu", "sari", "hit", "cwr", "ascore"])
    assert api.scores == cli["scores"] and api.signature == cli["signature"] and api.n == 2


def test_easse_measures_on_a_hand_computed_case():
    from wordfreq import zipf_frequency

    from medsimp.training.simplification_measures import levenshtein_similarity, measures

    assert levenshtein_similarity("kitten", "sitting") == pytest.approx(8 / 13)  # LCS "ittn" = 4
    src = "The patient has hypertension ."                    # 30 chars, 5 tokens
    out = "The patient has high blood pressure . It is bad ."  # 49 chars, 11 tokens, 2 sentences
    got = measures([src, "He is stable ."], [out, "He is stable ."])
    assert got["compression_ratio"] == pytest.approx((49 / 30 + 1) / 2)
    assert got["sentence_splits"] == pytest.approx((2 + 1) / 2)
    assert got["exact_copies"] == pytest.approx(0.5)
    # added: high blood pressure it is bad . = 7 of 11; deleted: hypertension = 1 of 5
    assert got["additions_proportion"] == pytest.approx((7 / 11 + 0) / 2)
    assert got["deletions_proportion"] == pytest.approx((1 / 5 + 0) / 2)
    # content words of `out`: patient high blood pressure bad; Q3 of 8 - zipf (numpy linear quantile)
    first = sorted(8 - zipf_frequency(w, "en") for w in ("patient", "high", "blood", "pressure", "bad"))
    q3_first = first[3]  # 0.75 * (5 - 1) = index 3 exactly
    q3_second = 8 - zipf_frequency("stable", "en")  # "he", "is" are stopwords
    assert got["lexical_complexity"] == pytest.approx((q3_first + q3_second) / 2)


def test_measures_flag_adds_measures_and_length_buckets(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "s.json"
    assert main(["evaluate", *_files(tmp_path), "--select", "bleu", "--measures", "--json", str(out)]) == 0
    extra = json.loads(out.read_text())["extra"]
    assert extra["measures"]["exact_copies"] == pytest.approx(0.5)  # "he is stable ." copied
    assert [(b["bucket"], b["n"]) for b in extra["length_buckets"]] == [("0-9", 2)]
