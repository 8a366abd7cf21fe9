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
from collections.abc import Iterable

from medsimp.cli_args import warm_beam_workers

HELP = "MIMIC notes -> section sentences flagged by MedLane's Algorithm 1 (Beam job)"

FILTERED = ("notes_filtered_category", "notes_filtered_iserror")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from medsimp.cli_args import add_beam_arguments

    parser.add_argument("--input", help="note file(s): path or glob (default: params notes.input)")
    parser.add_argument(
        "--output", default=None, help="output directory (default: params notes.output or out/notes)"
    )
    parser.add_argument("--metrics", help="also write stats.json here (DVC metric)")
    add_beam_arguments(parser)


def note_counts(counts: dict[str, int]) -> dict:
    """The reader's counters in the stats contract: read = kept + filtered + rejected (rows of
    the note files), with the reasons in `filtered_by` and `rejected_by`."""
    rejected = {
        k.removeprefix("rejected_"): v for k, v in sorted(counts.items()) if k.startswith("rejected_")
    }
    filtered = {k.removeprefix("notes_filtered_"): int(counts.get(k, 0)) for k in FILTERED}
    return {
        "read": int(counts.get("rows_read", 0)),
        "kept": int(counts.get("notes_kept", 0)) - int(counts.get("rejected_duplicate_id", 0)),
        "filtered": sum(filtered.values()),
        "filtered_by": filtered,
        "rejected": sum(rejected.values()),
        "rejected_by": rejected,
    }


def stats_from_counters(counts: dict[str, int], inputs: list[str], params: dict) -> dict:
    """The stats.json record from the job's counters (reconciliation is checked by the caller)."""
    get = lambda k: int(counts.get(k, 0))  # noqa: E731
    return {
        "inputs": inputs,
        "categories": list(params.get("categories", ["Discharge summary"])),
        **note_counts(counts),
        "notes_with_sections": get("notes_with_sections"),
        "notes_without_sections": get("notes_without_sections"),
        "sections": get("sections"),
        "sentences": get("sentences"),
        "sentences_selected": get("sentences_selected"),
        "sentences_not_selected": get("sentences_not_selected"),
    }


def note_lineage(paths: Iterable[str]) -> tuple[str, ...]:
    """Release tags of MIMIC note tables, from each file's header: MIMIC-III NOTEEVENTS ->
    mimic-iii, MIMIC-IV-Note -> mimic-iv-note, anything unreadable -> mimic."""
    from apache_beam.io.filesystems import FileSystems

    from medsimp.lineage import MIMIC, MIMIC_III, MIMIC_IV_NOTE, normalise
    from medsimp.pipelines.noteevents import NoteFileError, check_file

    releases = {"mimic3": MIMIC_III, "mimic4": MIMIC_IV_NOTE}
    tags = set()
    for path in paths:
        try:  # the reader's own header check (BOM, any newline, gzip)
            layout = check_file(path, opener=lambda p: FileSystems.open(p, compression_type="uncompressed"))
            tags.add(releases.get(layout.schema.name, MIMIC))
        except (OSError, EOFError, NoteFileError, ValueError):
            tags.add(MIMIC)
    return normalise(tags or [MIMIC])


def check_stats(stats: dict) -> None:
    from medsimp.outputs import check_reconciles

    check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
    check_reconciles(stats, "kept", ["notes_with_sections", "notes_without_sections"])
    check_reconciles(stats, "sentences", ["sentences_selected", "sentences_not_selected"])


@warm_beam_workers
def run(args: argparse.Namespace) -> int:
    from medsimp.config import resolve_path, section
    from medsimp.errors import UsageError
    from medsimp.lineage import with_lineage
    from medsimp.outputs import atomic_dir, print_summary, write_json, write_metrics
    from medsimp.pipelines import beam_io, notes_job
    from medsimp.pipelines.selection import load_lexicons
    from medsimp.schemas import NOTES_SENTENCES

    params = section(args.params_data, "notes")
    pattern = args.input or (params.get("input") and resolve_path(params["input"], args.params_dir))
    output = args.output or params.get("output", "out/notes")
    if not pattern:
        raise UsageError("no --input and no params notes.input")
    files = notes_job.note_files([pattern], expand_dirs=False)
    lexicons = load_lexicons(params, args.params_dir)
    tags = note_lineage([path for path, _, _ in files])
    with atomic_dir(output, lineage=tags) as tmp:
        (tmp / "sentences").mkdir()
        pipeline = beam_io.new_pipeline(section(args.params_data, "beam"), args.beam_arg)
        notes_job.build(pipeline, files, str(tmp), params, lexicons, tags)
        result = pipeline.run()
        result.wait_until_finish()
        notes_job.raise_file_errors(str(tmp / "dead_letter"))
        if not any((tmp / "sentences").iterdir()):  # no sentence at all: one empty part
            beam_io.fill_empty_shards(str(tmp / "sentences"), "part", 1, with_lineage(NOTES_SENTENCES, tags))
        beam_io.fill_empty_shards(str(tmp / "dead_letter"), "part", 1, fmt="jsonl")
        stats = stats_from_counters(
            beam_io.counters(result, notes_job.NAMESPACE), [name for _, name, _ in files], params
        )
        check_stats(stats)
        write_json(tmp / "stats.json", stats)
    if args.metrics:
        write_metrics(args.metrics, stats, "notes")
    print_summary("medsimp notes", {k: v for k, v in stats.items() if k not in ("inputs", "categories")})
    return 0
