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

    parser.add_argument("--input", help="align output dir holding pairs/ (default: params filter.input)")
    parser.add_argument("--output", help="output dir (default: params filter.output)")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


def run(args) -> int:
    from medsimp.atomic import atomic_dir
    from medsimp.config import resolve_output, resolve_path
    from pipelines.jobs import filter as filter_job

    params = args.params_data.filter
    with atomic_dir(args.output or resolve_output(params.output, args.params_dir, "filter.output")) as tmp:
        filter_job.run(
            args.input or resolve_path(params.input, args.params_dir),
            str(tmp),
            params,
            args.params_data.beam,
            args.beam_arg,
            args.metrics,
        )
    return 0
