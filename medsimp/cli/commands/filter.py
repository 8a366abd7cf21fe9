"""Overlap filter on aligned pairs (MultiCochrane Section 4): r = |Lc ∩ Ls| / |Ls| on lemma sets.

    medsimp filter --input out/align --output out/filter --metrics metrics/filter.json
Writes OUTPUT/pairs (every pair with `overlap_r` and `keep`), OUTPUT/kept (the filtered
view) and stats.json. Bridged pairs inherit the decision of their English pair.
Threshold: params `filter.threshold`.
"""

from __future__ import annotations

HELP = "flag aligned pairs by lexical overlap r (keeps all rows; writes a kept-only view)"


def add_arguments(parser) -> None:
    from medsimp.cli.args import add_beam_arguments

    parser.add_argument(
        "--input",
        help="align output dir holding pairs/, or the object-store prefix align published to "
        "(default: params filter.input)",
    )
    parser.add_argument(
        "--output",
        help="output dir, or an object-store prefix for public data (default: params filter.output)",
    )
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


def run(args) -> int:
    from medsimp.cli.source_job import stage_input, stage_output
    from medsimp.config import resolve_output, resolve_path
    from pipelines.jobs import filter as filter_job

    params = args.params_data.filter
    out = args.output or resolve_output(params.output, args.params_dir, "filter.output")
    named = {"--input": args.input or resolve_path(params.input, args.params_dir)}
    table = stage_input(args, named, args.beam_arg)["--input"]  # an s3:// output of align
    with stage_output(args, out, named) as tmp:
        filter_job.run(
            table,
            str(tmp),
            params,
            args.params_data.beam,
            args.beam_arg,
            args.metrics,
        )
    return 0
