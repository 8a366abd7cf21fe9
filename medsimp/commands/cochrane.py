"""Cochrane reviews -> sentence table.

--input is a canonical JSONL file (docs/formats.md), a directory of Devaraj et al. files
(X.source / X.target / X.doi) or their common prefix. Records are joined by normalised
DOI; writes OUTPUT/sentences (English abstract = complex, PLS per language = simple),
OUTPUT/dead_letter and OUTPUT/stats.json.
"""
from __future__ import annotations

HELP = "Cochrane abstracts + multilingual plain-language summaries -> sentence table"


def add_arguments(parser) -> None:
    from medsimp.cli_args import add_beam_arguments

    parser.add_argument("--input", help="canonical JSONL, Devaraj directory or prefix "
                                        "(default: params cochrane.input)")
    parser.add_argument("--output", default="out/cochrane", help="output directory")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


def run(args) -> int:
    from medsimp.config import section
    from medsimp.outputs import atomic_dir
    from pipelines import cochrane

    params = section(args.params_data, "cochrane")
    with atomic_dir(args.output) as tmp:
        cochrane.run(args.input or params["input"], str(tmp), params,
                     section(args.params_data, "beam"), args.beam_arg, args.metrics)
    return 0
