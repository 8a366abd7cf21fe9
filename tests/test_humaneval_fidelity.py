"""The kit's scales follow the papers (issue 19 items 1 and 5), and the released-data readers
ingest small fixtures written in the authors' formats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from medsimp.humaneval import released
from medsimp.humaneval.schema import (
    ALIGNMENT_FACTUALITY,
    ALIGNMENT_PER_PAIR,
    MULTICOCHRANE,
    Q4,
    recode_severity,
)

ROOT = Path(__file__).resolve().parents[1]
HEADER = [
    None,
    "original english sentence",
    "simple generated sentence",
    "simple gold sentence",
    "Are there hallucinations?",
    "Are deletions excessive?",
    "Factual",
    "Fluency",
    "Simplicity",
]


def test_multicochrane_scales_run_the_papers_way():
    # Joseph et al. 2023, App. A: 0 = completely factual / no fluency issues, 2 = severe;
    # simplicity -2 = heavily oversimplified, 0 = ideal, +2 = heavily under-simplified.
    fact, flu, simp = (dict(q.options) for q in MULTICOCHRANE)
    assert set(fact) == {0, 1, 2} and "completely factual" in fact[0].lower()
    assert "severe" in fact[2].lower() and "severe" in flu[2].lower()
    assert "no fluency issues" in flu[0].lower()
    assert set(simp) == {-2, -1, 0, 1, 2}
    assert "oversimplified" in simp[-2].lower() and "ideal" in simp[0].lower()
    assert "under-simplified" in simp[2].lower()


def test_alignment_annotation_fields_of_anno_viewer():
    # App. J: per alignment, Devaraj et al. (2022)'s factuality categories and elaboration, 0-2
    assert [q.qid for q in ALIGNMENT_PER_PAIR] == ["insertion", "deletion", "substitution", "elaboration"]
    assert all(q.values() == (0, 1, 2) for q in ALIGNMENT_PER_PAIR)
    assert ALIGNMENT_FACTUALITY == ("insertion", "deletion", "substitution")


def test_layperson_q4_has_the_papers_four_levels():
    assert Q4.values() == (-1, 0, 1, 2)
    labels = dict(Q4.options)
    assert "further confused" in labels[-1].lower() and "much better" in labels[2].lower()


def test_severity_recoding_of_released_data():
    # Released ratings code Critical = 1 ... Normal = 5. Lay guesses (released coding) 1, 2
    # against expert severities (kit coding: 5 = critical) 5, 3: read as they are the errors
    # are -4, -1 (MSE 8.5); recoded (5, 4) they are 0, 1 (MSE 0.5).
    lay, expert = [1, 2], [5, 3]
    raw = sum((a - b) ** 2 for a, b in zip(lay, expert)) / 2
    fixed = sum((recode_severity(a, "critical_first") - b) ** 2 for a, b in zip(lay, expert)) / 2
    assert (raw, fixed) == (8.5, 0.5)
    assert recode_severity(4, "normal_first") == 4
    with pytest.raises(ValueError):
        recode_severity(0, "critical_first")


def _workbook(path: Path, rows: list[list], extra_sheet: bool = False) -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "en_0"
    ws.append(HEADER)
    for r in rows:
        ws.append(r)
    ws.append([])
    ws.append([None, None, None, None, "59", "52", "0.58", "0.37", "0.49"])  # authors' summary
    if extra_sheet:  # another annotator's copy: must not be read
        other = wb.create_sheet("kathryn")
        other.append(HEADER)
        other.append([0.0, "x", "y", "z", "N", "N", 2.0, 2.0, 2.0])
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)


def _row(i: int, fact, flu, simp) -> list:
    return [float(i), f"complex {i}", f"simple {i}", f"gold {i}", "N", "N", fact, flu, simp]


@pytest.fixture()
def eval_data(tmp_path):
    root = tmp_path / "data" / "eval_data"
    en = root / "en" / "spreadsheets"
    _workbook(
        en / "anno0" / "Copy of en_system1_0_anno0.xlsx",
        [_row(0, 0.0, 0.0, 0.0), _row(1, 1.0, 0.0, 1.0), _row(2, 2.0, 1.0, -1.0)],
        True,
    )
    _workbook(
        en / "anno1" / "Copy of en_system1_0.xlsx",
        [_row(0, 0.0, 1.0, 0.0), _row(1, 1.0, 0.0, 1.0), _row(2, 1.0, 1.0, 0.0)],
    )
    _workbook(
        en / "anno0" / "Copy of en_system2_0.5_anno0.xlsx",
        [_row(0, 0.0, 0.0, 0.0), _row(1, 0.0, 0.0, 0.0), _row(2, 1.0, 1.0, 0.0)],
    )
    # a copy of anno0's workbook in a third folder: skipped as a duplicate
    _workbook(
        en / "anno3" / "en_system2_0.5.xlsx",
        [_row(0, 0.0, 0.0, 0.0), _row(1, 0.0, 0.0, 0.0), _row(2, 1.0, 1.0, 0.0)],
    )
    fr = root / "fr" / "spreadsheets"
    _workbook(fr / "fr_system1_0.xlsx", [_row(0, 1.0, 1.0, 0.0), _row(1, 1.0, 0.0, 0.0)])
    _workbook(fr / "fr_system2_0.5.xlsx", [_row(0, 2.0, 1.0, 0.0), _row(1, 1.0, 1.0, 0.0)])
    (root / "fr" / "csv").mkdir(parents=True)
    (root / "fr" / "csv" / "fr_all_0.csv").write_text(
        "\tinput\toutput\tgold\tprefix\n0\ta\tb\tc\t\n1\td\te\tf\t\n"
    )
    return tmp_path


def test_released_multicochrane_tables_and_checks(eval_data):
    ratings, problems, info = released.load_multicochrane(eval_data)
    assert problems == []
    assert info["duplicate_workbooks"] == [
        "en/anno3/en_system2_0.5.xlsx = en/anno0/Copy of en_system2_0.5_anno0.xlsx"
    ]
    assert info["csv_items"] == {"fr/mt5": 2}
    table = {(r["language"], r["system"]): r for r in released.means(ratings)}
    en = table[("en", "mt5")]
    # two annotators x 3 items; the summary rows and the copied sheet are not ratings
    assert (en["annotators"], en["factuality_n"]) == (2, 6)
    assert en["factuality"] == round(5 / 6, 4) and en["fluency"] == 0.5
    assert en["simplicity"] == round(1 / 6, 4)
    assert table[("fr", "mt5_filtered")]["factuality"] == 1.5
    kappa = {(r["language"], r["scale"]): r for r in released.agreement(ratings)}
    # en mt5 factuality units: (0,0) (1,1) (2,1): P_o = (1 + 1 + 0) / 3; q = 3
    assert kappa[("en", "factuality")]["randolph_kappa"] == round((2 / 3 - 1 / 3) / (2 / 3), 4)
    checks = {c["claim"]: c for c in released.section_5_3_checks(list(table.values()))}
    assert checks["en mt5 more factual than fr"]["holds"] is True  # 0.833 < 1.0
    assert checks["en: filtering improves factuality"]["holds"] is True  # 0.333 < 0.833
    assert checks["fr: filtering improves factuality"]["holds"] is True  # worse, as the paper says


def test_out_of_range_rating_is_reported(tmp_path):
    _workbook(tmp_path / "en" / "spreadsheets" / "en_system1_0.xlsx", [_row(0, 3.0, 0.0, 0.0)])
    ratings, problems, _ = released.load_multicochrane(tmp_path)
    assert problems == ["en_system1_0.xlsx:2: factuality 3 is not on the 0..2 scale"]
    assert {r.scale for r in ratings} == {"fluency", "simplicity"}


def test_check_script_runs_on_fixture_and_skips_without_data(eval_data, tmp_path):
    script = ROOT / "scripts" / "check_humaneval_data.py"
    out = subprocess.run(
        [sys.executable, str(script), "--data", str(eval_data)], capture_output=True, text=True, check=True
    ).stdout
    assert "Table 5" in out and "§5.3 statements on the computed table" in out
    skipped = subprocess.run(
        [sys.executable, str(script), "--data", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "skipped" in skipped


def test_humaneval_released_command(eval_data, tmp_path, capsys):
    import csv
    import json

    from medsimp.cli import main

    out = tmp_path / "released"
    assert main(["humaneval", "released", "--data", str(eval_data), "--output", str(out)]) == 0
    rows = {(r["language"], r["system"]): r for r in csv.DictReader(open(out / "table5.csv"))}
    assert float(rows[("en", "mt5")]["fluency"]) == 0.5
    stats = json.loads((out / "stats.json").read_text())
    assert stats["read"] == stats["kept"] + stats["rejected"] and stats["duplicate_workbooks"] == 1
    assert (
        main(["humaneval", "released", "--data", str(tmp_path / "nowhere"), "--output", str(tmp_path / "x")])
        == 2
    )
    assert "no such folder" in capsys.readouterr().err
