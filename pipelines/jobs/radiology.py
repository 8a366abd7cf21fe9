"""The radiology Beam job: MIMIC-III NOTEEVENTS (category Radiology) and MIMIC-IV-Note
radiology tables -> de-duplicated FINDINGS / IMPRESSION finding sentences with metadata.

DAG::

    ReadNotes (pipelines.jobs.notes, categories=[Radiology]) -> notes | rejects | duplicates
    notes -> FindingSentences: Extract (pipelines.text.radiology.RadiologyExtractor), key by
          dedup_key -> GroupByKey -> merge_duplicates (minus duplicate-id notes)
          -> WriteSorted(sentences/)
    rejects -> WriteSorted(dead_letter/)

Counters: the reader's `notes` namespace (rows_read = notes_kept + notes_filtered_* +
rejected_*) and `radiology` (sentences = kept + duplicates + filtered_*); the command turns
them into the stats contract (`stats_from`).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from medsimp.atomic import canonical_json
from medsimp.lineage import MIMIC, with_lineage
from medsimp.params_schema import Beam, Radiology
from medsimp.schemas import RADIOLOGY_SENTENCES
from medsimp.stats import check_reconciles, finish_stage
from pipelines.jobs.notes import NAMESPACE as NOTES_NS
from pipelines.jobs.notes import ReadNotes, dead_letter_sort_key, note_counts, raise_file_errors
from pipelines.text.radiology import (
    RadiologyExtractor,
    dedup_key,
    merge_duplicates,
    row_order,
)

NAMESPACE = "radiology"


class _ExtractFn(beam.DoFn):
    def __init__(self, params: Radiology, lexicons):
        self.params = params
        self.lexicons = lexicons

    def setup(self):
        self.extractor = RadiologyExtractor(self.params, self.lexicons)

    def process(self, element):
        _, _, note = element  # ReadNotes yields (range key, sequence number, note)
        rows, counts = self.extractor.rows(note)
        for name, value in counts.items():
            Metrics.counter(NAMESPACE, name).inc(value)
        for row in rows:
            yield dedup_key(row["text"]), row


def _merge(element, duplicate_notes):
    """One row per group of equal sentences; rows of notes rejected as duplicate ids are
    dropped (counted as filtered_duplicate_note)."""
    _, rows = element
    rows = list(rows)
    kept = [r for r in rows if r["locator"] not in duplicate_notes]
    if len(kept) < len(rows):
        Metrics.counter(NAMESPACE, "filtered_duplicate_note").inc(len(rows) - len(kept))
    if not kept:
        return
    row = merge_duplicates(kept)
    Metrics.counter(NAMESPACE, "kept").inc()
    Metrics.counter(NAMESPACE, "duplicates").inc(row["n_duplicates"])
    yield row


class FindingSentences(beam.PTransform):
    """Notes ((range key, seq, Note) from ReadNotes) -> one row per distinct finding sentence
    of FINDINGS / IMPRESSION, with its duplicates merged; sentences of the notes whose locator
    is in `duplicates` (duplicate note ids) are dropped. The extractor loads once per worker."""

    def __init__(self, params: Radiology, lexicons, duplicates: beam.PCollection):
        super().__init__()
        self.params, self.lexicons, self.duplicates = params, lexicons, duplicates

    def expand(self, notes):
        return (
            notes
            | "Extract" >> beam.ParDo(_ExtractFn(self.params, self.lexicons))
            | "GroupDuplicates" >> beam.GroupByKey()
            | "Merge" >> beam.FlatMap(_merge, beam.pvalue.AsDict(self.duplicates))
        )


def build(
    pipeline: beam.Pipeline,
    files: list[tuple[str, str, int]],
    out_dir: str,
    params: Radiology,
    lexicons,
    tags: tuple[str, ...] = (MIMIC,),
) -> None:
    """Add the radiology job to `pipeline`, writing under `out_dir` (sentences/, dead_letter/),
    with `tags` (the release of the note tables) as the sentences' lineage."""
    from pipelines.jobs.sorted_io import WriteSorted

    read = pipeline | "ReadNotes" >> ReadNotes(files, ["Radiology"], params.num_ranges, params.max_text_chars)
    (
        read["notes"]
        | "FindingSentences" >> FindingSentences(params, lexicons, read["duplicates"])
        | "WriteSentences"
        >> WriteSorted(
            FileSystems.join(out_dir, "sentences"),
            prefix="part",
            num_shards=params.num_shards,
            shard_key=lambda r: r["doc_id"],
            sort_key=row_order,
            schema=with_lineage(RADIOLOGY_SENTENCES, tags),
        )
    )
    (
        read["rejects"]
        | "WriteDeadLetters"
        >> WriteSorted(
            FileSystems.join(out_dir, "dead_letter"),
            prefix="part",
            num_shards=1,
            shard_key=lambda r: r["locator"],
            sort_key=dead_letter_sort_key,
            fmt="jsonl",
        )
    )


HEADLINE = ("read", "kept", "filtered", "rejected")  # what `dvc metrics show` shows of the stage
REASONS_PREFIX = "filtered_"


def stats_from(notes: dict[str, int], rad: dict[str, int], inputs: list[str]) -> dict:
    """stats.json: note rows (read = kept + filtered + rejected, reasons in `filtered_by` /
    `rejected_by`) and sentences (sentences = sentences_kept + sentences_duplicate +
    sentences_filtered, reasons in `sentences_filtered_by`)."""
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


def run(
    files: list[tuple[str, str, int]],
    out_dir: str,
    params: Radiology,
    beam_params: Beam,
    beam_args: list[str],
    metrics_file: str | None,
    lexicons,
    tags: tuple[str, ...] = (MIMIC,),
) -> dict:
    """The radiology job end to end into `out_dir` (fresh): sentences/, dead_letter/, stats.json
    reconciled with the rows written, then the stage's summary (and `metrics_file`)."""
    from pipelines.jobs.beam_io import new_pipeline
    from pipelines.jobs.common import check_rows, committed_counters, written_rows
    from pipelines.jobs.sorted_io import fill_empty_shards
    from pipelines.jobs.store import write_file

    sentences, dead = FileSystems.join(out_dir, "sentences"), FileSystems.join(out_dir, "dead_letter")
    pipeline = new_pipeline(beam_params, beam_args)
    build(pipeline, files, out_dir, params, lexicons, tags)
    result = pipeline.run()
    result.wait_until_finish()
    raise_file_errors(dead)
    fill_empty_shards(sentences, "part", params.num_shards, with_lineage(RADIOLOGY_SENTENCES, tags))
    fill_empty_shards(dead, "part", 1, fmt="jsonl")
    stats = stats_from(
        committed_counters(result, NOTES_NS),
        committed_counters(result, NAMESPACE),
        [name for _, name, _ in files],
    )
    check_rows("sentences", written_rows(sentences, True), "sentences_kept", stats["sentences_kept"])
    check_rows("dead_letter", written_rows(dead, False), "rejected", stats["rejected"])
    check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
    check_reconciles(stats, "sentences", ["sentences_kept", "sentences_duplicate", "sentences_filtered"])
    write_file(FileSystems.join(out_dir, "stats.json"), canonical_json(stats).encode("utf-8"))
    shown = {k: v for k, v in stats.items() if k != "inputs"}
    finish_stage("medsimp radiology", stats, HEADLINE, metrics_file, summary=shown)
    return stats
