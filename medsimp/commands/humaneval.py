"""Human evaluation kit: `forms` writes offline HTML forms (expert, layperson with a
Latin-square assignment, MultiCochrane) that export CSV, plus forms.xlsx and manifest.json;
`analyze` validates the filled CSVs and writes Table 1 (means), Table 2 (severity MSE and
accuracy by confidence), Table 3 (majority preference votes), agreement (Krippendorff's
alpha with MASI, Randolph's kappa), metric-human correlations and PNG plots.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

HELP = "human-evaluation forms (HTML/xlsx) and analysis of the filled responses"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    f = sub.add_parser("forms", help="write the forms from (source, system outputs)")
    f.add_argument(
        "--input",
        help="CSV with sentence_id|item_id, variant|system, source, output (default: params humaneval.input)",
    )
    f.add_argument("--output", help="forms dir (default: params humaneval.forms)")
    f.add_argument("--metrics", help="also write stats here (DVC metrics)")
    a = sub.add_parser("analyze", help="validate filled CSVs and compute tables/agreement/plots")
    a.add_argument("--forms", help="forms dir holding manifest.json (default: params humaneval.forms)")
    a.add_argument("--responses", help="dir of filled CSVs (default: params humaneval.responses)")
    a.add_argument("--output", help="results dir (default: params humaneval.output)")
    a.add_argument("--metrics", help="also write stats here (DVC metrics)")
    a.add_argument("--plots", help="dir for DVC plots data (votes.csv, scores.csv)")
    r = sub.add_parser(
        "released",
        help="read the MultiCochrane authors' released ratings "
        "(data/eval_data) and write Table 5, agreement and the §5.3 checks",
    )
    r.add_argument("--data", required=True, help="MultiCochrane repository root or its data/eval_data")
    r.add_argument(
        "--output", required=True, help="results dir (table5.csv, agreement.csv, checks.json, stats.json)"
    )


def run(args) -> int:
    from medsimp.config import section

    hp = section(args.params_data, "humaneval")
    if args.action == "released":
        return _released(args)
    return _forms(args, hp) if args.action == "forms" else _analyze(args, hp)


def _released(args) -> int:
    from medsimp.errors import InputError
    from medsimp.humaneval import released
    from medsimp.outputs import atomic_dir, print_summary, write_json

    root = Path(args.data)
    if not root.is_dir():
        raise InputError(f"{root}: no such folder")
    ratings, problems, info = released.load_multicochrane(root)
    if not ratings:
        raise InputError(
            f"{root}: no MultiCochrane ratings found (expected "
            "<lang>/spreadsheets/**.xlsx)" + (f"; {problems[0]}" if problems else "")
        )
    table = released.means(ratings)
    agreement = released.agreement(ratings)
    checks = released.section_5_3_checks(table)
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
    with atomic_dir(args.output) as tmp:
        (tmp / "table5.csv").write_text(_csv(table, cols), encoding="utf-8")
        (tmp / "agreement.csv").write_text(
            _csv(agreement, ("language", "scale", "units", "randolph_kappa")), encoding="utf-8"
        )
        write_json(tmp / "checks.json", {"checks": checks, "problems": problems, **info})
        write_json(tmp / "stats.json", stats)
    print_summary("humaneval released", stats)
    return 0


VOTE_COLUMNS = ("system", "preference", "votes", "majority_items")
SCORE_COLUMNS = ("form", "question", "system", "score", "count")


def _skip(out: str, metrics: str | None, reason: str, plots: str | None = None) -> int:
    from medsimp.outputs import atomic_dir, write_json, write_metrics

    print(f"medsimp humaneval: skipped - {reason}", file=sys.stderr)
    stats = {"skipped": True, "reason": reason, "read": 0, "kept": 0, "filtered": 0, "rejected": 0}
    with atomic_dir(out) as tmp:
        write_json(tmp / "stats.json", stats)
    if plots:
        _write_plots(Path(plots), [], [])
    if metrics:
        write_metrics(metrics, stats, "humaneval")
    return 0


def _write_plots(pdir: Path, votes: list[dict], scores: list[dict]) -> None:
    """DVC plots data: votes.csv (long: system, preference, votes, majority_items), scores.csv."""
    from medsimp.outputs import atomic_file

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
    for name, text in (("votes.csv", _csv(long, VOTE_COLUMNS)), ("scores.csv", _csv(scores, SCORE_COLUMNS))):
        with atomic_file(pdir / name) as tmp:
            tmp.write_text(text, encoding="utf-8")


def _text_lineage(source: Path, texts: list[str]) -> list[str]:
    """Lineage of outputs holding text from `source` (MIMIC if the text shows its shapes)."""
    from medsimp import lineage

    tags = lineage.marker_tags(lineage.read_lineage(source))
    return tags + ([lineage.MIMIC] if any(lineage.has_mimic_shapes(t) for t in texts) else [])


def _forms(args, hp: dict) -> int:
    from medsimp.humaneval.design import build_manifest, load_items
    from medsimp.humaneval.forms import write_forms
    from medsimp.outputs import atomic_dir, print_summary, write_json, write_metrics

    src = Path(args.input or hp.get("input", "out/simplify/variants.csv"))
    out = args.output or hp.get("forms", "out/humaneval/forms")
    if not src.exists():
        return _skip(out, args.metrics, f"{src} does not exist (is the simplify stage enabled?)")
    try:
        items, systems = load_items(src, hp.get("systems"))
    except ValueError as exc:
        print(f"medsimp humaneval forms: {exc}", file=sys.stderr)
        return 2
    manifest = build_manifest(items, systems, int(hp.get("n_laypeople", 8)), int(hp.get("seed", 0)))
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
    if args.metrics:
        write_metrics(args.metrics, stats, "humaneval")
    print_summary("humaneval forms", stats)
    return 0


def _metric_table(path: Path, columns: list[str]) -> dict[tuple[str, str], dict[str, float]]:
    if not path.exists():
        return {}
    out: dict[tuple[str, str], dict[str, float]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            key = (row.get("item_id") or row["sentence_id"], row.get("system") or row["variant"])
            out[key] = {c: float(row[c]) for c in columns if row.get(c) not in (None, "")}
    return out


def _csv(rows: list[dict], columns: tuple[str, ...] | None = None) -> str:
    from medsimp.outputs import cell_escape

    buf = io.StringIO()
    fields = list(columns or (rows[0] if rows else ()))
    if fields:
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows({k: cell_escape(v) for k, v in row.items()} for row in rows)
    return buf.getvalue()


def _analyze(args, hp: dict) -> int:
    import json

    from medsimp.humaneval import plots, tables
    from medsimp.humaneval.ingest import IngestError, ingest
    from medsimp.outputs import atomic_dir, check_reconciles, print_summary, write_json, write_metrics

    forms = Path(args.forms or hp.get("forms", "out/humaneval/forms"))
    responses = Path(args.responses or hp.get("responses", "humaneval/responses"))
    out = args.output or hp.get("output", "out/humaneval/results")
    files = sorted(responses.glob("*.csv")) if responses.is_dir() else []
    if not (forms / "manifest.json").exists() or not files:
        return _skip(
            out, args.metrics, f"no {forms}/manifest.json or no filled CSVs in {responses}", args.plots
        )
    manifest = json.loads((forms / "manifest.json").read_text(encoding="utf-8"))
    try:
        answers = ingest(manifest, files)
    except IngestError as exc:
        print(f"medsimp humaneval analyze: {exc}", file=sys.stderr)
        return 2
    read = sum(sum(1 for _ in csv.DictReader(open(f, newline="", encoding="utf-8-sig"))) for f in files)
    systems = manifest["systems"]
    metric_cols = list(hp.get("metric_columns", ["fkgl", "gunning_fog", "ari"]))
    t1, t2, t3 = tables.table1(answers), tables.table2(answers), tables.table3(answers, systems)
    agree = tables.agreement(answers)
    corr = tables.correlations(answers, _metric_table(Path(hp.get("input", "")), metric_cols))
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
    with atomic_dir(out, lineage=_text_lineage(forms, [])) as tmp:
        written = [("table1", t1), ("correlations", corr)] + (
            [("table2", t2), ("table3", t3)] if layperson else []
        )
        for name, rows in written:
            (tmp / f"{name}.csv").write_text(_csv(rows), encoding="utf-8")
        write_json(tmp / "agreement.json", agree)
        if layperson:
            plots.vote_bars(t3, tmp / "votes.png")
        score_rows = []
        for form in ("expert", "multicochrane"):
            if any(a.form == form for a in answers):
                score_rows += plots.score_distributions(answers, form, systems, tmp / f"scores-{form}.png")
        write_json(tmp / "stats.json", stats)
    if args.plots:
        _write_plots(Path(args.plots), t3 if layperson else [], score_rows)
    if args.metrics:
        write_metrics(args.metrics, stats, "humaneval")
    print_summary("humaneval analyze", {k: v for k, v in stats.items() if k != "agreement"}, notes)
    return 0
