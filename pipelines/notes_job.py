"""The notes Beam job: MIMIC note tables -> sentences of target sections with MedLane's
selection flags, dead letters and reconciled counts.

DAG (each step a composite transform)::

    ReadNotes:        input files -> byte ranges -> Reshuffle -> records (Note | Reject)
                      (category/ISERROR filtering happens inside the reading DoFn: counted only)
    ExtractSections:  Note -> {provenance, sections}, grouped into batches of `batch_notes`
                      consecutive notes of one byte range (GroupByKey: spreads the CPU work)
    SelectSentences:  per batch: split sentences + Algorithm 1 -> one sorted parquet file
    WriteDeadLetters: medsimp.pipelines.beam_io.WriteSorted

Sentences are written per batch, not through `WriteSorted`: a batch's content and file name
(`part-<file>-<range>-<batch>.parquet`) depend only on the input and params, so outputs are
deterministic, and no shuffle ever holds all sentences (the in-memory FnApiRunner keeps
shuffled data in RAM: with `WriteSorted` the full MIMIC-III run peaked at 3.6 GB).

An uncompressed file is cut into `num_ranges` byte ranges read in parallel (see
medsimp.pipelines.noteevents); a .gz file is one range (gzip is not seekable), so it is read by
one worker while the sentence work after the grouping is shared by all.
"""
from __future__ import annotations

import pickle
import zlib
from collections import Counter
from collections.abc import Mapping

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from medsimp.pipelines import noteevents
from medsimp.pipelines.beam_io import open_file
from medsimp.lineage import MIMIC, with_lineage
from medsimp.pipelines import noteevents
from medsimp.pipelines.notes_core import SENTENCE_SCHEMA, NoteProcessor, section_record

NAMESPACE = "notes"


def _count(counts: Mapping[str, int]) -> None:
    for name, value in counts.items():
        if value:
            Metrics.counter(NAMESPACE, name).inc(value)


class _ReadRangeFn(beam.DoFn):
    """(range_key, path, name, start, end) -> (range_key, seq, Note) (main) and Reject dicts
    (tagged 'rejects'); filtered rows are only counted. `seq` numbers the kept notes."""

    def __init__(self, categories: list[str] | None):
        self.categories = categories

    def process(self, element):
        key, path, name, start, end = element
        counts: Counter = Counter()
        for rec in noteevents.iter_records(path, categories=self.categories, byte_range=(start, end),
                                           source=name, opener=open_file):
            counts["rows_read"] += 1
            if rec is noteevents.FILTERED_CATEGORY:
                counts["notes_filtered_category"] += 1
            elif rec is noteevents.FILTERED_ISERROR:
                counts["notes_filtered_iserror"] += 1
            elif isinstance(rec, noteevents.Note):
                yield key, counts["notes_kept"], rec
                counts["notes_kept"] += 1
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
        ranges = [(f"{i:03d}-{j:03d}", path, name, a, b)
                  for i, (path, name, size) in enumerate(self.files)
                  for j, (a, b) in enumerate(noteevents.plan_ranges(path, size, self.num_ranges))]
        return (pbegin
                | "Ranges" >> beam.Create(ranges)
                | "Spread" >> beam.Reshuffle()
                | "Read" >> beam.ParDo(_ReadRangeFn(self.categories)).with_outputs("rejects",
                                                                                   main="notes"))


class _SectionsFn(beam.DoFn):
    def __init__(self, params: Mapping):
        self.params = dict(params)
        self.batch = int(params.get("batch_notes", 1000))

    def setup(self):
        from medsimp.pipelines.sections import extractor_from_params

        self.extractor = extractor_from_params(self.params)

    def process(self, element):
        key, seq, note = element
        record = section_record(note, self.extractor)
        if record is None:
            Metrics.counter(NAMESPACE, "notes_without_sections").inc()
            return
        _count({"notes_with_sections": 1, "sections": len(record["sections"])})
        # Compressed bytes: the in-memory runner keeps shuffled values in RAM (as Python
        # objects unless they are bytes).
        yield f"{key}-{seq // self.batch:05d}", zlib.compress(pickle.dumps((seq, record), 5), 1)


class ExtractSections(beam.PTransform):
    """(range, seq, Note) -> target sections, grouped in batches of consecutive notes
    (notes without any target section are counted, not emitted)."""

    def __init__(self, params: Mapping):
        super().__init__()
        self.params = params

    def expand(self, notes):
        return (notes
                | "Sections" >> beam.ParDo(_SectionsFn(self.params))
                | "Batch" >> beam.GroupByKey())


class _SentencesFn(beam.DoFn):
    def __init__(self, params: Mapping, lexicons: tuple[list[str], list[str]], out_dir: str,
                 tags: tuple[str, ...] = (MIMIC,)):
        self.params, self.lexicons, self.out_dir, self.tags = dict(params), lexicons, out_dir, tags

    def setup(self):
        self.processor = NoteProcessor(self.params, *self.lexicons)

    def process(self, element):
        from medsimp.pipelines.beam_io import table_bytes

        key, packed = element
        rows = [row for _, record in sorted(pickle.loads(zlib.decompress(p)) for p in packed)
                for row in self.processor.sentence_rows(record)]
        kept = sum(r["keep"] for r in rows)
        _count({"sentences": len(rows), "sentences_selected": kept,
                "sentences_not_selected": len(rows) - kept})
        path = FileSystems.join(self.out_dir, f"part-{key}.parquet")
        with FileSystems.create(path) as fh:
            fh.write(table_bytes(rows, with_lineage(SENTENCE_SCHEMA, self.tags)))
        yield path


class SelectSentences(beam.PTransform):
    """Batches of sections -> sentence rows with Algorithm 1's n, abb, unc, ratio and keep,
    written as one parquet file per batch under `out_dir`. The lexicons travel with the
    transform, so workers need no local files."""

    def __init__(self, params: Mapping, lexicons: tuple[list[str], list[str]], out_dir: str,
                 tags: tuple[str, ...] = (MIMIC,)):
        super().__init__()
        self.params, self.lexicons, self.out_dir, self.tags = params, lexicons, out_dir, tags

    def expand(self, batches):
        return batches | "SplitSelectWrite" >> beam.ParDo(
            _SentencesFn(self.params, self.lexicons, self.out_dir, self.tags))


def dead_letter_sort_key(row: Mapping) -> tuple:
    source, _, offset = row["locator"].rpartition("@")
    return (source, int(offset) if offset.isdigit() else -1, row["reason"])


def build(pipeline: beam.Pipeline, files: list[tuple[str, str, int]], out_dir: str,
          params: Mapping, lexicons: tuple[list[str], list[str]],
          tags: tuple[str, ...] = (MIMIC,)) -> None:
    """Add the notes job to `pipeline`, writing under `out_dir` (sentences/, dead_letter/),
    with `tags` (the release of the note tables) as the sentences' lineage.
    The caller creates `out_dir/sentences` and writes an empty part if the job wrote none."""
    from medsimp.pipelines.beam_io import WriteSorted

    categories = params.get("categories", ["Discharge summary"])
    read = pipeline | "ReadNotes" >> ReadNotes(files, categories,
                                               int(params.get("num_ranges", 2)))
    (read.notes
     | "ExtractSections" >> ExtractSections(params)
     | "SelectSentences" >> SelectSentences(params, lexicons, FileSystems.join(out_dir, "sentences"), tags))
    (read.rejects
     | "WriteDeadLetters" >> WriteSorted(FileSystems.join(out_dir, "dead_letter"), prefix="part",
                                         num_shards=1, shard_key=lambda r: r["locator"],
                                         sort_key=dead_letter_sort_key, fmt="jsonl"))
