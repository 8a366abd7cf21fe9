"""`evaluate files --dataset` scores outputs in the order `load_dataset(...)[split]` yields the
rows (issue 35 item 1: references used to be sorted, so a copy baseline written by iterating the
dataset scored BLEU 0.43 instead of sacrebleu's value), and refuses outputs in another order."""

from __future__ import annotations

import json
import random

import pytest
import sacrebleu

from medsimp.cli import main

FAST = ["--set", "evaluate.meteor=false", "--set", "evaluate.bertscore=false"]
WORDS = (
    "patient heart kidney blood pressure fever lung liver drug dose trial review children adults "
    "pain sleep diet exercise infection vaccine surgery therapy cancer asthma diabetes stroke"
).split()


@pytest.fixture
def builder(tmp_path):
    """A builder config whose test rows are deliberately not in sorted order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(7)
    rows = []
    for i in range(30):
        words = rng.sample(WORDS, 8)
        rows.append(
            (f"{' '.join(words)} were studied in group {i} .", f"{' '.join(words[:5])} in group {i} .")
        )
    assert rows != sorted(rows)
    config = tmp_path / "toy" / "en"
    config.mkdir(parents=True)
    for split, part in (("train", rows[:3]), ("validation", rows[:3]), ("test", rows)):
        table = pa.table({"complex_text": [c for c, _ in part], "simple_text": [s for _, s in part]})
        pq.write_table(table, config / f"{split}-00000-of-00001.parquet")
    return tmp_path / "toy", rows


def _evaluate(tmp_path, hyps, folder):
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    scores = tmp_path / "scores.json"
    argv = ["evaluate", "files", "--hyp", str(hyp), "--dataset", str(folder), "--config", "en"]
    code = main([*FAST, *argv, "--select", "bleu", "--json", str(scores)])
    return code, (json.loads(scores.read_text()) if code == 0 else None)


def test_outputs_in_load_dataset_order_score_as_sacrebleu(builder, tmp_path):
    from datasets import load_dataset

    folder, rows = builder
    test = load_dataset("parquet", data_files={"test": str(folder / "en" / "test-*.parquet")})["test"]
    copy = [row["complex_text"] for row in test]  # a copy baseline, written as a user iterates
    assert copy == [c for c, _ in rows]
    code, result = _evaluate(tmp_path, copy, folder)
    assert code == 0
    expected = sacrebleu.corpus_bleu(copy, [[s for _, s in rows]]).score
    assert result["scores"]["bleu"] == pytest.approx(expected, abs=1e-6)


def test_outputs_in_another_order_are_refused_not_scored(builder, tmp_path, capsys):
    folder, rows = builder
    in_sorted_order = [c for c, _ in sorted(rows)]
    code, _ = _evaluate(tmp_path, in_sorted_order, folder)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "follow another order" in err[-1] and "nothing was scored" in err[-1]
    assert err[-1].startswith("medsimp evaluate files: --hyp ")
    assert not (tmp_path / "scores.json").exists()


def test_a_constant_baseline_in_the_right_order_is_scored_not_refused(builder, tmp_path):
    """A line written on every row carries no order: it is scored (low), not refused."""
    folder, rows = builder
    code, result = _evaluate(tmp_path, ["patient heart kidney blood ."] * len(rows), folder)
    assert code == 0 and result["scores"]["bleu"] < 50
