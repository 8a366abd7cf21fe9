"""MSD manuals -> sentence table + candidate parallel groups (topic + PCIO section).

--input is a file or directory of JSON Lines, in the documented format (topic, audience,
title, sections) or the MSD dataset format (text, label 0 expert / 1 layman, concepts;
files whose name contains a `msd.paired_files` marker pair line 2n-1 with line 2n).
Writes OUTPUT/sentences, OUTPUT/pairs (candidate groups), OUTPUT/dead_letter, OUTPUT/stats.json.
"""
from __future__ import annotations

HELP = "MSD professional/consumer manuals -> sentence table and PCIO candidate groups"


def add_arguments(parser) -> None:
    from medsimp.cli_args import add_beam_arguments

    parser.add_argument("--input", help="JSONL file or directory (default: params msd.input)")
    parser.add_argument("--output", default="out/msd", help="output directory")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


def run(args) -> int:
    from medsimp.config import section
    from medsimp.outputs import atomic_dir
    from pipelines import msd

    params = section(args.params_data, "msd")
    with atomic_dir(args.output) as tmp:
        msd.run(args.input or params["input"], str(tmp), params,
                section(args.params_data, "beam"), args.beam_arg, args.metrics)
    return 0
