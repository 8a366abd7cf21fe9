"""The notes Beam job: MIMIC note tables -> sentences of target sections with MedLane's
selection flags, dead letters and reconciled counts.

DAG (each step a composite transform)::

    ReadNotes:        input files -> byte ranges -> Reshuffle -> records (Note | Reject)
                      (category/ISERROR filtering happens inside the reading DoFn: counted only)
    ExtractSections:  Note -> {provenance, sections} -> Reshuffle (spreads the CPU work)
    SelectSentences:  split sentences + Algorithm 1 -> sentence rows
    WriteSentences / WriteDeadLetters: pipelines.beam_io.WriteSorted

An uncompressed file is cut into `num_ranges` byte ranges read in parallel (see
pipelines.noteevents); a .gz file is one range (gzip is not seekable), so it is read by
one worker while the section/sentence work after the Reshuffle is shared by all.
"""
from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Mapping

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from pipelines import noteevents
from pipelines.notes_core import SENTENCE_SCHEMA, NoteProcessor, section_record, sentence_sort_key

NAMESPACE = "notes"


def _count(counts: Mapping[str, int]) -> None:
    for name, value in counts.items():
        if value:
            Metrics.counter(NAMESPACE, name).inc(value)


def _open(path: str):
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


class _ReadRangeFn(beam.DoFn):
    """(path, name, start, end) -> Note (main) and Reject (tagged 'rejects'); counts the rest."""

    def __init__(self, categories: list[str] | None):
        self.categories = categories

    def process(self, element):
        path, name, start, end = element
        counts: Counter = Counter()
        for rec in noteevents.iter_records(path, categories=self.categories, byte_range=(start, end),
                                           source=name, opener=_open):
            counts["rows_read"] += 1
            if rec is noteevents.FILTERED_CATEGORY:
                counts["notes_filtered_category"] += 1
            elif rec is noteevents.FILTERED_ISERROR:
                counts["notes_filtered_iserror"] += 1
            elif isinstance(rec, noteevents.Note):
                counts["notes_kept"] += 1
                yield rec
            else:
                counts[f"rejected_{rec.reason}"] += 1
                yield beam.pvalue.TaggedOutput("rejects", rec.as_dict())
        _count(counts)


class ReadNotes(beam.PTransform):
    """Note files (path, display name, size) -> PCollections 'notes' and 'rejects'."""

    def __init__(self, files: list[tuple[str, str, int]], categories: list[str] | None,
                 num_ranges: int):
        super().__init__()
        self.files, self.categories, self.num_ranges = files, categories, num_ranges

    def expand(self, pbegin):
        ranges = [(path, name, a, b) for path, name, size in self.files
                  for a, b in noteevents.plan_ranges(path, size, self.num_ranges)]
        return (pbegin
                | "Ranges" >> beam.Create(ranges)
                | "Spread" >> beam.Reshuffle()
                | "Read" >> beam.ParDo(_ReadRangeFn(self.categories)).with_outputs("rejects",
                                                                                   main="notes"))


class _SectionsFn(beam.DoFn):
    def __init__(self, params: Mapping):
        self.params = dict(params)

    def setup(self):
        from pipelines.sections import extractor_from_params

        self.extractor = extractor_from_params(self.params)

    def process(self, note):
        record = section_record(note, self.extractor)
        if record is None:
            Metrics.counter(NAMESPACE, "notes_without_sections").inc()
            return
        _count({"notes_with_sections": 1, "sections": len(record["sections"])})
        yield record


class ExtractSections(beam.PTransform):
    """Note -> provenance + target sections (notes without any are counted, not emitted)."""

    def __init__(self, params: Mapping):
        super().__init__()
        self.params = params

    def expand(self, notes):
        # Records cross the shuffle as pickled bytes: the in-memory runner holds shuffled
        # values as Python objects otherwise.
        return (notes
                | "Sections" >> beam.ParDo(_SectionsFn(self.params))
                | "Pack" >> beam.Map(pickle.dumps, protocol=5)
                | "Spread" >> beam.Reshuffle()
                | "Unpack" >> beam.Map(pickle.loads))


class _SentencesFn(beam.DoFn):
    def __init__(self, params: Mapping, lexicons: tuple[list[str], list[str]]):
        self.params, self.lexicons = dict(params), lexicons

    def setup(self):
        self.processor = NoteProcessor(self.params, *self.lexicons)

    def process(self, record):
        rows = self.processor.sentence_rows(record)
        kept = sum(r["keep"] for r in rows)
        _count({"sentences": len(rows), "sentences_selected": kept,
                "sentences_not_selected": len(rows) - kept})
        yield from rows


class SelectSentences(beam.PTransform):
    """Sections -> sentence rows with Algorithm 1's n, abb, unc, ratio and keep.
    The lexicons travel with the transform, so workers need no local files."""

    def __init__(self, params: Mapping, lexicons: tuple[list[str], list[str]]):
        super().__init__()
        self.params, self.lexicons = params, lexicons

    def expand(self, records):
        return records | "SplitAndSelect" >> beam.ParDo(_SentencesFn(self.params, self.lexicons))


def dead_letter_sort_key(row: Mapping) -> tuple:
    source, _, offset = row["locator"].rpartition("@")
    return (source, int(offset) if offset.isdigit() else -1, row["reason"])


def build(pipeline: beam.Pipeline, files: list[tuple[str, str, int]], out_dir: str,
          params: Mapping, lexicons: tuple[list[str], list[str]]) -> None:
    """Add the notes job to `pipeline`, writing under `out_dir` (sentences/, dead_letter/)."""
    from pipelines.beam_io import WriteSorted

    categories = params.get("categories", ["Discharge summary"])
    read = pipeline | "ReadNotes" >> ReadNotes(files, categories,
                                               int(params.get("num_ranges", 2)))
    (read.notes
     | "ExtractSections" >> ExtractSections(params)
     | "SelectSentences" >> SelectSentences(params, lexicons)
     | "WriteSentences" >> WriteSorted(FileSystems.join(out_dir, "sentences"), prefix="part",
                                       num_shards=int(params.get("num_shards", 4)),
                                       shard_key=lambda r: r["doc_id"],
                                       sort_key=sentence_sort_key, schema=SENTENCE_SCHEMA,
                                       compact=True))
    (read.rejects
     | "WriteDeadLetters" >> WriteSorted(FileSystems.join(out_dir, "dead_letter"), prefix="part",
                                         num_shards=1, shard_key=lambda r: r["locator"],
                                         sort_key=dead_letter_sort_key, fmt="jsonl"))
