"""`medsimp align corpus`: the Beam job over a sentence table (the DVC `align` stage; its own
module, so the stage's code is the job's and not the aligner training's):
    medsimp align corpus --input out/cochrane --output out/align --metrics metrics/align.json
--input may be the object-store prefix a stage published to, and --output one for public data
(docs/refresh.md "Outputs in an object store").
"""

from __future__ import annotations

import argparse

HELP = "align a sentence table (Beam job; the DVC `align` stage)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        help="stage output holding sentences/, or the object-store prefix it was published to "
        "(default: params align.input)",
    )
    parser.add_argument(
        "--output",
        help="output dir, or an object-store prefix for public data (default: params align.output)",
    )
    parser.add_argument("--model", help="CRF model directory (default: params align.model)")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")


def run(args: argparse.Namespace) -> int:
    from medsimp.config import cache_path, resolve_output, resolve_path
    from pipelines.jobs.align import Runtime, align_corpus

    params = args.params_data.align
    out = args.output or resolve_output(params.output, args.params_dir, "align.output")  # before any work
    params = params.model_copy(update={"model": args.model or resolve_path(params.model, args.params_dir)})
    table = args.input or resolve_path(params.input, args.params_dir)
    cache = cache_path(args.params_data, args.params_dir)
    runtime = Runtime(args.params_data.beam, args.beam_arg, cache, args.params_dir, args.metrics, args.force)
    align_corpus(table, out, params, runtime)
    return 0
