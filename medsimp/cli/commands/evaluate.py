"""Score simplifications with the MedLane metric suite (docs/metrics.md).

`evaluate files`: `medsimp evaluate files --hyp OUT.txt --ref R1.txt [--ref R2.txt ...] [--src SRC.txt]`
or `--medlane FILE [--split validation|test]` to take the sources, references and
`abbr[full]` term annotations from a MedLane-format evaluation file (`--split`
takes the authors' half of a combined file; OUT.txt has one line per record of the
split or of the whole file). `--mode default` (the paper's definitions) or
`--mode medlane` (the authors' scorer, step by step); `--json OUT` writes the scores.
A flag the chosen source of references would ignore is refused (exit 2); so are empty inputs.

`evaluate stage` (the DVC `evaluate` stage, training/evaluate_stage.py): scores
`out/models/<model>/predictions/<split>.txt` for every model in `evaluate.models` in both
modes, writes `--metrics DIR` (`DIR/<model>.json`, like the paper's Table 3) and `--plots`
(AScore etc. per source-length bucket).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import get_args

from medsimp.cli.args import global_options
from medsimp.cli.commands import evaluate_files
from medsimp.params_choices import RougeTokenizer, ScoringMode

HELP = "score outputs with the metrics --select or params evaluate.select names; all of docs/metrics.md when neither does"


def _add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """The options both subcommands take: which metrics, which mode, ROUGE's tokens."""
    parser.add_argument(
        "--mode",
        choices=get_args(ScoringMode),
        default=None,
        help="default: corrected metrics; medlane: the authors' scorer (stage: both unless given)",
    )
    parser.add_argument(
        "--select",
        help="comma-separated metrics to compute (default: params evaluate.select, null = all); the "
        "names are docs/metrics.md's, and an unknown one is refused with the list",
    )
    parser.add_argument(
        "--rouge-tokenizer",
        choices=get_args(RougeTokenizer),
        default=None,
        help="ROUGE's tokens: nltk (lowercased NLTK Treebank, punctuation kept) or rouge-score "
        "(rouge-score's own default: lowercase, alphanumeric runs); default: params evaluate.rouge_tokenizer",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    files = sub.add_parser(
        "files",
        help="score system output files against --ref files, a MedLane file or a builder's split",
        parents=[global_options(2)],
    )
    evaluate_files.add_arguments(files)
    _add_scoring_options(files)
    stage = sub.add_parser(
        "stage",
        help="score every model of params evaluate.models (the DVC `evaluate` stage)",
        parents=[global_options(2)],
    )
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
    _add_scoring_options(stage)


def _select(args: argparse.Namespace) -> list[str] | None:
    """`--select` as a list (None: params evaluate.select); an unknown metric is a usage error."""
    from medsimp.errors import UsageError
    from medsimp.metrics import selection

    select = [m.strip() for m in args.select.split(",") if m.strip()] if args.select else None
    try:
        selection(select if select is not None else args.params_data.evaluate.select)
    except ValueError as exc:
        raise UsageError(f"--select: {exc}") from None
    return select


def run(args: argparse.Namespace) -> int:
    if args.action == "files":
        evaluate_files.check_flags(args)  # before the metrics' registry is imported
    select = _select(args)
    options: dict = {"rouge_tokenizer": args.rouge_tokenizer or args.params_data.evaluate.rouge_tokenizer}
    if args.action == "files":
        return evaluate_files.run(args, select, options)
    from medsimp.stats import finish_stage
    from training.evaluate_stage import run_stage

    result = run_stage(
        args.params_data,
        args.params_dir,
        metrics_dir=args.metrics_dir,
        plots=args.plots,
        scores=args.scores,
        mode=args.mode,
        select=select,
        options=options,
        from_file=Path(args.params).is_file(),
    )
    finish_stage(result.title, result.summary, ())
    return 0
