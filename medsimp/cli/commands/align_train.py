"""`medsimp align train`: the CRF aligner trained on gold (the DVC `align_train` stage), by
`alignment.stage.train`. Its own module, so the align_train stage's code is not the Beam job's."""

from __future__ import annotations

import argparse

HELP = "train the CRF on gold document pairs (the DVC `align_train` stage)"

# What `dvc metrics show` shows for this stage (the stage's full stats are its output's stats.json).
HEADLINE = ("documents", "gold_pairs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gold",
        action="append",
        help="gold document pairs; repeat for several sources, read in order "
        "(default: params align.gold, one path or a list)",
    )
    parser.add_argument("--gold-format", default=None, help="auto, jsonl, plaba, mc_clean, wiki_auto")
    parser.add_argument(
        "--input",
        help="sentence table whose English reviews self-training labels "
        "(default: params align.input; only with align.self_training.enabled)",
    )
    parser.add_argument("--output", help="model dir (default: params align.model)")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    parser.add_argument(
        "--retrain",
        action="store_true",
        help="retrain even when the model at --output may stay (align.self_training.retrain_after_new)",
    )


def run(args: argparse.Namespace) -> int:
    from alignment.gold import gold_sources
    from alignment.stage import TrainRun, train
    from medsimp.atomic import check_output_target, hold
    from medsimp.cli.source_job import stage_input
    from medsimp.config import cache_path, resolve_output, resolve_path, shown_path
    from medsimp.errors import InputError
    from medsimp.stats import finish_stage

    params = args.params_data.align
    out = args.output or resolve_output(params.model, args.params_dir, "align.model")  # before any work
    check_output_target(out, "align train", force=args.force)  # before minutes of training
    enabled = params.self_training.enabled
    if args.input and not enabled:
        raise InputError(
            "--input is the reviews self-training labels, and align.self_training.enabled is false"
        )
    table = (args.input or resolve_path(params.input, args.params_dir)) if enabled else None
    if table:  # an object-store table (s3://...) is reached with the params' Beam options, as the jobs do
        table = stage_input(args, {"--input": table})["--input"]  # a published prefix: its run
    run = TrainRun(
        gold=args.gold or [resolve_path(g, args.params_dir) for g in gold_sources(params.gold)],
        gold_format=args.gold_format or params.gold_format,
        out=out,
        table=table,
        retrain=args.retrain,
        cache=cache_path(args.params_data, args.params_dir) or None,
        shown=lambda path: shown_path(path, args.params_dir),
    )
    with hold(out):  # from here to the metrics: a second `align train` on `out` is refused now
        stats, summary = train(params, run)
        finish_stage("medsimp align train", stats, HEADLINE, args.metrics, summary=summary)
    return 0
