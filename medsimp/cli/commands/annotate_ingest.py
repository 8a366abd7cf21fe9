"""`medsimp annotate ingest`: annotators' exports -> majority gold (jsonl, Vecalign), labels and
agreement (docs/annotate.md). Its own module, so the annotate_ingest stage's code is what it
runs and not the annotator page:
    medsimp annotate ingest annotations/ --output out/annotate/gold
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "exports -> majority gold (jsonl, Vecalign), labels, agreement"
# Params sections this command reads paths from (its inputs are guarded against its --output).
# It writes the gold that align.gold may name, so it does not read the align section.
PARAMS_SECTIONS = ("annotate",)
# What `dvc metrics show` shows for this stage: the counts every data stage shares, so the table
# stays narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs", nargs="*", help="export files or folders of them (default: params annotate.annotations)"
    )
    parser.add_argument("--output", help="gold folder (default: params annotate.gold)")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")


def run(args: argparse.Namespace) -> int:
    from medsimp.annotate.ingest import ingest
    from medsimp.config import resolve_output
    from medsimp.stats import finish_stage

    ap = args.params_data.annotate
    out = args.output or resolve_output(ap.gold, args.params_dir, "annotate.gold")  # before any work
    stats = ingest([Path(p) for p in (args.inputs or [ap.annotations])], out, ap)
    finish_stage("medsimp annotate ingest", stats, HEADLINE, args.metrics)
    return 0
