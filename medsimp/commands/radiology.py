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

from medsimp.cli_args import warm_beam_workers

HELP = "MIMIC radiology notes -> de-duplicated findings sentences with metadata (Beam job)"
REASONS_PREFIX = "filtered_"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from medsimp.cli_args import add_beam_arguments

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
    from medsimp.commands.notes import note_counts

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


@warm_beam_workers
def run(args) -> int:
    from medsimp.commands.notes import note_lineage
    from medsimp.config import resolve_path, section
    from medsimp.errors import UsageError
    from medsimp.lineage import with_lineage
    from medsimp.outputs import atomic_dir, check_reconciles, print_summary, write_json, write_metrics
    from medsimp.pipelines import beam_io, notes_job, radiology
    from medsimp.pipelines.notes_job import NAMESPACE as NOTES_NS
    from medsimp.pipelines.radiology_core import load_lexicons
    from medsimp.schemas import RADIOLOGY_SENTENCES

    params = section(args.params_data, "radiology")
    patterns = args.input or ([resolve_path(params["input"], args.params_dir)] if params.get("input") else [])
    output = args.output or params.get("output", "out/radiology")
    if not patterns:
        raise UsageError("no --input and no params radiology.input")
    files = notes_job.note_files(patterns, expand_dirs=True)
    shards = int(params.get("num_shards", 1))
    tags = note_lineage([path for path, _, _ in files])
    with atomic_dir(output, lineage=tags) as tmp:
        pipeline = beam_io.new_pipeline(section(args.params_data, "beam"), args.beam_arg)
        radiology.build(pipeline, files, str(tmp), params, load_lexicons(), tags)
        result = pipeline.run()
        result.wait_until_finish()
        notes_job.raise_file_errors(str(tmp / "dead_letter"))
        beam_io.fill_empty_shards(
            str(tmp / "sentences"), "part", shards, with_lineage(RADIOLOGY_SENTENCES, tags)
        )
        beam_io.fill_empty_shards(str(tmp / "dead_letter"), "part", 1, fmt="jsonl")
        stats = stats_from(
            beam_io.counters(result, NOTES_NS),
            beam_io.counters(result, radiology.NAMESPACE),
            [name for _, name, _ in files],
        )
        check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
        check_reconciles(stats, "sentences", ["sentences_kept", "sentences_duplicate", "sentences_filtered"])
        write_json(tmp / "stats.json", stats)
    if args.metrics:
        write_metrics(args.metrics, stats, "radiology")
    print_summary("medsimp radiology", {k: v for k, v in stats.items() if k != "inputs"})
    return 0
