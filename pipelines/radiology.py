"""The radiology Beam job: MIMIC-III NOTEEVENTS (category Radiology) and MIMIC-IV-Note
radiology tables -> de-duplicated FINDINGS / IMPRESSION finding sentences with metadata.

DAG::

    ReadNotes (medsimp.pipelines.notes_job, categories=[Radiology]) -> notes | rejects | duplicates
    notes -> Extract (radiology_core.RadiologyExtractor) -> key by dedup_key
          -> GroupByKey -> merge_duplicates (minus duplicate-id notes) -> WriteSorted(sentences/)
    rejects -> WriteSorted(dead_letter/)

Counters: the reader's `notes` namespace (rows_read = notes_kept + notes_filtered_* +
rejected_*) and `radiology` (sentences = kept + duplicates + filtered_*); the command turns
them into the stats contract (medsimp.commands.radiology.stats_from).
"""

from __future__ import annotations

from collections.abc import Mapping

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from medsimp.lineage import MIMIC, with_lineage
from medsimp.pipelines.radiology_core import (
    RadiologyExtractor,
    dedup_key,
    merge_duplicates,
    row_order,
)
from medsimp.schemas import RADIOLOGY_SENTENCES

NAMESPACE = "radiology"


class _ExtractFn(beam.DoFn):
    def __init__(self, params: Mapping, lexicons):
        self.params, self.lexicons = dict(params), lexicons

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


def build(
    pipeline: beam.Pipeline,
    files: list[tuple[str, str, int]],
    out_dir: str,
    params: Mapping,
    lexicons,
    tags: tuple[str, ...] = (MIMIC,),
) -> None:
    """Add the radiology job to `pipeline`, writing under `out_dir` (sentences/, dead_letter/),
    with `tags` (the release of the note tables) as the sentences' lineage."""
    from medsimp.pipelines.beam_io import WriteSorted
    from medsimp.pipelines.notes_job import ReadNotes, dead_letter_sort_key

    read = pipeline | "ReadNotes" >> ReadNotes(
        files, ["Radiology"], int(params.get("num_ranges", 2)), params.get("max_text_chars")
    )
    (
        read["notes"]
        | "Extract" >> beam.ParDo(_ExtractFn(params, lexicons))
        | "GroupDuplicates" >> beam.GroupByKey()
        | "Merge" >> beam.FlatMap(_merge, beam.pvalue.AsDict(read["duplicates"]))
        | "WriteSentences"
        >> WriteSorted(
            FileSystems.join(out_dir, "sentences"),
            prefix="part",
            num_shards=int(params.get("num_shards", 1)),
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
