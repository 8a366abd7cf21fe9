"""Human evaluation kit: `forms` writes offline HTML forms (expert, layperson with a
Latin-square assignment, MultiCochrane) that export CSV, plus forms.xlsx and manifest.json;
`analyze` validates the filled CSVs and writes Table 1 (means), Table 2 (severity MSE and
accuracy by confidence), Table 3 (majority preference votes), agreement (Krippendorff's
alpha with MASI, Randolph's kappa), metric-human correlations and PNG plots; `released`
reads the authors' released ratings. The stages themselves: `medsimp.humaneval.stage`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from medsimp.cli.args import global_options

HELP = "human-evaluation forms (HTML/xlsx) and analysis of the filled responses"


# What `dvc metrics show` shows for this stage: the counts every data stage shares, so the table
# stays narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    f = sub.add_parser(
        "forms", help="write the forms from (source, system outputs)", parents=[global_options(2)]
    )
    f.add_argument(
        "--input",
        help="CSV with sentence_id|item_id, variant|system, source, output (default: params humaneval.input)",
    )
    f.add_argument("--output", help="forms dir (default: params humaneval.forms)")
    f.add_argument("--metrics", help="also write stats here (DVC metrics)")
    a = sub.add_parser(
        "analyze", help="validate filled CSVs and compute tables/agreement/plots", parents=[global_options(2)]
    )
    a.add_argument("--forms", help="forms dir holding manifest.json (default: params humaneval.forms)")
    a.add_argument("--responses", help="dir of filled CSVs (default: params humaneval.responses)")
    a.add_argument("--output", help="results dir (default: params humaneval.output)")
    a.add_argument("--metrics", help="also write stats here (DVC metrics)")
    a.add_argument("--plots", help="dir for DVC plots data (votes.csv, scores.csv)")
    r = sub.add_parser(
        "released",
        help="read the authors' released ratings as released: Yang et al.'s (Ziyu-Yang/Human-Evaluation: "
        "Tables 1-3 and alpha beside the paper's) or MultiCochrane's (data/eval_data: Table 5, agreement, "
        "the §5.3 checks)",
        parents=[global_options(2)],
    )
    r.add_argument(
        "--data",
        required=True,
        help="Yang et al.'s folder (Original_setences_with_generated_simplifications.csv, ...) or "
        "the MultiCochrane repository root or its data/eval_data",
    )
    r.add_argument(
        "--output",
        required=True,
        help="results dir (Yang: table1.csv, table2.csv, table3.csv, agreement.json, stats.json; "
        "MultiCochrane: table5.csv, agreement.csv, checks.json, stats.json)",
    )


def run(args) -> int:
    from medsimp.config import resolve_output, resolve_path
    from medsimp.humaneval import stage
    from medsimp.stats import finish_stage, write_metrics

    hp = args.params_data.humaneval
    if args.action == "released":
        outcome = stage.released(Path(args.data), args.output)
    elif args.action == "forms":
        outcome = stage.forms(
            hp,
            Path(args.input or resolve_path(hp.input, args.params_dir)),
            args.output or resolve_output(hp.forms, args.params_dir, "humaneval.forms"),
        )
    else:
        outcome = stage.analyze(
            hp,
            Path(args.forms or resolve_path(hp.forms, args.params_dir)),
            Path(args.responses or resolve_path(hp.responses, args.params_dir)),
            args.output or resolve_output(hp.output, args.params_dir, "humaneval.output"),
            Path(resolve_path(hp.input, args.params_dir)),
            args.plots,
            args.params_dir,
        )
    metrics = getattr(args, "metrics", None)  # `released` has none
    if outcome.skipped:
        if metrics:
            write_metrics(metrics, outcome.stats, HEADLINE)
        return 0
    finish_stage(
        outcome.title, outcome.stats, HEADLINE, metrics, summary=outcome.summary, notes=outcome.notes
    )
    return 0
