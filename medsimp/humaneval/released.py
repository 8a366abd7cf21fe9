"""Read the human evaluations the papers' authors released, into the kit's tables.

MultiCochrane (Joseph et al. 2023), repository SebaJoe/MultiCochrane, `data/eval_data/<lang>/`:
- `csvs/` (`csv/` for fr): the rated system outputs, one row per item (`input`, `output`,
  `gold`, sometimes `doi`), tab- or comma-separated;
- `spreadsheets/[<annotator folder>/]<lang>_<system>[...].xlsx`: one workbook per system and
  annotator. The first sheet holds the annotator's ratings: a header row (`original english
  sentence`, `simple generated sentence`, `simple gold sentence`, `Are there
  hallucinations?`, `Are deletions excessive?`, `Factual`, `Fluency`, `Simplicity`), one row
  per item whose first cell is the item index, then the authors' summary rows (no index).
  Further sheets are other annotators' copies (for agreement) and are not read: each
  annotator's own ratings come from their own workbook. Scales follow App. A (factuality and
  fluency 0 = best .. 2 = severe; simplicity -2 oversimplified .. 0 ideal .. +2
  under-simplified).

System names in file names: `gold` (reference), `system1_0` / `all_0` (mT5 trained on all
pairs, r >= 0: unfiltered), `system2_0.5` / `all_0.5` (mT5 on pairs with r >= 0.5:
filtered), `system3_plain` / `gpt_plain` (GPT-3, plain prompt), `flan_t5`, `flan_t5_zs`,
`gpt_trans_en` (GPT simplification in English, then translated).
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medsimp.csvcells import csv_errors
from medsimp.humaneval.agreement import alpha_masi, randolph_kappa

SCALES = {"factuality": (0, 1, 2), "fluency": (0, 1, 2), "simplicity": (-2, -1, 0, 1, 2)}
_HEADER = {
    "factual": "factuality",
    "fluency": "fluency",
    "simplicity": "simplicity",
    "are there hallucinations?": "hallucination",
    "are deletions excessive?": "deletion",
}
MT5_UNFILTERED, MT5_FILTERED = "mt5", "mt5_filtered"


@dataclass(frozen=True)
class Rating:
    language: str
    system: str
    annotator: str
    item: int
    scale: str
    value: int


def system_of(name: str) -> str | None:
    """System id from a spreadsheet or CSV file name (None when unrecognised)."""
    n = name.lower()
    for pattern, system in (
        ("gold", "gold"),
        ("flan_t5_zs", "flan_t5_zs"),
        ("flan_t5", "flan_t5"),
        ("gpt_trans_en", "gpt_trans_en"),
        ("gpt_reader", "gpt_reader"),
        ("system3", "gpt_plain"),
        ("gpt_plain", "gpt_plain"),
        ("system2", MT5_FILTERED),
        ("_0.5", MT5_FILTERED),
        ("system1", MT5_UNFILTERED),
        ("_0", MT5_UNFILTERED),
    ):
        if pattern in n:
            return system
    return None


def _number(cell: Any) -> float | None:
    if cell is None or (isinstance(cell, str) and not cell.strip()):
        return None
    try:
        return float(cell)
    except (TypeError, ValueError):
        return None


def read_workbook(path: Path, language: str, annotator: str, problems: list[str]) -> list[Rating]:
    """The ratings of the first sheet of one released workbook."""
    import openpyxl

    system = system_of(path.stem)
    if system is None:
        problems.append(f"{path.name}: unknown system in the file name")
        return []
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for a broken file
        problems.append(f"{path.name}: not a readable workbook ({type(exc).__name__})")
        return []
    try:
        rows = list(wb.worksheets[0].iter_rows(values_only=True))
    finally:
        wb.close()
    if not rows:
        return []
    cols = {}
    for i, head in enumerate(rows[0]):
        key = _HEADER.get(str(head).strip().lower()) if head is not None else None
        if key and key not in cols:
            cols[key] = i
    if not {"factuality", "fluency", "simplicity"} <= set(cols):
        problems.append(f"{path.name}:1: no Factual/Fluency/Simplicity columns")
        return []
    out: list[Rating] = []
    for line, row in enumerate(rows[1:], start=2):
        index = _number(row[0]) if row else None
        if index is None or not math.isfinite(index) or index != int(index):
            continue  # the authors' summary rows below the items carry no index
        for scale in SCALES:
            value = _number(row[cols[scale]] if cols[scale] < len(row) else None)
            if value is None:
                continue  # not rated (e.g. the empty annotator2 workbooks of fa)
            # inf (`1e999`) and NaN are not ratings either: reported, never dropped silently
            if not math.isfinite(value) or value != int(value) or int(value) not in SCALES[scale]:
                problems.append(
                    f"{path.name}:{line}: {scale} {value:g} is not on the "
                    f"{min(SCALES[scale])}..{max(SCALES[scale])} scale"
                )
                continue
            out.append(Rating(language, system, annotator, int(index), scale, int(value)))
    return out


def load_multicochrane(root: str | Path) -> tuple[list[Rating], list[str], dict[str, Any]]:
    """(ratings, problems, info) from a folder holding `<lang>/spreadsheets/...` (the
    repository's `data/eval_data`, or the repository root)."""
    root = Path(root)
    if (root / "data" / "eval_data").is_dir():
        root = root / "data" / "eval_data"
    problems: list[str] = []
    ratings: list[Rating] = []
    seen: dict[tuple, str] = {}
    duplicates: list[str] = []
    items_in_csv: dict[tuple[str, str], int] = {}
    for lang_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        language = lang_dir.name
        sheets = lang_dir / "spreadsheets"
        for path in sorted(sheets.rglob("*.xlsx")) if sheets.is_dir() else []:
            rel = path.relative_to(sheets)
            annotator = rel.parts[0] if len(rel.parts) > 1 else "a0"
            got = read_workbook(path, language, annotator, problems)
            if not got:
                continue
            # a workbook copied into another annotator's folder rates nothing new
            key = (language, got[0].system, tuple(sorted((r.item, r.scale, r.value) for r in got)))
            if key in seen:
                duplicates.append(f"{language}/{rel} = {seen[key]}")
                continue
            seen[key] = f"{language}/{rel}"
            ratings += got
        for csv_dir in (lang_dir / "csvs", lang_dir / "csv"):
            for path in sorted(csv_dir.glob("*.csv")) if csv_dir.is_dir() else []:
                system = system_of(path.stem)
                if system:
                    items_in_csv[(language, system)] = _csv_rows(path, problems)
    info = {
        "duplicate_workbooks": duplicates,
        "csv_items": {f"{lang}/{system}": n for (lang, system), n in sorted(items_in_csv.items())},
    }
    return ratings, problems, info


def _csv_rows(path: Path, problems: list[str]) -> int:
    import pandas as pd

    try:
        sep = "\t" if "\t" in path.read_text(encoding="utf-8").split("\n", 1)[0] else ","
        return int(len(pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False)))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        problems.append(f"{path.name}: unreadable CSV ({type(exc).__name__})")
        return 0


def means(ratings: list[Rating]) -> list[dict[str, Any]]:
    """Table 5 layout: per language and system, mean of each scale over all annotators'
    ratings, with n ratings and the number of annotators."""
    groups: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    annotators: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in ratings:
        groups[(r.language, r.system)][r.scale].append(r.value)
        annotators[(r.language, r.system)].add(r.annotator)
    rows = []
    for (lang, system), scales in sorted(groups.items()):
        row: dict[str, Any] = {
            "language": lang,
            "system": system,
            "annotators": len(annotators[(lang, system)]),
        }
        for scale in SCALES:
            v = scales.get(scale, [])
            row[f"{scale}_n"] = len(v)
            row[scale] = round(sum(v) / len(v), 4) if v else None
        rows.append(row)
    return rows


def agreement(ratings: list[Rating]) -> list[dict[str, Any]]:
    """Randolph's free-marginal kappa per language and scale, units = (system, item) rated
    by at least two annotators."""
    units: dict[tuple[str, str], dict[tuple[str, int], list[int]]] = defaultdict(lambda: defaultdict(list))
    for r in ratings:
        units[(r.language, r.scale)][(r.system, r.item)].append(r.value)
    rows = []
    for (lang, scale), by_unit in sorted(units.items()):
        shared = {u: v for u, v in by_unit.items() if len(v) >= 2}
        kappa = randolph_kappa(shared, len(SCALES[scale])) if shared else None
        rows.append(
            {
                "language": lang,
                "scale": scale,
                "units": len(shared),
                "randolph_kappa": None if kappa is None else round(kappa, 4),
            }
        )
    return rows


def section_5_3_checks(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What Joseph et al. §5.3 states, checked on the computed means (lower = better for
    factuality and fluency): (a) English mT5 outputs are rated more factual and fluent than
    those of the other languages; (b) filtering improves factuality and fluency, except for
    French and Farsi."""
    cell = {(r["language"], r["system"]): r for r in table}
    langs = sorted({lang for lang, _ in cell})
    checks = []
    for system in (MT5_UNFILTERED, MT5_FILTERED):
        en = cell.get(("en", system))
        for scale in ("factuality", "fluency"):
            for lang in langs:
                other = cell.get((lang, system))
                if lang == "en" or en is None or other is None:
                    continue
                checks.append(
                    {
                        "claim": f"en {system} more {scale[:-3] if scale == 'factuality' else 'fluent'} than {lang}",
                        "expected": True,
                        "en": en[scale],
                        lang: other[scale],
                        "holds": en[scale] < other[scale],
                    }
                )
    for lang in langs:
        unf, fil = cell.get((lang, MT5_UNFILTERED)), cell.get((lang, MT5_FILTERED))
        if unf is None or fil is None:
            continue
        for scale in ("factuality", "fluency"):
            expected = lang not in ("fr", "fa")
            improves = fil[scale] < unf[scale]
            checks.append(
                {
                    "claim": f"{lang}: filtering improves {scale}",
                    "expected": expected,
                    "unfiltered": unf[scale],
                    "filtered": fil[scale],
                    "holds": improves == expected,
                }
            )
    return checks


# --- Yang et al. (2024), repository Ziyu-Yang/Human-Evaluation ------------------------------
# Files: `Original_setences_with_generated_simplifications.csv` (the 40 sentences and the four
# systems' simplifications), `Radiologist_human_evaluation_results.csv` (per system a
# "c;c;h;s;s" cell: correctness, completeness, hallucination, structure, simplicity on 1-5;
# the Plain_SC rating column is headed `Plain_Rating`), `Severity_ratings_by_radiologist.csv`
# (footnote 2's coding: 1 = Critical ... 5 = Healthy) and `proc_laypeople1..8.csv` (one row
# per sentence: the Stage2 simplification and its `Version`, Stage1/Stage2 answers in Fig. 1's
# words, Stage3 most/least liked as ";"-joined versions; `Dummy_BS`/`Dummy_SC` are Plain_BS/
# Plain_SC). Read as released: a Version naming two systems ("CoT_BS;CoT_SC": the sentences
# whose two CoT simplifications are identical) counts for both, as the paper's Table 1 does
# (n = 88 for CoT_BS and CoT_SC, 336 for the original); an empty Stage3 answer is no vote
# (Table 3) and no rating (alpha). The files also ask "Can you guess the medical urgency of
# the condition described in the sentence?" (Stage1 and Stage2, Q2's three answers), which
# the paper neither shows (Fig. 1) nor reports: it is read and summarised, not tabled.

YANG_SYSTEMS = ("Plain_BS", "Plain_SC", "CoT_BS", "CoT_SC")
YANG_FILES = (
    "Original_setences_with_generated_simplifications.csv",
    "Radiologist_human_evaluation_results.csv",
    "Severity_ratings_by_radiologist.csv",
)
_YANG_VERSION = {"Dummy_BS": "Plain_BS", "Dummy_SC": "Plain_SC", "CoT_BS": "CoT_BS", "CoT_SC": "CoT_SC"}
_YANG_Q1 = {"Not at all": 1, "Some parts of it": 2, "Most of it": 3, "Completely": 4}
_YANG_Q2 = {"Not at all": 1, "With low confidence": 2, "With high confidence": 3}
_YANG_Q4 = {
    "It further confused me": -1,
    "It did not help": 0,
    "I understand slightly better": 1,
    "I understand much better": 2,
}
# footnote 2: Critical = 1 ... Healthy = 5 (App. A.2 numbers the other way; MSE and accuracy
# are the same under either)
_YANG_Q3 = {"Critical": 1, "Serious": 2, "Moderate": 3, "Mild": 4, "Healthy": 5}
YANG_EXPERT_SCALES = ("correctness", "completeness", "hallucination", "structure", "simplicity")

# The paper's numbers (Table 1, Table 2, Table 3, Sec. 6.4's alpha), for the comparison.
YANG_PAPER_TABLE1 = {
    "correctness": (5.000, 4.725, 4.650, 4.500, 4.625),
    "completeness": (5.000, 4.900, 4.675, 4.775, 4.875),
    "hallucination": (5.000, 4.925, 4.900, 4.850, 4.825),
    "structure": (5.000, 4.850, 4.900, 4.825, 4.875),
    "simplicity": (1.500, 3.100, 4.200, 4.375, 4.575),
    "q1": (1.801, 2.475, 3.225, 3.341, 3.602),
    "q2": (1.579, 1.825, 2.325, 2.398, 2.534),
    "q3_mse": (1.699, 1.650, 1.188, 1.341, 1.068),
    "q3_acc": (38.4, 38.8, 38.8, 42.0, 52.3),
    "q4": (None, 0.613, 1.288, 1.477, 1.705),
}
YANG_PAPER_TABLE2 = {"mse": (1.920, 1.380, 0.930), "accuracy": (30.7, 39.8, 55.5)}
YANG_PAPER_TABLE3 = {"most": (2, 7, 15, 27), "least": (32, 7, 5, 2)}
YANG_PAPER_ALPHA = {"most": 0.177, "least": 0.132}
_CONDITIONS = ("original",) + YANG_SYSTEMS


@dataclass(frozen=True)
class YangLay:
    """One layperson's answers on one sentence (Q3 in footnote 2's coding)."""

    rater: str
    item: int
    systems: tuple[str, ...]
    original: tuple[int, int, int]  # q1, q2, q3
    simplified: tuple[int, int, int, int]  # q1, q2, q3, q4
    urgency: tuple[int | None, int | None]  # the unreported "medical urgency" question, stage 1, 2
    most: frozenset
    least: frozenset


@dataclass
class YangData:
    severity: dict[int, int]  # item -> radiologist severity, footnote 2's coding
    expert: dict[tuple[int, str], tuple[int, ...]]  # (item, system) -> the five ratings
    lay: list[YangLay]
    problems: list[str]
    info: dict[str, Any]


def is_yang(root: str | Path) -> bool:
    return all((Path(root) / name).is_file() for name in YANG_FILES)


def _read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8-sig") as fh, csv_errors(path):
        return list(csv.reader(fh))


def _key(text: str) -> str:
    return " ".join(text.split())


def load_yang(root: str | Path) -> YangData:
    """Yang et al.'s released files, as released (see the comment above). Problems name the file
    and line, never the text (the sentences derive from MIMIC-III)."""
    root = Path(root)
    problems: list[str] = []
    original = _read_csv(root / YANG_FILES[0])
    head = original[0] if original else []
    if not original or [h.strip() for h in head[1:5]] != list(YANG_SYSTEMS):
        raise ValueError(
            f"{YANG_FILES[0]}:1: expected the columns Original Sentence, {', '.join(YANG_SYSTEMS)}"
        )
    items = {_key(row[0]): i for i, row in enumerate(original[1:], start=1)}
    texts = {
        (i, s): _key(row[1 + k])
        for i, row in enumerate(original[1:], start=1)
        for k, s in enumerate(YANG_SYSTEMS)
    }
    severity: dict[int, int] = {}
    for line, row in enumerate(_read_csv(root / YANG_FILES[2])[1:], start=2):
        item = items.get(_key(row[0])) if row else None
        if item is None or len(row) < 2 or row[1].strip() not in ("1", "2", "3", "4", "5"):
            problems.append(f"{YANG_FILES[2]}:{line}: unknown sentence or severity not 1-5")
            continue
        severity[item] = int(row[1])
    rad = _read_csv(root / YANG_FILES[1])
    cols = {s: rad[0].index(s) for s in YANG_SYSTEMS if s in rad[0]} if rad else {}
    if len(cols) != len(YANG_SYSTEMS):
        raise ValueError(f"{YANG_FILES[1]}:1: expected a column per system {YANG_SYSTEMS}")
    expert: dict[tuple[int, str], tuple[int, ...]] = {}
    for line, row in enumerate(rad[1:], start=2):
        item = items.get(_key(row[0])) if row else None
        if item is None:
            problems.append(f"{YANG_FILES[1]}:{line}: sentence not in {YANG_FILES[0]}")
            continue
        for s, c in cols.items():
            parts = row[c + 1].split(";") if len(row) > c + 1 else []
            if len(parts) != 5 or not all(p.strip() in ("1", "2", "3", "4", "5") for p in parts):
                problems.append(f"{YANG_FILES[1]}:{line}: {s} rating is not five 1-5 numbers")
                continue
            expert[(item, s)] = tuple(int(p) for p in parts)
    lay: list[YangLay] = []
    mismatched = 0
    urgency_pairs: list[tuple[int, int]] = []
    for path in sorted(root.glob("proc_laypeople*.csv")):
        rows = _read_csv(path)
        if not rows or len(rows[0]) < 15:
            problems.append(f"{path.name}:1: not a processed layperson file")
            continue
        rater = path.stem.replace("proc_", "")
        for line, row in enumerate(rows[1:], start=2):
            where = f"{path.name}:{line}"
            item = items.get(_key(row[0]))
            systems = tuple(_YANG_VERSION.get(v.strip(), "") for v in row[2].split(";"))
            if item is None or not all(systems):
                problems.append(f"{where}: unknown sentence or version")
                continue
            if any(texts[(item, s)] != _key(row[1]) for s in systems):
                mismatched += 1
            try:
                orig = (_YANG_Q1[row[3]], _YANG_Q2[row[4]], _YANG_Q3[row[6]])
                simp = (_YANG_Q1[row[7]], _YANG_Q2[row[8]], _YANG_Q3[row[11]], _YANG_Q4[row[10]])
                choice = [
                    frozenset(_YANG_VERSION[v.strip()] for v in row[c].split(";") if v.strip())
                    for c in (12, 14)
                ]
            except KeyError as exc:
                problems.append(f"{where}: unknown answer {exc.args[0]!r}"[:200])
                continue
            urgency = (_YANG_Q2.get(row[5]), _YANG_Q2.get(row[9]))
            urgency_pairs += [(u, q) for u, q in zip(urgency, (orig[1], simp[1])) if u is not None]
            lay.append(YangLay(rater, item, systems, orig, simp, urgency, choice[0], choice[1]))
    info = {
        "sentences": len(items),
        "raters": len({x.rater for x in lay}),
        "lay_rows": len(lay),
        "rows_for_two_systems": sum(len(x.systems) > 1 for x in lay),
        "stage2_text_differs_from_version": mismatched,
        "empty_most": sum(not x.most for x in lay),
        "empty_least": sum(not x.least for x in lay),
        "urgency_answers": len(urgency_pairs),
        "urgency_same_as_q2": sum(u == q for u, q in urgency_pairs),
        "urgency_empty": sum(u is None for x in lay for u in x.urgency),
        "severity_counts": {
            name: sum(v == code for v in severity.values()) for name, code in _YANG_Q3.items()
        },
    }
    return YangData(severity, expert, lay, problems, info)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _q3(pairs: list[tuple[int, int]]) -> tuple[float | None, float | None]:
    """(MSE, accuracy in %) of (guess, reference) pairs."""
    if not pairs:
        return None, None
    return (
        sum((g - r) ** 2 for g, r in pairs) / len(pairs),
        100.0 * sum(g == r for g, r in pairs) / len(pairs),
    )


def _lay_units(data: YangData) -> list[tuple[str, YangLay]]:
    """(condition, row) once per system a row stands for: its original-stage answers count once
    per such system too (the paper's n = 336 for the original)."""
    return [(s, x) for x in data.lay if x.item in data.severity for s in x.systems]


def yang_table1(data: YangData) -> list[dict[str, Any]]:
    """Table 1 (radiologist and laypeople rows) beside the paper's numbers."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    q3: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (_item, s), ratings in sorted(data.expert.items()):
        for scale, v in zip(YANG_EXPERT_SCALES, ratings):
            values[(scale, s)].append(v)
    for s, x in _lay_units(data):
        ref = data.severity[x.item]
        for cond, (q1, q2, g) in (("original", x.original), (s, x.simplified[:3])):
            values[("q1", cond)].append(q1)
            values[("q2", cond)].append(q2)
            q3[cond].append((g, ref))
        values[("q4", s)].append(x.simplified[3])
    rows = []
    for metric, paper in YANG_PAPER_TABLE1.items():
        for cond, expected in zip(_CONDITIONS, paper):
            if metric in ("q3_mse", "q3_acc"):
                mse, acc = _q3(q3[cond])
                got, n = (mse if metric == "q3_mse" else acc), len(q3[cond])
            else:
                found = values.get((metric, cond), [])
                got, n = _mean(found), len(found)
            rows.append(_compare(metric, cond, n, got, expected, 1 if metric == "q3_acc" else 3))
    return rows


def _compare(metric: str, cond: str, n: int, got: float | None, paper: float | None, digits: int) -> dict:
    shown = None if got is None else round(got, digits)
    return {
        "metric": metric,
        "condition": cond,
        "n": n,
        "computed": shown,
        "paper": paper,
        "agrees": None if shown is None or paper is None else abs(shown - paper) < 10**-digits / 2 + 1e-9,
    }


def yang_table2(data: YangData) -> list[dict[str, Any]]:
    """Table 2: Q3 MSE and accuracy by the confidence answered with it (Q2), per condition and
    pooled ("all": every original and simplified answer, each row counted per system it stands
    for); the pooled rows carry the paper's numbers."""
    groups: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for s, x in _lay_units(data):
        ref = data.severity[x.item]
        for cond, (_q1, q2, g) in (("original", x.original), (s, x.simplified[:3])):
            groups[(cond, q2)].append((g, ref))
            groups[("all", q2)].append((g, ref))
    rows = []
    for cond in ("all",) + _CONDITIONS:
        for level, name in ((1, "not_at_all"), (2, "low"), (3, "high")):
            mse, acc = _q3(groups[(cond, level)])
            paper = cond == "all"
            rows.append(
                {
                    "condition": cond,
                    "confidence": name,
                    "n": len(groups[(cond, level)]),
                    "mse": None if mse is None else round(mse, 3),
                    "paper_mse": YANG_PAPER_TABLE2["mse"][level - 1] if paper else None,
                    "accuracy": None if acc is None else round(acc, 1),
                    "paper_accuracy": YANG_PAPER_TABLE2["accuracy"][level - 1] if paper else None,
                }
            )
    return rows


def yang_table3(data: YangData) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Table 3 (per system, the sentences where it holds the most votes as most / least liked;
    tied systems each count) and Krippendorff's alpha with MASI over the eight raters' sets
    (empty answers left out), beside the paper's."""
    rows = []
    alpha: dict[str, Any] = {}
    for name, attr in (("most", "most"), ("least", "least")):
        votes: dict[int, Counter] = defaultdict(Counter)
        for x in data.lay:
            votes[x.item].update(getattr(x, attr))
        majority = Counter(s for c in votes.values() for s in c if c[s] == max(c.values()))
        for k, s in enumerate(YANG_SYSTEMS):
            rows.append(
                {
                    "preference": name,
                    "system": s,
                    "votes": sum(c[s] for c in votes.values()),
                    "majority_sentences": majority[s],
                    "paper": YANG_PAPER_TABLE3[name][k],
                }
            )
        a = alpha_masi((x.rater, str(x.item), getattr(x, attr)) for x in data.lay if getattr(x, attr))
        alpha[f"alpha_masi_{name}"] = None if a is None else round(a, 3)
        alpha[f"paper_alpha_{name}"] = YANG_PAPER_ALPHA[name]
    return rows, alpha
