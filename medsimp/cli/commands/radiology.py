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
REASONS_PREFIX = "filtered_"


# What `dvc metrics show` shows for this stage: the counts every data stage shares, so the table
# stays narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")


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


def stats_from(notes: dict[str, int], rad: dict[str, int], inputs: list[str]) -> dict:
    """stats.json: note rows (read = kept + filtered + rejected, reasons in `filtered_by` /
    `rejected_by`) and sentences (sentences = sentences_kept + sentences_duplicate +
    sentences_filtered, reasons in `sentences_filtered_by`)."""
    from pipelines.jobs.notes import note_counts

    filtered = {
        k.removeprefix(REASONS_PREFIX): v for k, v in sorted(rad.items()) if k.startswith(REASONS_PREFIX)
    }
    return {
        "inputs": inputs,
        **note_counts(notes),
        "sentences": rad.get("sentences", 0),
        "sentences_kept": rad.get("kept", 0),
        "sentences_duplicate": rad.get("duplicates", 0),
        "sentences_filtered": sum(filtered.values()),
        "sentences_filtered_by": filtered,
    }


def run(args) -> int:
    from medsimp.atomic import atomic_dir, write_json
    from medsimp.config import resolve_path
    from medsimp.errors import UsageError
    from medsimp.lineage import with_lineage
    from medsimp.schemas import RADIOLOGY_SENTENCES
    from medsimp.stats import check_reconciles, finish_stage
    from pipelines.jobs import beam_io, radiology
    from pipelines.jobs import notes as notes_job
    from pipelines.jobs.common import check_rows, committed_counters, written_rows
    from pipelines.jobs.notes import NAMESPACE as NOTES_NS
    from pipelines.jobs.notes import note_lineage
    from pipelines.text.radiology import load_lexicons

    params = args.params_data.radiology
    patterns = args.input or ([resolve_path(params.input, args.params_dir)] if params.input else [])
    output = args.output or resolve_path(params.output, args.params_dir)
    if not patterns:
        raise UsageError("no --input and no params radiology.input")
    files = notes_job.note_files(patterns, expand_dirs=True)
    shards = params.num_shards
    tags = note_lineage([path for path, _, _ in files])
    with atomic_dir(output, lineage=tags) as tmp:
        pipeline = beam_io.new_pipeline(args.params_data.beam, args.beam_arg)
        radiology.build(pipeline, files, str(tmp), params, load_lexicons(), tags)
        result = pipeline.run()
        result.wait_until_finish()
        notes_job.raise_file_errors(str(tmp / "dead_letter"))
        beam_io.fill_empty_shards(
            str(tmp / "sentences"), "part", shards, with_lineage(RADIOLOGY_SENTENCES, tags)
        )
        beam_io.fill_empty_shards(str(tmp / "dead_letter"), "part", 1, fmt="jsonl")
        stats = stats_from(
            committed_counters(result, NOTES_NS),
            committed_counters(result, radiology.NAMESPACE),
            [name for _, name, _ in files],
        )
        check_rows(
            "sentences", written_rows(str(tmp / "sentences"), True), "sentences_kept", stats["sentences_kept"]
        )
        check_rows(
            "dead_letter", written_rows(str(tmp / "dead_letter"), False), "rejected", stats["rejected"]
        )
        check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
        check_reconciles(stats, "sentences", ["sentences_kept", "sentences_duplicate", "sentences_filtered"])
        write_json(tmp / "stats.json", stats)
    shown = {k: v for k, v in stats.items() if k != "inputs"}
    finish_stage("medsimp radiology", stats, HEADLINE, args.metrics, summary=shown)
    return 0
