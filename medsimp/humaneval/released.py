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

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medsimp.humaneval.agreement import randolph_kappa

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
        if index is None or index != int(index):
            continue  # the authors' summary rows below the items carry no index
        for scale in SCALES:
            value = _number(row[cols[scale]] if cols[scale] < len(row) else None)
            if value is None:
                continue  # not rated (e.g. the empty annotator2 workbooks of fa)
            if value != int(value) or int(value) not in SCALES[scale]:
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
