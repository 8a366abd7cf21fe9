"""Score simplifications with the MedLane metric suite (docs/metrics.md): `evaluate files`
(system outputs against references, `medsimp.evaluation.files`) and `evaluate stage` (the DVC
`evaluate` stage: every model of `evaluate.models` in both modes, `medsimp.evaluation.stage`).
Both parse here and call one function of `medsimp.evaluation`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import get_args

from medsimp.cli.args import global_options
from medsimp.cli.commands import evaluate_files
from medsimp.params_choices import RougeTokenizer, ScoringMode

HELP = "score outputs with the metrics --select or params evaluate.select names; all of docs/metrics.md when neither does"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    scoring = argparse.ArgumentParser(add_help=False)  # what both subcommands take
    # fmt: off
    scoring.add_argument("--mode", choices=get_args(ScoringMode), default=None,
        help="default: corrected metrics; medlane: the authors' scorer (stage: both unless given)")
    scoring.add_argument("--select", help="comma-separated metrics to compute (default: params "
        "evaluate.select, null = all); the names are docs/metrics.md's, and an unknown one is refused with the list")
    scoring.add_argument("--rouge-tokenizer", choices=get_args(RougeTokenizer), default=None,
        help="ROUGE's tokens: nltk (lowercased NLTK Treebank, punctuation kept) or rouge-score (rouge-score's "
        "own default: lowercase, alphanumeric runs); default: params evaluate.rouge_tokenizer")
    # fmt: on
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    files = sub.add_parser("files", parents=[global_options(2), scoring],
        help="score system output files against --ref files, a MedLane file or a builder's split")  # fmt: skip
    evaluate_files.add_arguments(files)
    stage = sub.add_parser("stage", parents=[global_options(2), scoring],
        help="score every model of params evaluate.models (the DVC `evaluate` stage)")  # fmt: skip
    stage.add_argument(
        "--metrics",
        dest="metrics_dir",  # a folder written into, not an output file (medsimp.cli.app)
        required=True,
        help="folder for the headline metrics, one <model>.json each: MedLane BLEU, SARI, FKGL, "
        "AScore (metrics/eval)",
    )
    stage.add_argument(
        "--plots", required=True, help="per-length-bucket plot data (plots/length_buckets.json)"
    )
    stage.add_argument(
        "--scores", help="every score of every model and mode, signatures, scales (out/eval/scores.json)"
    )


def run(args: argparse.Namespace) -> int:
    from medsimp.evaluation.select import check_sources, import_numpy_single_threaded, parse_select
    from medsimp.params_schema import updated

    if args.action == "files":  # before the metrics' registry is imported
        check_sources(args.medlane, args.dataset, args.config, args.split, args.ref, args.src, args.hyp)
        import_numpy_single_threaded()
    select = parse_select(args.select, args.params_data.evaluate.select)
    flags = {"rouge_tokenizer": args.rouge_tokenizer}  # every one a params `evaluate` key it overrides
    if args.action == "files":
        flags |= {
            "lang": args.lang,
            "src_lang": args.src_lang,
            "allow_cross_lingual": args.allow_cross_lingual,
        }
    cfg = updated(args.params_data.evaluate, {k: v for k, v in flags.items() if v is not None})
    params = args.params_data.model_copy(update={"evaluate": cfg})
    if args.action == "files":
        return evaluate_files.run(args, params, select)
    from medsimp.evaluation.stage import run_stage
    from medsimp.stats import finish_stage

    result = run_stage(
        params, args.params_dir, metrics_dir=args.metrics_dir, plots=args.plots, scores=args.scores,
        mode=args.mode, select=select, from_file=Path(args.params).is_file(),
    )  # fmt: skip
    finish_stage(result.title, result.summary, ())
    return 0
