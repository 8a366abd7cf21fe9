"""PLABA JSON -> sentence table + gold sentence-aligned pairs.

Writes OUTPUT/sentences (abstract sentences = complex, adaptation sentences = simple),
OUTPUT/pairs (one row per abstract sentence and adaptation: 1 -> 0, 1 or N simple
sentences, with question_id, pmid and sentence numbers), OUTPUT/dead_letter, OUTPUT/stats.json.
"""

from __future__ import annotations

HELP = "PLABA abstracts + expert adaptations -> sentence table and gold pairs"


def add_arguments(parser) -> None:
    from medsimp.cli.args import add_job_arguments

    add_job_arguments(parser, "PLABA JSON file (default: params plaba.input)", "out/plaba")


def run(args) -> int:
    from medsimp.cli.source_job import run_source_job
    from pipelines.jobs import plaba as plaba_job

    return run_source_job(args, "plaba", plaba_job)
