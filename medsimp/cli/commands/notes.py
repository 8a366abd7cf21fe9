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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

HELP = "MIMIC notes -> section sentences flagged by MedLane's Algorithm 1 (Beam job)"


# What `dvc metrics show` shows for this stage: the counts every data stage shares, so the table
# stays narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")


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
    from medsimp.atomic import atomic_dir, write_json
    from medsimp.config import resolve_path
    from medsimp.errors import UsageError
    from medsimp.lineage import with_lineage
    from medsimp.schemas import NOTES_SENTENCES
    from medsimp.stats import finish_stage
    from pipelines.jobs import beam_io
    from pipelines.jobs import notes as notes_job
    from pipelines.jobs.common import check_rows, committed_counters, written_rows
    from pipelines.jobs.notes import check_stats, note_lineage, stats_from_counters
    from pipelines.text.selection import load_lexicons

    params = args.params_data.notes
    pattern = args.input or (params.input and resolve_path(params.input, args.params_dir))
    output = args.output or resolve_path(params.output, args.params_dir)
    if not pattern:
        raise UsageError("no --input and no params notes.input")
    files = notes_job.note_files([pattern], expand_dirs=True)  # docs/formats.md: a file or a folder
    lexicons = load_lexicons(params, args.params_dir)
    tags = note_lineage([path for path, _, _ in files])
    with atomic_dir(output, lineage=tags) as tmp:
        (tmp / "sentences").mkdir()
        pipeline = beam_io.new_pipeline(args.params_data.beam, args.beam_arg)
        notes_job.build(pipeline, files, str(tmp), params, lexicons, tags)
        result = pipeline.run()
        result.wait_until_finish()
        notes_job.raise_file_errors(str(tmp / "dead_letter"))
        if not any((tmp / "sentences").iterdir()):  # no sentence at all: one empty part
            beam_io.fill_empty_shards(str(tmp / "sentences"), "part", 1, with_lineage(NOTES_SENTENCES, tags))
        beam_io.fill_empty_shards(str(tmp / "dead_letter"), "part", 1, fmt="jsonl")
        stats = stats_from_counters(
            committed_counters(result, notes_job.NAMESPACE), [name for _, name, _ in files], params
        )
        check_stats(stats)
        check_rows("sentences", written_rows(str(tmp / "sentences"), True), "sentences", stats["sentences"])
        check_rows(
            "dead_letter", written_rows(str(tmp / "dead_letter"), False), "rejected", stats["rejected"]
        )
        write_json(tmp / "stats.json", stats)
    shown = {k: v for k, v in stats.items() if k not in ("inputs", "categories")}
    finish_stage("medsimp notes", stats, HEADLINE, args.metrics, summary=shown)
    return 0
