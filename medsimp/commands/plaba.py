"""PLABA JSON -> sentence table + gold sentence-aligned pairs.

Writes OUTPUT/sentences (abstract sentences = complex, adaptation sentences = simple),
OUTPUT/pairs (one row per abstract sentence and adaptation: 1 -> 0, 1 or N simple
sentences, with question_id, pmid and sentence numbers), OUTPUT/dead_letter, OUTPUT/stats.json.
"""
from __future__ import annotations

HELP = "PLABA abstracts + expert adaptations -> sentence table and gold pairs"


def add_arguments(parser) -> None:
    from medsimp.cli_args import add_beam_arguments

    parser.add_argument("--input", help="PLABA JSON file (default: params plaba.input)")
    parser.add_argument("--output", default="out/plaba", help="output directory")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


def run(args) -> int:
    from medsimp.config import section
    from medsimp.outputs import atomic_dir
    from pipelines import plaba_job

    params = section(args.params_data, "plaba")
    with atomic_dir(args.output) as tmp:
        plaba_job.run(args.input or params["input"], str(tmp), params,
                      section(args.params_data, "beam"), args.beam_arg, args.metrics)
    return 0
