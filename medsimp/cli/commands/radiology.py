"""Radiology findings sentences for LLM simplification (Yang et al.): MIMIC-III NOTEEVENTS
(category Radiology) and/or MIMIC-IV-Note radiology.csv(.gz) -> FINDINGS / IMPRESSION
sentences that name a finding, de-duplicated, with body parts, finding words, negation and
the exam description, so a balanced sample (like the paper's 40 sentences) can be drawn.

Writes DIR/sentences/part-*.parquet (the common sentence table plus exam, body_parts,
finding_words, negated, n_duplicates, duplicate_doc_ids), DIR/dead_letter/part-*.jsonl and
DIR/stats.json. Knobs: params `radiology:` section.
"""

from __future__ import annotations

import argparse

HELP = "MIMIC radiology notes -> de-duplicated findings sentences with metadata (Beam job)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from medsimp.cli.args import add_beam_arguments

    parser.add_argument(
        "--input",
        action="append",
        help="note file, glob or directory of *.csv / *.csv.gz (repeatable; default: params radiology.input)",
    )
    parser.add_argument("--output", help="output dir (default: params radiology.output)")
    parser.add_argument("--metrics", help="also write stats.json here (DVC metric)")
    add_beam_arguments(parser)


def run(args) -> int:
    from medsimp.atomic import atomic_dir
    from medsimp.config import resolve_output, resolve_path
    from medsimp.errors import UsageError
    from pipelines.jobs import radiology
    from pipelines.jobs.notes import note_files, note_lineage
    from pipelines.text.radiology import load_lexicons

    params = args.params_data.radiology
    output = args.output or resolve_output(
        params.output, args.params_dir, "radiology.output"
    )  # before any work
    patterns = args.input or ([resolve_path(params.input, args.params_dir)] if params.input else [])
    if not patterns:
        raise UsageError("no --input and no params radiology.input")
    files = note_files(patterns, expand_dirs=True)
    tags = note_lineage([path for path, _, _ in files])
    with atomic_dir(output, lineage=tags) as tmp:
        radiology.run(
            files, str(tmp), params, args.params_data.beam, args.beam_arg, args.metrics, load_lexicons(), tags
        )
    return 0
