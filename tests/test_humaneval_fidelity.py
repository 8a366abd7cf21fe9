"""The kit's scales follow the papers (issue 19 items 1 and 5), and the released-data readers
ingest small fixtures written in the authors' formats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from medsimp.humaneval import released
from medsimp.humaneval.schema import (
    AGREE,
    ALIGNMENT_FACTUALITY,
    ALIGNMENT_PER_PAIR,
    EXPERT_PER_ITEM,
    EXPERT_PER_OUTPUT,
    LAY_PREFERENCE,
    MULTICOCHRANE,
    Q1,
    Q2,
    Q3,
    Q4,
    SEVERITY,
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


# Joseph et al. 2023, App. A ("the exact framework that annotators used"), the level words
# copied from the paper (../shared/papers/multicochrane-joseph.txt)
APP_A = {
    "factuality": {0: "completely factual", 1: "inconsequential factual errors", 2: "severe factual errors"},
    "fluency": {
        0: "no fluency issues",
        1: "superficial issues",
        2: "severe fluency issues that obfuscate the meaning of the sentence",
    },
    "simplicity": {
        -2: "Output is severely oversimplified to the point where the original intent of the original "
        "sentence has been lost.",
        -1: "Output is oversimplified, missing some important details. However, the intent of the "
        "original sentence is preserved.",
        0: "Output is ideally simplified. It is readable to the average layman and does not omit "
        "important details.",
        1: "Output should be simplified more and include uncommon technical terms without any "
        "elaboration/explanation.",
        2: "Output should be simplified MUCH more. There is little to no change in the style of the "
        "sentence from the original sentence, and the output is difficult for the average layman to "
        "understand.",
    },
}


def test_multicochrane_scales_run_the_papers_way():
    # 0 = completely factual / no fluency issues, 2 = severe; simplicity -2 = severely
    # oversimplified, 0 = ideal, +2 = should be simplified much more; each label is App. A's
    # words after "<value> - " (issue 54: "Minor" stood for "inconsequential" / "superficial")
    for q in MULTICOCHRANE:
        labels = dict(q.options)
        assert set(labels) == set(APP_A[q.qid]), q.qid
        for value, words in APP_A[q.qid].items():
            assert labels[value].split(" - ", 1)[1].lower() == words.lower(), (q.qid, value)
    assert "independent of the input" in MULTICOCHRANE[2].prompt
    paper = ROOT.parent / "shared" / "papers" / "multicochrane-joseph.txt"
    if paper.exists():  # against the paper's own text where it is (skipped elsewhere)
        text = " ".join(paper.read_text(encoding="utf-8").split())
        assert all(" ".join(w.split()) in text for scale in APP_A.values() for w in scale.values())


def test_alignment_annotation_fields_of_anno_viewer():
    # App. J: per alignment, Devaraj et al. (2022)'s factuality categories and elaboration, 0-2
    assert [q.qid for q in ALIGNMENT_PER_PAIR] == ["insertion", "deletion", "substitution", "elaboration"]
    assert all(q.values() == (0, 1, 2) for q in ALIGNMENT_PER_PAIR)
    assert ALIGNMENT_FACTUALITY == ("insertion", "deletion", "substitution")


def test_layperson_q4_has_the_papers_four_levels():
    assert Q4.values() == (-1, 0, 1, 2)
    labels = dict(Q4.options)
    assert "further confused" in labels[-1].lower() and "much better" in labels[2].lower()


def test_layperson_form_uses_the_papers_words():
    # Yang et al. (2024), Fig. 1, numbered as footnote 2 (Q3 in App. A.2's numbers)
    assert Q1.prompt == "Q1: You understand the meaning of the sentence"
    assert Q1.options == ((1, "Not at all"), (2, "Some parts"), (3, "Most parts"), (4, "Completely"))
    assert (
        Q2.prompt
        == "Q2: Can you guess the level of severity of the medical condition described in the sentence?"
    )
    assert Q2.options == ((1, "Not at all"), (2, "With low confidence"), (3, "With high confidence"))
    assert Q3.prompt == "Q3: Make your best guess about the severity of the described medical condition."
    assert (
        Q4.prompt == "Q4: Has the simplified sentence improved your understanding of the original sentence?"
    )
    assert Q4.options == (
        (-1, "Further confused"),
        (0, "Not help"),
        (1, "Slightly better"),
        (2, "Much better"),
    )
    q5, _, q6, _ = LAY_PREFERENCE
    assert q5.prompt == "Q5: Which simplifications do you like the most?"
    assert q6.prompt == "Q6: Which simplifications do you like the least?"


def test_severity_levels_are_app_a2():
    names = [label.split(":")[0] for _, label in SEVERITY]
    assert names == ["Critical", "Serious", "Moderate", "Mild", "Healthy"]  # Fig. 1's order
    assert [v for v, _ in SEVERITY] == [5, 4, 3, 2, 1]  # App. A.2: CRITICAL (5) ... HEALTHY (1)
    labels = dict(SEVERITY)
    assert labels[5].endswith("A critical condition requires urgent care and close monitoring.")
    assert (
        labels[1]
        == "Healthy: Findings that are considered normal or benign with no significant abnormalities."
    )
    assert Q3.options == SEVERITY


def test_expert_form_is_fig5():
    assert AGREE == (
        (1, "1 - strongly disagree"),
        (2, "2 - disagree"),
        (3, "3 - neutral"),
        (4, "4 - agree"),
        (5, "5 - strongly agree"),
    )
    scales = [q for q in EXPERT_PER_OUTPUT if q.kind == "scale"]
    assert [q.qid for q in scales] == [
        "correctness",
        "completeness",
        "hallucination",
        "structure",
        "simplicity",
    ]
    assert all(q.options == AGREE for q in scales)
    assert scales[0].prompt == "Correctness: all information in the simplification is medically correct."
    # per original sentence: severity and the radiologist's simplicity score (Table 1: 1.500)
    assert [(q.qid, q.options == AGREE) for q in EXPERT_PER_ITEM] == [
        ("severity", False),
        ("simplicity", True),
    ]


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


# --- Yang et al. (2024) release, as released (issue 27 item 1) -----------------------------
YANG_LAY_HEADER = [
    "Radiology Sentence",
    "Simplification in Stage2",
    "Version",
    "Stage1: You understand the meaning of the sentence.",
    "Stage1: Can you guess the level of severity of the medical condition described in the sentence?",
    "Stage1: Can you guess the medical urgency of the condition described in the sentence?",
    "Stage1: Make your best guess about the severity of the described medical condition.",
    "Stage2: You understand the meaning of the sentence.",
    "Stage2: Can you guess the level of severity of the medical condition described in the sentence?",
    "Stage2: Can you guess the medical urgency of the condition described in the sentence?",
    "Stage2: Has the simplified sentence improved your understanding of the original sentence?",
    "Stage2: Make your best guess about the severity of the described medical condition.",
    "Stage3: Which simplifications do you like the most?",
    "Stage3: Please provide your justification.",
    "Stage3: Which simplifications do you like the least?",
    "Stage3: Please provide your justification.",
]
SENT = {"A": "Tiny cyst in the liver.", "B": "Mild fatty liver."}
SIMP = {"A": ("a1", "a2", "a3", "a3"), "B": ("b1", "b2", "b3", "b4")}  # A: CoT_BS == CoT_SC


def _write_csv(path: Path, rows: list[list[str]]) -> None:
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\r\n").writerows(rows)


def _lay(item, version, s1, s2, most, least):
    text = SIMP[item][("Dummy_BS", "Dummy_SC", "CoT_BS", "CoT_SC").index(version.split(";")[0])]
    q1, q2, q3 = s1
    p1, p2, q4, p3 = s2
    return [SENT[item], text, version, q1, q2, q2, q3, p1, p2, p2, q4, p3, most, "why", least, ""]


@pytest.fixture()
def yang_release(tmp_path):
    d = tmp_path / "yang"
    d.mkdir()
    _write_csv(
        d / "Original_setences_with_generated_simplifications.csv",
        [["Original Sentence", "Plain_BS", "Plain_SC", "CoT_BS", "CoT_SC"]]
        + [[SENT[k], *SIMP[k]] for k in "AB"],
    )
    head = [
        "Original Sentence",
        "Plain_BS",
        "Plain_BS_Rating",
        "Comments",
        "Plain_SC",
        "Plain_Rating",
        "Comments",
    ]
    head += [
        "CoT_BS",
        "CoT_BS_Rating",
        "Comments",
        "CoT_SC",
        "CoT_SC_Rating",
        "Comments",
        "Own Simplification",
    ]
    ratings = {
        "A": ("5;5;5;5;2", "4;5;5;5;4", "5;4;5;5;5", "3;5;4;5;5"),
        "B": ("5;5;5;5;3",) * 3 + ("5;5;5;5;5",),
    }
    _write_csv(
        d / "Radiologist_human_evaluation_results.csv",
        [head]
        + [[SENT[k]] + [c for s, r in zip(SIMP[k], ratings[k]) for c in (s, r, "")] + [""] for k in "AB"],
    )
    # footnote 2's coding: 4 = Mild, 5 = Healthy
    _write_csv(
        d / "Severity_ratings_by_radiologist.csv",
        [["Original Sentence", "Severity Level"], [SENT["A"], "4"], [SENT["B"], "5"]],
    )
    nat, low, high = "Not at all", "With low confidence", "With high confidence"
    _write_csv(
        d / "proc_laypeople1.csv",
        [
            YANG_LAY_HEADER,
            _lay(
                "A",
                "CoT_BS;CoT_SC",
                ("Not at all", nat, "Serious"),
                ("Completely", high, "I understand much better", "Mild"),
                "CoT_BS;CoT_SC",
                "Dummy_BS",
            ),
            _lay(
                "B",
                "Dummy_BS",
                ("Some parts of it", low, "Healthy"),
                ("Most of it", low, "It did not help", "Mild"),
                "Dummy_SC",
                "",
            ),
        ],
    )
    _write_csv(
        d / "proc_laypeople2.csv",
        [
            YANG_LAY_HEADER,
            _lay(
                "A",
                "Dummy_SC",
                ("Some parts of it", low, "Mild"),
                ("Most of it", high, "I understand slightly better", "Mild"),
                "Dummy_SC;CoT_SC",
                "Dummy_BS",
            ),
            _lay(
                "B",
                "CoT_SC",
                ("Not at all", nat, "Moderate"),
                ("Completely", high, "It further confused me", "Healthy"),
                "CoT_SC",
                "CoT_BS",
            ),
        ],
    )
    return d


def test_yang_release_is_read_as_released(yang_release):
    data = released.load_yang(yang_release)
    assert data.problems == [] and data.severity == {1: 4, 2: 5}
    assert data.info["rows_for_two_systems"] == 1 and data.info["empty_least"] == 1
    assert data.info["urgency_answers"] == 8 and data.info["urgency_same_as_q2"] == 8
    t1 = {(r["metric"], r["condition"]): (r["n"], r["computed"]) for r in released.yang_table1(data)}
    # the row standing for CoT_BS and CoT_SC counts for both, its original answers twice
    assert t1[("q1", "original")] == (5, 1.4)  # (1 + 1 + 2 + 2 + 1) / 5
    assert t1[("q3_mse", "original")] == (5, 2.4)  # errors -2, -2, 0, 0, -2
    assert t1[("q3_acc", "original")] == (5, 40.0)
    assert t1[("q1", "CoT_BS")] == (1, 4.0) and t1[("q1", "CoT_SC")] == (2, 4.0)
    assert t1[("q4", "CoT_SC")] == (2, 0.5) and t1[("q4", "CoT_BS")] == (1, 2.0)
    assert t1[("q3_mse", "Plain_BS")] == (1, 1.0) and t1[("q3_acc", "Plain_BS")] == (1, 0.0)
    assert t1[("correctness", "CoT_SC")] == (
        2,
        4.0,
    )  # the "c;c;h;s;s" cells; Plain_SC's is headed Plain_Rating
    assert t1[("simplicity", "Plain_SC")] == (2, 3.5)
    assert t1[("simplicity", "original")] == (0, None)  # not in the release
    t2 = {
        r["confidence"]: (r["n"], r["mse"], r["accuracy"])
        for r in released.yang_table2(data)
        if r["condition"] == "all"
    }
    assert t2 == {"not_at_all": (3, 4.0, 0.0), "low": (3, 0.333, 66.7), "high": (4, 0.0, 100.0)}
    t3, alpha = released.yang_table3(data)
    most = {r["system"]: r["majority_sentences"] for r in t3 if r["preference"] == "most"}
    least = {r["system"]: r["majority_sentences"] for r in t3 if r["preference"] == "least"}
    assert most == {"Plain_BS": 0, "Plain_SC": 1, "CoT_BS": 0, "CoT_SC": 2}  # B: a tie counts for both
    assert least == {"Plain_BS": 1, "Plain_SC": 0, "CoT_BS": 1, "CoT_SC": 0}
    from medsimp.humaneval.agreement import alpha_masi

    sets = [
        ("laypeople1", "1", frozenset({"CoT_BS", "CoT_SC"})),
        ("laypeople2", "1", frozenset({"Plain_SC", "CoT_SC"})),
    ]
    sets += [("laypeople1", "2", frozenset({"Plain_SC"})), ("laypeople2", "2", frozenset({"CoT_SC"}))]
    assert alpha["alpha_masi_most"] == round(alpha_masi(sets), 3)
    assert alpha["alpha_masi_least"] is not None  # the empty answer is no rating (nltk divides by zero on it)


def test_humaneval_released_command_reads_yang(yang_release, tmp_path, capsys):
    from medsimp.cli import main

    out = tmp_path / "out"
    assert main(["humaneval", "released", "--data", str(yang_release), "--output", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "agreement.json",
        "stats.json",
        "table1.csv",
        "table2.csv",
        "table3.csv",
    ]
    table1 = (out / "table1.csv").read_text(encoding="utf-8")
    assert "q1,original,5,1.4,1.801,False" in table1
    for p in out.glob("*.*"):  # numbers only: no sentence or simplification of the release
        text = p.read_text(encoding="utf-8")
        assert SENT["A"] not in text and "a3" not in text.split("problems")[0]


def test_yang_release_unknown_answer_is_one_line(yang_release, tmp_path):
    path = yang_release / "proc_laypeople2.csv"
    path.write_text(
        path.read_text(encoding="utf-8").replace("It further confused me", "Dunno"), encoding="utf-8"
    )
    data = released.load_yang(yang_release)
    assert data.problems == ["proc_laypeople2.csv:3: unknown answer 'Dunno'"] and len(data.lay) == 3


SHARED = ROOT.parent / "shared"


@pytest.mark.slow
@pytest.mark.skipif(
    not (SHARED / "data" / "yang-human-eval").is_dir(), reason="no ../shared/data/yang-human-eval"
)
def test_yang_release_reproduces_the_paper_where_it_can():
    """The real release (skipped without ../shared): Tables 1-3 and alpha beside the paper's."""
    res = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "check_humaneval_data.py"),
            "--data",
            str(SHARED / "data"),
            "--papers",
            str(SHARED / "papers"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "prompt set yang2024 vs radiology-self-correction-yang.txt: verbatim" in res.stdout
    assert "Table 1: 37 cells agree" in res.stdout


def test_non_finite_ratings_are_reported_not_dropped(tmp_path):
    """Issue 35 item 7: `1e999` and `nan` cells vanished (n 40 -> 38, mean 4.725 -> 4.895)."""
    _workbook(
        tmp_path / "en" / "spreadsheets" / "en_system1_0.xlsx",
        [_row(0, "1e999", 0.0, 0.0), _row(1, "nan", 1.0, 0.0), _row(2, 1.0, 1.0, 0.0)],
    )
    ratings, problems, _ = released.load_multicochrane(tmp_path)
    assert problems == [
        "en_system1_0.xlsx:2: factuality inf is not on the 0..2 scale",
        "en_system1_0.xlsx:3: factuality nan is not on the 0..2 scale",
    ]
    assert sorted((r.item, r.scale) for r in ratings if r.scale == "factuality") == [(2, "factuality")]


def test_a_csv_cell_over_the_field_limit_is_one_line(yang_release, tmp_path, capsys):
    """A cell longer than the csv module's field limit (131,072 characters; the issue's was
    200 MB) was an internal error: one line naming the file, exit 2, nothing written."""
    import shutil

    from medsimp.cli import main

    data = tmp_path / "data"
    shutil.copytree(yang_release, data)
    victim = data / released.YANG_FILES[0]
    victim.write_text(victim.read_text(encoding="utf-8") + '"' + "x" * 200_000 + '",1\n', encoding="utf-8")
    out = tmp_path / "out"
    assert main(["humaneval", "released", "--data", str(data), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert victim.name in err[-1] and "field limit" in err[-1] and "Traceback" not in "\n".join(err), err
    assert not out.exists()
