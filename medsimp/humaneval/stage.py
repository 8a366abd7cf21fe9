"""The human-evaluation stages, one function per `medsimp humaneval` action:

- `forms`: offline HTML forms (expert, layperson with a Latin-square assignment,
  MultiCochrane) from a table of (source, system outputs), plus forms.xlsx and manifest.json;
- `analyze`: validate the filled CSVs and write Table 1 (means), Table 2 (severity MSE and
  accuracy by confidence), Table 3 (majority preference votes), agreement, metric-human
  correlations, PNG plots and DVC plots data;
- `released`: the authors' released ratings as released (Yang et al.'s or MultiCochrane's).

Each writes its output folder and returns an `Outcome`; the command prints the epilogue.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medsimp import lineage
from medsimp.atomic import atomic_dir, atomic_file, write_json
from medsimp.config import shown_path
from medsimp.csvcells import cell_escape, csv_errors
from medsimp.errors import InputError
from medsimp.humaneval import plots, tables
from medsimp.humaneval import released as rel
from medsimp.humaneval.design import build_manifest, load_items
from medsimp.humaneval.ingest import IngestError, ingest
from medsimp.params_schema import Humaneval
from medsimp.stats import check_reconciles

VOTE_COLUMNS = ("system", "preference", "votes", "majority_items")
SCORE_COLUMNS = ("form", "question", "system", "score", "count")


@dataclass(frozen=True)
class Outcome:
    """What a stage produced: its title, stats, the counts to show (default: the stats), the
    warnings that matter, and whether it was skipped (then only `stats` is set)."""

    title: str
    stats: dict[str, Any]
    summary: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    skipped: bool = False


def forms(hp: Humaneval, src: Path, out: str) -> Outcome:
    """The forms for the items of `src` (a CSV of sentence_id|item_id, variant|system, source,
    output) in `out`; skipped when `src` does not exist."""
    from medsimp.humaneval.forms import write_forms

    if not src.exists():
        return skip(out, f"{src} does not exist (is the simplify stage enabled?)")
    try:
        items, systems = load_items(src, hp.systems)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    manifest = build_manifest(items, systems, hp.n_laypeople, hp.seed)
    with atomic_dir(out, lineage=_text_lineage(src, [i["source"] for i in items])) as tmp:
        files = write_forms(manifest, tmp)
        stats = {
            "skipped": False,
            "read": len(items),
            "kept": len(items),
            "filtered": 0,
            "rejected": 0,
            "systems": len(systems),
            "files": len(files),
            "laypeople": len(manifest["layperson_assignment"]),
        }
        write_json(tmp / "stats.json", stats)
    return Outcome("humaneval forms", stats)


def analyze(
    hp: Humaneval,
    forms_dir: Path,
    responses: Path,
    out: str,
    metric_table: Path,
    plots_dir: str | None,
    base: str | Path = ".",
) -> Outcome:
    """Tables, agreement, correlations with the metrics of `metric_table` and plots from the
    filled CSVs in `responses` for the forms of `forms_dir`, in `out` (DVC plots data in
    `plots_dir` when given); skipped when there is no manifest or no filled CSV (the reason
    names the folders relative to `base`, the params file's folder)."""
    files = sorted(responses.glob("*.csv")) if responses.is_dir() else []
    if not (forms_dir / "manifest.json").exists() or not files:
        manifest_at, responses_at = shown_path(forms_dir / "manifest.json", base), shown_path(responses, base)
        return skip(out, f"no {manifest_at} or no filled CSVs in {responses_at}", plots_dir)
    manifest = json.loads((forms_dir / "manifest.json").read_text(encoding="utf-8"))
    try:
        answers = ingest(manifest, files)
    except IngestError as exc:
        raise InputError(str(exc)) from None
    read = 0
    for f in files:
        with open(f, newline="", encoding="utf-8-sig") as fh, csv_errors(f):
            read += sum(1 for _ in csv.DictReader(fh))
    systems = manifest["systems"]
    t1, t2, t3 = tables.table1(answers), tables.table2(answers), tables.table3(answers, systems)
    agree = tables.agreement(answers)
    corr = tables.correlations(answers, _metric_table(metric_table, list(hp.metric_columns)))
    raters = sorted({(a.form, a.rater_id) for a in answers})
    stats = {
        "read": read,
        "kept": len(answers),
        "filtered": read - len(answers),
        "rejected": 0,
        "files": len(files),
        "raters": {f: sum(1 for r in raters if r[0] == f) for f in ("expert", "layperson", "multicochrane")},
        "agreement": agree,
    }
    check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
    layperson = any(a.form == "layperson" for a in answers)  # Yang et al.'s Q3 guesses, Q5/Q6 votes
    notes = [] if layperson else ["no layperson responses: table2.csv, table3.csv and votes.png not written"]
    with atomic_dir(out, lineage=_text_lineage(forms_dir, [])) as tmp:
        written = [("table1", t1), ("correlations", corr)] + (
            [("table2", t2), ("table3", t3)] if layperson else []
        )
        for name, rows in written:
            (tmp / f"{name}.csv").write_text(csv_text(rows), encoding="utf-8")
        write_json(tmp / "agreement.json", agree)
        if layperson:
            plots.vote_bars(t3, tmp / "votes.png")
        score_rows = []
        for form in ("expert", "multicochrane"):
            if any(a.form == form for a in answers):
                score_rows += plots.score_distributions(answers, form, systems, tmp / f"scores-{form}.png")
        write_json(tmp / "stats.json", stats)
    if plots_dir:
        _write_plots(Path(plots_dir), t3 if layperson else [], score_rows)
    shown = {k: v for k, v in stats.items() if k != "agreement"}
    return Outcome("humaneval analyze", stats, shown, notes)


def released(root: Path, out: str) -> Outcome:
    """The released ratings in `root` (Yang et al.'s or MultiCochrane's), read as released."""
    if not root.is_dir():
        raise InputError(f"{root}: no such folder")
    if rel.is_yang(root):
        return _released_yang(root, out)
    ratings, problems, info = rel.load_multicochrane(root)
    if not ratings:
        raise InputError(
            f"{root}: no MultiCochrane ratings found (expected "
            "<lang>/spreadsheets/**.xlsx)" + (f"; {problems[0]}" if problems else "")
        )
    table = rel.means(ratings)
    agreement = rel.agreement(ratings)
    checks = rel.section_5_3_checks(table)
    stats = {
        "read": len(ratings) + len(problems),
        "kept": len(ratings),
        "filtered": 0,
        "rejected": len(problems),
        "duplicate_workbooks": len(info["duplicate_workbooks"]),
        "section_5_3_holds": sum(c["holds"] for c in checks),
        "section_5_3_checks": len(checks),
    }
    cols = (
        "language",
        "system",
        "annotators",
        "factuality",
        "factuality_n",
        "fluency",
        "fluency_n",
        "simplicity",
        "simplicity_n",
    )
    with atomic_dir(out) as tmp:
        (tmp / "table5.csv").write_text(csv_text(table, cols), encoding="utf-8")
        (tmp / "agreement.csv").write_text(
            csv_text(agreement, ("language", "scale", "units", "randolph_kappa")), encoding="utf-8"
        )
        write_json(tmp / "checks.json", {"checks": checks, "problems": problems, **info})
        write_json(tmp / "stats.json", stats)
    return Outcome("humaneval released", stats)


def _released_yang(root: Path, out: str) -> Outcome:
    """Yang et al.'s Tables 1-3 and alpha from their released files, beside the paper's numbers
    (numbers only: the files' sentences derive from MIMIC-III and are never written)."""
    try:
        data = rel.load_yang(root)
    except (OSError, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{root}: unreadable Yang et al. release ({type(exc).__name__}: {exc})"[:300]
        ) from None
    if not data.lay or not data.expert or not data.severity:
        raise InputError(
            f"{root}: no layperson, radiologist or severity rows read"
            + (f"; {data.problems[0]}" if data.problems else "")
        )
    t1, t2 = rel.yang_table1(data), rel.yang_table2(data)
    t3, alpha = rel.yang_table3(data)
    disagree = [f"{r['metric']}/{r['condition']}" for r in t1 if r["agrees"] is False]
    read = len(data.lay) + len(data.problems)
    stats = {
        "read": read,
        "kept": len(data.lay),
        "filtered": 0,
        "rejected": len(data.problems),
        "radiologist_ratings": len(data.expert),
        "severity_labels": len(data.severity),
        "table1_cells_agreeing": sum(r["agrees"] is True for r in t1),
        "table1_cells_compared": sum(r["agrees"] is not None for r in t1),
        "table1_disagreements": disagree,
        "table3_cells_agreeing": sum(r["majority_sentences"] == r["paper"] for r in t3),
        **alpha,
        **data.info,
    }
    with atomic_dir(out) as tmp:
        (tmp / "table1.csv").write_text(
            csv_text(t1, ("metric", "condition", "n", "computed", "paper", "agrees")), encoding="utf-8"
        )
        (tmp / "table2.csv").write_text(
            csv_text(t2, ("condition", "confidence", "n", "mse", "paper_mse", "accuracy", "paper_accuracy")),
            encoding="utf-8",
        )
        (tmp / "table3.csv").write_text(
            csv_text(t3, ("preference", "system", "votes", "majority_sentences", "paper")), encoding="utf-8"
        )
        write_json(tmp / "agreement.json", alpha)
        write_json(tmp / "stats.json", {**stats, "problems": data.problems})
    notes = (
        [f"{len(disagree)} Table 1 cell(s) differ from the paper: {', '.join(disagree)}"] if disagree else []
    )
    shown = {k: v for k, v in stats.items() if not isinstance(v, (list, dict))}
    return Outcome("humaneval released (Yang et al. 2024)", stats, shown, notes)


def skip(out: str, reason: str, plots_dir: str | None = None) -> Outcome:
    """Say the stage was skipped and write an output holding only its stats (and empty DVC
    plots data in `plots_dir` when given)."""
    print(f"medsimp humaneval: skipped - {reason}", file=sys.stderr)
    stats = {"skipped": True, "reason": reason, "read": 0, "kept": 0, "filtered": 0, "rejected": 0}
    with atomic_dir(out) as tmp:
        write_json(tmp / "stats.json", stats)
    if plots_dir:
        _write_plots(Path(plots_dir), [], [])
    return Outcome("humaneval", stats, skipped=True)


def _write_plots(pdir: Path, votes: list[dict], scores: list[dict]) -> None:
    """DVC plots data: votes.csv (long: system, preference, votes, majority_items), scores.csv."""
    long = [
        {
            "system": r["system"],
            "preference": name,
            "votes": r[f"{name}_votes"],
            "majority_items": r[f"{name}_majority_items"],
        }
        for r in votes
        for name in ("most", "least")
    ]
    for name, text in (
        ("votes.csv", csv_text(long, VOTE_COLUMNS)),
        ("scores.csv", csv_text(scores, SCORE_COLUMNS)),
    ):
        with atomic_file(pdir / name) as tmp:
            tmp.write_text(text, encoding="utf-8")


def _text_lineage(source: Path, texts: list[str]) -> list[str]:
    """Lineage of outputs holding text from `source` (MIMIC if the text shows its shapes)."""
    tags = lineage.marker_tags(lineage.read_lineage(source))
    return tags + ([lineage.MIMIC] if any(lineage.has_mimic_shapes(t) for t in texts) else [])


def _metric_table(path: Path, columns: list[str]) -> dict[tuple[str, str], dict[str, float]]:
    """Metric values per (item, system) from a variants table; empty when there is none."""
    if not path.exists():
        return {}
    out: dict[tuple[str, str], dict[str, float]] = {}
    with open(path, newline="", encoding="utf-8") as fh, csv_errors(path):
        for row in csv.DictReader(fh):
            key = (row.get("item_id") or row["sentence_id"], row.get("system") or row["variant"])
            out[key] = {c: float(row[c]) for c in columns if row.get(c) not in (None, "")}
    return out


def csv_text(rows: list[dict], columns: tuple[str, ...] | None = None) -> str:
    """`rows` as CSV text (cells escaped against spreadsheet formulas); the columns are
    `columns` or the first row's keys."""
    buf = io.StringIO()
    fields = list(columns or (rows[0] if rows else ()))
    if fields:
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows({k: cell_escape(v) for k, v in row.items()} for row in rows)
    return buf.getvalue()
