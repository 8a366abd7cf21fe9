"""Cochrane reviews -> sentence table.

--input is a canonical JSONL file (docs/formats.md), a directory of Devaraj et al. files
(X.source / X.target / X.doi) or their common prefix. Records are joined by normalised
DOI; writes OUTPUT/sentences (English abstract = complex, PLS per language = simple),
OUTPUT/dead_letter and OUTPUT/stats.json.
"""

from __future__ import annotations

HELP = "Cochrane abstracts + multilingual plain-language summaries -> sentence table"


def add_arguments(parser) -> None:
    from medsimp.cli.args import add_job_arguments

    add_job_arguments(
        parser,
        "canonical JSONL, Devaraj directory or prefix (default: params cochrane.input)",
        "out/cochrane",
    )


def run(args) -> int:
    from medsimp.cli.source_job import run_source_job
    from pipelines.jobs import cochrane

    return run_source_job(args, "cochrane", cochrane)
