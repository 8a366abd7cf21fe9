"""Joseph et al. (2023) App. C / Table 7 from the released English workbooks.

Usage: python scripts/multicochrane_agreement.py --data DIR [--json FILE]

DIR is the SebaJoe/MultiCochrane repository (as the `fetch` tool brings it, or a clone) or
its `data/eval_data/en/spreadsheets` folder. Exit 0 with a note when DIR is absent.

What the extra sheets are (checked by this script, printed under "sheets"): each English
workbook of `anno0/` (and its copy in `anno3/`) carries, after the annotator's own first
sheet, full-layout sheets named `kathryn` and `keziah` that equal, item for item, the first
sheets of the `anno1/` and `anno2/` workbooks of the same system, plus `vish`/`kat`/`kez`
sheets of coded columns and, at the bottom of the first sheet, the authors' own agreement
cells (rows `Vishnesh`, `Kathryn`, `Keziah`, `Final`). So the extra sheets are the other
two raters' ratings of the SAME 100 outputs per system: the English items rated by all
three English raters, i.e. App. C's shared set (the released files hold three raters; the
paper says "all human evaluators", and the es/fr/fa raters' English ratings are not
released). Per system 100 items; gold, mT5 (r=0), mT5 (r=0.5) and GPT-3 plain: 400 items.

Agreement: Randolph's free-marginal kappa (`medsimp.humaneval.agreement.randolph_kappa`)
with q = 3 (factuality, fluency: 0..2) and q = 5 (simplicity: -2..2), units = (system, item)
with >= 2 ratings; "all" pools the units of the three criteria: (mean P_o - mean 1/q) /
(1 - mean 1/q), which equals Randolph's formula when q is the same for every unit (our
reading: Table 7's "all combined" is not defined in the text).
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medsimp.humaneval.agreement import randolph_kappa  # noqa: E402
from medsimp.humaneval.released import SCALES, system_of  # noqa: E402

HEADER = {"factual": "factuality", "fluency": "fluency", "simplicity": "simplicity"}


def read_sheet(rows: list[tuple]) -> dict[int, dict[str, int]]:
    """item index -> {scale: value} of one full-layout sheet (header row with Factual,
    Fluency, Simplicity; item rows whose first cell is the index; summary rows skipped)."""
    if not rows:
        return {}
    cols = {}
    for i, head in enumerate(rows[0]):
        key = HEADER.get(str(head).strip().lower()) if head is not None else None
        if key and key not in cols:
            cols[key] = i
    if set(cols) != set(HEADER.values()) or str(rows[0][0]).strip().lower() in HEADER:
        return {}  # the coded vish/kat/kez sheets have no index column
    out: dict[int, dict[str, int]] = {}
    for row in rows[1:]:
        try:
            index = float(row[0])
        except (TypeError, ValueError, IndexError):
            continue
        if index != int(index):
            continue
        values = {}
        for scale, c in cols.items():
            try:
                v = float(row[c])
            except (TypeError, ValueError, IndexError):
                continue
            if v == int(v) and int(v) in SCALES[scale]:
                values[scale] = int(v)
        out[int(index)] = values
    return out


EN_SHEETS = "data/eval_data/en/spreadsheets"


def workbooks(folder: Path) -> list[tuple[Path, Any]]:
    """(path relative to the English spreadsheets folder, file or bytes) of every English
    workbook: from a work tree, or from the bare git directory `fetch` brings
    (`/work/.mirror/<owner>+<name>/repo`, read with `git show HEAD:<path>`)."""
    if (folder / "objects").is_dir() and (folder / "HEAD").is_file():
        listed = subprocess.run(
            ["git", "--git-dir", str(folder), "ls-tree", "-r", "--name-only", "HEAD", EN_SHEETS],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        out = []
        for name in sorted(n for n in listed if n.endswith(".xlsx")):
            blob = subprocess.run(
                ["git", "--git-dir", str(folder), "show", f"HEAD:{name}"], capture_output=True, check=True
            ).stdout
            out.append((Path(name).relative_to(EN_SHEETS), io.BytesIO(blob)))
        return out
    if (folder / EN_SHEETS).is_dir():
        folder = folder / EN_SHEETS
    return [(p.relative_to(folder), p) for p in sorted(folder.glob("anno*/*.xlsx"))]


def _rows(source: Any) -> dict[str, list[tuple]]:
    import openpyxl

    if isinstance(source, io.BytesIO):
        source.seek(0)
    wb = openpyxl.load_workbook(source, read_only=True, data_only=True)
    try:
        return {ws.title: list(ws.iter_rows(values_only=True)) for ws in wb.worksheets}
    finally:
        wb.close()


def combined_kappa(units_by_scale: dict[str, dict[Any, list[int]]]) -> float | None:
    """Randolph's kappa over the units of several criteria, each with its own 1/q."""
    p_o, p_e = [], []
    for scale, units in units_by_scale.items():
        for ratings in units.values():
            n = len(ratings)
            if n < 2:
                continue
            p_o.append(sum(c * (c - 1) for c in Counter(ratings).values()) / (n * (n - 1)))
            p_e.append(1.0 / len(SCALES[scale]))
    if not p_o:
        return None
    po, pe = sum(p_o) / len(p_o), sum(p_e) / len(p_e)
    return (po - pe) / (1.0 - pe)


def authors_cells(rows: list[tuple]) -> dict[str, list[float]]:
    """The authors' agreement rows at the bottom of a first sheet: label -> numbers."""
    out = {}
    for row in rows:
        labels = [
            c for c in row if isinstance(c, str) and c.strip() in {"Vishnesh", "Kathryn", "Keziah", "Final"}
        ]
        if labels:
            nums = [float(c) for c in row if isinstance(c, (int, float))]
            out[labels[0].strip()] = [round(x, 4) for x in nums]
    return out


def analyse(folder: Path) -> dict[str, Any]:
    own: dict[tuple[str, str], dict[int, dict[str, int]]] = {}  # (annotator dir, system)
    with_extra: dict[str, tuple[Path, dict[str, list[tuple]]]] = {}
    for path, source in workbooks(folder):
        system = system_of(path.stem)
        if system is None:
            continue
        sheets = _rows(source)
        first = next(iter(sheets.values()))
        own[(path.parent.name, system)] = read_sheet(first)
        full_extra = [t for t, rows in list(sheets.items())[1:] if read_sheet(rows)]
        if full_extra and system not in with_extra:
            with_extra[system] = (path, sheets)
    report: dict[str, Any] = {"sheets": [], "kappa": {}, "authors_cells": {}}
    pooled: dict[str, dict[Any, list[int]]] = defaultdict(dict)
    for system, (path, sheets) in sorted(with_extra.items()):
        titles = list(sheets)
        raters = {"first": read_sheet(sheets[titles[0]])}
        for title in titles[1:]:
            got = read_sheet(sheets[title])
            if not got:
                continue
            raters[title] = got
            same = {
                d: sum(got.get(i) == r.get(i) for i in got)
                for (d, s), r in own.items()
                if s == system and d != path.parent.name
            }
            report["sheets"].append(
                {
                    "workbook": f"{path.parent.name}/{path.name}",
                    "sheet": title,
                    "items": len(got),
                    "items_equal_to_first_sheet_of": same,
                }
            )
        per: dict[str, dict[Any, list[int]]] = {}
        for scale in SCALES:
            units = {}
            for i in sorted(raters["first"]):
                vals = [r[i][scale] for r in raters.values() if i in r and scale in r[i]]
                units[(system, i)] = vals
            per[scale] = units
            pooled[scale].update(units)
        row = {s: randolph_kappa(u, len(SCALES[s])) for s, u in per.items()}
        row["all"] = combined_kappa(per)
        row["items"] = len(raters["first"])
        row["raters"] = len(raters)
        report["kappa"][system] = {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}
        report["authors_cells"][system] = authors_cells(sheets[titles[0]])
    total = {s: randolph_kappa(u, len(SCALES[s])) for s, u in pooled.items()}
    total["all"] = combined_kappa(dict(pooled))
    report["kappa"]["pooled"] = {
        **{k: round(v, 4) for k, v in total.items() if v is not None},
        "items": len(pooled["factuality"]),
    }
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the fetched SebaJoe/MultiCochrane folder")
    ap.add_argument("--json", help="write the report here too")
    args = ap.parse_args(argv)
    folder = Path(args.data)
    if not folder.exists():
        print(f"{folder}: not found; nothing to check")
        return 0
    report = analyse(folder)
    for s in report["sheets"]:
        print(
            f"{s['workbook']} sheet {s['sheet']!r}: {s['items']} items; equal to: {s['items_equal_to_first_sheet_of']}"
        )
    print("\nRandolph's kappa (3 raters, units = items rated by >= 2)")
    print(f"{'system':14} {'items':>5} {'fact':>7} {'flu':>7} {'simp':>7} {'all':>7}")
    for system, k in report["kappa"].items():
        print(
            f"{system:14} {k['items']:>5} {k.get('factuality', float('nan')):7.3f} "
            f"{k.get('fluency', float('nan')):7.3f} {k.get('simplicity', float('nan')):7.3f} "
            f"{k.get('all', float('nan')):7.3f}"
        )
    print("\nThe authors' own cells at the bottom of each first sheet:")
    for system, cells in report["authors_cells"].items():
        print(f"  {system}: {cells}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
