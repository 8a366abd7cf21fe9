"""Run the notes Beam job: MIMIC-III NOTEEVENTS or MIMIC-IV-Note csv(.gz) -> every sentence of
the target sections (History of Present Illness, Brief (Summary of) Hospital Course) with
MedLane's Algorithm 1 features and keep flag.

Writes DIR/sentences/part-*.parquet (one sorted file per batch of `batch_notes` consecutive
notes of a byte range), DIR/dead_letter/part-*.jsonl (rejected rows with a
reason) and DIR/stats.json (read = kept + filtered + rejected, in rows of the note files, with
`filtered_by` and `rejected_by` reasons; sentences = sentences_selected + sentences_not_selected).
Knobs: params `notes:` section.
"""

from __future__ import annotations

import argparse

HELP = "MIMIC notes -> section sentences flagged by MedLane's Algorithm 1 (Beam job)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from medsimp.cli.args import add_beam_arguments

    parser.add_argument(
        "--input",
        help="note file, glob or folder of *.csv / *.csv.gz (default: params notes.input)",
    )
    parser.add_argument(
        "--output", default=None, help="output directory (default: params notes.output or out/notes)"
    )
    parser.add_argument("--metrics", help="also write stats.json here (DVC metric)")
    add_beam_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from medsimp.atomic import atomic_dir
    from medsimp.config import resolve_output, resolve_path
    from medsimp.errors import UsageError
    from pipelines.jobs import notes as notes_job
    from pipelines.text.selection import load_lexicons

    params = args.params_data.notes
    output = args.output or resolve_output(params.output, args.params_dir, "notes.output")  # before any work
    pattern = args.input or (params.input and resolve_path(params.input, args.params_dir))
    if not pattern:
        raise UsageError("no --input and no params notes.input")
    files = notes_job.note_files([pattern], expand_dirs=True)  # docs/formats.md: a file or a folder
    lexicons = load_lexicons(params, args.params_dir)
    tags = notes_job.note_lineage([path for path, _, _ in files])
    with atomic_dir(output, lineage=tags) as tmp:
        notes_job.run(
            files, str(tmp), params, args.params_data.beam, args.beam_arg, args.metrics, lexicons, tags
        )
    return 0
