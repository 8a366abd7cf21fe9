"""Issue 27 §2 and §4: PLABA at abstract level, the paper's significance tests, and the
MultiCochrane agreement script (hand-made cases; no shared data needed)."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from medsimp.cli import main

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "builders"))
import upstream  # noqa: E402


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pair(q, pmid, k, n, complex_, simple):
    return {
        "question_id": q,
        "pmid": pmid,
        "adaptation": k,
        "sentence_number": n,
        "complex_text": complex_,
        "simple_text": simple,
    }


def test_abstract_rows_join_sentences_in_number_order():
    from medsimp.corpora.plaba import abstract_rows

    pairs = [
        _pair("q1", "11", 1, 2, "S2.", "a2."),
        _pair("q1", "11", 1, 1, "S1.", "a1."),
        _pair("q1", "11", 1, 10, "S10.", ""),  # deleted: adds nothing
        _pair("q1", "11", 2, 1, "S1.", "b1."),
        _pair("q1", "11", 2, 2, "S2.", ""),
        _pair("q1", "11", 2, 10, "S10.", "b10. b10bis."),
        _pair("q1", "12", 1, 1, "T1.", ""),  # every sentence deleted: no reference
    ]
    rows = abstract_rows(pairs)
    assert rows[0] == {
        "abstract_id": "q1:11",
        "question_id": "q1",
        "pmid": "11",
        "source": "S1. S2. S10.",
        "references": ["a1. a2.", "b1. b10. b10bis."],
        "adaptations": [1, 2],
        "n_sentences": 3,
    }
    assert rows[1]["source"] == "T1." and rows[1]["references"] == []


@pytest.mark.slow
def test_plaba_abstracts_config_loads_offline(tmp_path):
    """`load_dataset("builders/plaba", "abstracts")` (the old builder had only `pairs`)."""
    params = tmp_path / "params.yaml"
    split = {"seed": 13, "validation": 0.2, "test": 0.2}
    params.write_text(
        yaml.safe_dump({"build": {"plaba": {**upstream.write_plaba(tmp_path), "split": split}}})
    )
    out = tmp_path / "built"
    assert main(["--params", str(params), "build", "plaba", "--output", str(out)]) == 0
    from datasets import load_dataset

    ds = load_dataset(str(out), "abstracts", cache_dir=str(tmp_path / "cache"))
    pairs = load_dataset(str(out), "pairs", cache_dir=str(tmp_path / "cache"))
    assert sum(ds[s].num_rows for s in ds) == 5  # five fixture abstracts
    for s in ds:  # same split per question in both configs
        assert set(ds[s]["question_id"]) == set(pairs[s]["question_id"])
    row = next(r for s in ds for r in ds[s] if r["pmid"] == "30000001")
    assert row["source"].startswith("Patients with diabetes were ra")
    assert row["source"].endswith("Adverse events were rare.") and row["n_sentences"] == 3
    assert row["references"][0].startswith("People with diabetes were put ")
    assert "Adverse" not in row["references"][0]  # sentence 3 was deleted
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    assert stats["abstracts"] == 5
    shutil.rmtree(tmp_path / "cache")


def test_kendall_tau_as_a_group_test_hand_case():
    """Abstracts FKGL 10, 12; adaptations 8, 9: the 4 cross-group pairs are discordant, the
    2 within-group pairs tied in the group label: tau-b = -4 / sqrt(4 * 6)."""
    tau, p = _script("plaba_baselines").kendall_group_test([10.0, 12.0], [8.0, 9.0])
    assert math.isclose(tau, -4 / math.sqrt(24), rel_tol=1e-12)
    assert 0 < p < 1


def test_wilcoxon_across_metrics_hand_case():
    """b beats a on every paired score (BLEU higher by 1, 2, 3; FKGL lower by 4, 5): five
    positive differences, exact two-sided p = 2 / 2**5."""
    mod = _script("plaba_baselines")
    a = {"bleu": [0.0, 0.0, 0.0], "fkgl": [10.0, 10.0]}
    b = {"bleu": [1.0, 2.0, 3.0], "fkgl": [6.0, 5.0]}
    p, n = mod.wilcoxon_across_metrics(a, b)
    assert n == 5 and math.isclose(p, 2 / 32)
    # without the FKGL sign flip the same data would not be one-sided at all
    p_same, _ = mod.wilcoxon_across_metrics(a, b, lower_is_better=())
    assert p_same > p


def test_table3_bleu_with_abstract_as_candidate():
    mod = _script("plaba_baselines")
    # candidate identical to one of two references: BLEU-4 = 1
    assert mod.bleu4(["the cat sat on the mat ."], [["a dog .", "the cat sat on the mat ."]]) == 1.0


def test_multicochrane_agreement_reads_the_extra_sheets(tmp_path):
    """anno0's workbook: first sheet + a `kathryn` copy of anno1's ratings. Factuality
    ratings [0, 0] and [0, 1] -> P_o = 1/2, kappa = (1/2 - 1/3) / (2/3) = 1/4; fluency all
    0 -> kappa 1."""
    import openpyxl

    head = ["", "original english sentence", "simple gold sentence", "Factual", "Fluency", "Simplicity"]

    def sheet(ws, values):
        ws.append(head)
        for i, (fa, fl, si) in enumerate(values):
            ws.append([float(i), "x", "y", fa, fl, si])
        ws.append([None, None, None, "summary", None, None])

    mine, theirs = [(0, 0, 0), (0, 0, 1)], [(0, 0, 0), (1, 0, 1)]
    (tmp_path / "anno0").mkdir()
    (tmp_path / "anno1").mkdir()
    wb = openpyxl.Workbook()
    sheet(wb.active, mine)
    wb.active.title = "en_0"
    sheet(wb.create_sheet("kathryn"), theirs)
    wb.create_sheet("kat").append(["factual", "fluency", "simplicity"])
    wb.save(tmp_path / "anno0" / "en_gold_anno0.xlsx")
    wb = openpyxl.Workbook()
    sheet(wb.active, theirs)
    wb.save(tmp_path / "anno1" / "en_gold.xlsx")
    report = _script("multicochrane_agreement").analyse(tmp_path)
    assert report["sheets"] == [
        {
            "workbook": "anno0/en_gold_anno0.xlsx",
            "sheet": "kathryn",
            "items": 2,
            "items_equal_to_first_sheet_of": {"anno1": 2},
        }
    ]
    k = report["kappa"]["gold"]
    assert k["factuality"] == 0.25 and k["fluency"] == 1.0 and k["simplicity"] == 1.0
    assert k["items"] == 2 and k["raters"] == 2
    # all combined: per-unit P_o (1, 0; 1, 1; 1, 1 -> 5/6) against mean 1/q (1/3 x4, 1/5 x2)
    pe = (4 / 3 + 2 / 5) / 6
    assert math.isclose(k["all"], round((5 / 6 - pe) / (1 - pe), 4))
