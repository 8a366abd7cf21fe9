"""MSD manuals -> sentence table + candidate parallel groups (topic + PCIO section).

--input is a file or directory of JSON Lines, in the documented format (topic, audience,
title, sections) or the MSD dataset format (text, label 0 expert / 1 layman, concepts;
files whose name contains a `msd.paired_files` marker pair line 2n-1 with line 2n).
Writes OUTPUT/sentences, OUTPUT/pairs (candidate groups), OUTPUT/dead_letter, OUTPUT/stats.json.
"""

from __future__ import annotations

HELP = "MSD professional/consumer manuals -> sentence table and PCIO candidate groups"


def add_arguments(parser) -> None:
    from medsimp.cli.args import add_job_arguments

    add_job_arguments(parser, "JSONL file or directory (default: params msd.input)", "out/msd")


def run(args) -> int:
    from medsimp.cli.source_job import run_source_job
    from pipelines.jobs import msd

    return run_source_job(args, "msd", msd)
