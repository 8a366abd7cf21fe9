"""The notes Beam job: MIMIC note tables -> sentences of target sections with MedLane's
selection flags, dead letters and reconciled counts.

DAG (each step a composite transform)::

    ReadNotes:        input files -> byte ranges (cut at row starts by a grammar scan) -> Reshuffle
                      -> records (Note | Reject); note ids -> GroupByKey -> duplicate_id dead
                      letters (category/ISERROR filtering happens inside the reading DoFn:
                      counted only)
    ExtractSections:  Note -> {provenance, sections}, grouped into batches of `batch_notes`
                      consecutive notes of one byte range (GroupByKey: spreads the CPU work)
    SelectSentences:  per batch, minus duplicate-id notes (side input): split sentences +
                      Algorithm 1 -> one sorted parquet file
    NoteSentences:    the three above, one composite; `run` hands it to
                      `pipelines.jobs.runtime.run_job`, which writes the dead letters
                      (`WriteSorted`) and the stats

Sentences are written per batch, not through `WriteSorted`: a batch's content and file name
(`part-<file>-<range>-<batch>.parquet`) depend only on the input and params, so outputs are
deterministic, and no shuffle ever holds all sentences (the in-memory FnApiRunner keeps
shuffled data in RAM: with `WriteSorted` the full MIMIC-III run peaked at 3.6 GB).

An uncompressed file is cut into `num_ranges` byte ranges read in parallel (see
pipelines.sources.noteevents); a .gz file is one range (gzip is not seekable), so it is read by
one worker while the sentence work after the grouping is shared by all.
"""

from __future__ import annotations

import json
import os
import pickle
import posixpath
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from medsimp.errors import InputError
from medsimp.lineage import MIMIC, MIMIC_III, MIMIC_IV_NOTE, normalise, with_lineage
from medsimp.params_schema import Beam, Notes
from medsimp.schemas import NOTES_SENTENCES
from pipelines.jobs.runtime import JobSpec, Table, committed_counters, run_job
from pipelines.jobs.sorted_io import glob_escape, table_bytes
from pipelines.jobs.store_dofn import StoreDoFn
from pipelines.sources import noteevents
from pipelines.sources.files import open_file
from pipelines.sources.noteevents import NoteFileError, check_file
from pipelines.text.notes import NoteProcessor, section_record
from pipelines.text.sections import extractor_from_params

NAMESPACE = "notes"


def _count(counts: Mapping[str, int]) -> None:
    for name, value in counts.items():
        if value:
            Metrics.counter(NAMESPACE, name).inc(value)


class _PlanFn(StoreDoFn):
    """(file index, path, name, size) -> (range_key, path, name, start, end) per byte range."""

    def __init__(self, num_ranges: int):
        super().__init__()
        self.num_ranges = num_ranges

    def process(self, element):
        i, path, name, size = element
        try:
            ranges = noteevents.plan_ranges(path, size, self.num_ranges, opener=open_file)
        except noteevents.NoteFileError:
            ranges = [(0, None)]  # the reader reports the fault
        for j, (a, b) in enumerate(ranges):
            yield f"{i:03d}-{j:03d}", path, name, a, b


class _ReadRangeFn(StoreDoFn):
    """(range_key, path, name, start, end) -> (range_key, seq, Note) (main), Reject dicts
    (tagged 'rejects', a whole-file fault as reason `file_error`) and (note_id, (range_key,
    seq, locator)) (tagged 'ids'); filtered rows are only counted. `seq` numbers kept notes."""

    def __init__(self, categories: list[str] | None, max_text_chars: int | None):
        super().__init__()
        self.categories, self.max_text_chars = categories, max_text_chars

    def process(self, element):
        key, path, name, start, end = element
        counts = Counter()
        records = noteevents.iter_records(
            path,
            categories=self.categories,
            byte_range=(start, end),
            source=name,
            opener=open_file,
            max_text_chars=self.max_text_chars,
            runs=True,
        )
        try:
            for rec in records:
                if isinstance(rec, noteevents.Filtered):  # most rows, in runs
                    counts["rows_read"] += rec.rows
                    counts[f"notes_filtered_{rec.reason}"] += rec.rows
                    continue
                counts["rows_read"] += 1
                if isinstance(rec, noteevents.Note):
                    yield beam.pvalue.TaggedOutput(
                        "ids", (rec.note_id, (key, counts["notes_kept"], rec.locator))
                    )
                    yield key, counts["notes_kept"], rec
                    counts["notes_kept"] += 1
                else:
                    counts[f"rejected_{rec.reason}"] += 1
                    yield beam.pvalue.TaggedOutput("rejects", rec.as_dict())
        except noteevents.NoteFileError as exc:
            counts["file_errors"] += 1
            yield beam.pvalue.TaggedOutput(
                "rejects",
                noteevents.Reject(name, f"{name}@{start}", "file_error", {"problem": str(exc)}).as_dict(),
            )
        _count(counts)


def _duplicates(element):
    """(note_id, [(range_key, seq, locator)]) -> a duplicate_id dead letter for every note
    after the first (in file and byte order)."""
    note_id, seen = element
    first, *later = sorted(seen)
    for _, _, locator in later:
        Metrics.counter(NAMESPACE, "rejected_duplicate_id").inc()
        source = locator.rpartition("@")[0]
        yield noteevents.Reject(
            source, locator, "duplicate_id", {"field": "note id", "first": first[2]}
        ).as_dict()


def display_names(paths: list[str]) -> list[str]:
    """Locator names: each file's base name, or its path below the inputs' common folder
    when two inputs share a base name (so locators and dead letters stay unique)."""
    names = [posixpath.basename(p.rstrip("/")) for p in paths]
    if len(set(names)) == len(names):
        return names
    common = posixpath.commonpath(paths) if all(p.startswith("/") for p in paths) else ""
    return [posixpath.relpath(p, common) if common else p for p in paths]


class ReadNotes(beam.PTransform):
    """Note files (path, display name, size) -> PCollections 'notes', 'rejects' (including
    `duplicate_id` dead letters: a note id seen before, in file then byte order) and
    'duplicates' ((locator, 1) of those notes, for `AsDict`: consumers drop them, the counts
    treat them as rejected)."""

    def __init__(
        self,
        files: list[tuple[str, str, int]],
        categories: list[str] | None,
        num_ranges: int,
        max_text_chars: int | None = None,
    ):
        super().__init__()
        self.files, self.categories, self.num_ranges = files, categories, num_ranges
        self.max_text_chars = max_text_chars

    def expand(self, pbegin):
        read = (
            pbegin
            | "Files" >> beam.Create([(i, *f) for i, f in enumerate(self.files)])
            | "Plan" >> beam.ParDo(_PlanFn(self.num_ranges))
            | "Spread" >> beam.Reshuffle()
            | "Read"
            >> beam.ParDo(_ReadRangeFn(self.categories, self.max_text_chars)).with_outputs(
                "rejects", "ids", main="notes"
            )
        )
        dup_letters = read.ids | "GroupIds" >> beam.GroupByKey() | "Duplicates" >> beam.FlatMap(_duplicates)
        rejects = (read.rejects, dup_letters) | "AllRejects" >> beam.Flatten()
        duplicates = dup_letters | "DuplicateLocators" >> beam.Map(lambda r: (r["locator"], 1))
        return {"notes": read.notes, "rejects": rejects, "duplicates": duplicates}


class _SectionsFn(beam.DoFn):
    def __init__(self, params: Notes):
        self.params = params
        self.batch = self.params.batch_notes

    def setup(self):
        self.extractor = extractor_from_params(self.params)

    def process(self, element):
        key, seq, note = element
        record = section_record(note, self.extractor)
        # Compressed bytes: the in-memory runner keeps shuffled values in RAM (as Python
        # objects unless they are bytes).
        yield f"{key}-{seq // self.batch:05d}", zlib.compress(pickle.dumps((seq, record), 5), 1)


class ExtractSections(beam.PTransform):
    """(range, seq, Note) -> target sections, grouped in batches of consecutive notes."""

    def __init__(self, params: Notes):
        super().__init__()
        self.params = params

    def expand(self, notes):
        return notes | "Sections" >> beam.ParDo(_SectionsFn(self.params)) | "Batch" >> beam.GroupByKey()


class _SentencesFn(StoreDoFn):
    def __init__(
        self,
        params: Notes,
        lexicons: tuple[list[str], list[str]],
        out_dir: str,
        tags: tuple[str, ...] = (MIMIC,),
    ):
        super().__init__()
        self.params = params
        self.lexicons, self.out_dir, self.tags = lexicons, out_dir, tags

    def setup(self):
        super().setup()
        self.processor = NoteProcessor(self.params, *self.lexicons)

    def process(self, element, duplicates):
        key, packed = element
        records = [
            record
            for _, record in sorted(pickle.loads(zlib.decompress(p)) for p in packed)
            if record["locator"] not in duplicates
        ]  # counted as rejected duplicate_id
        with_sections = [r for r in records if r["sections"]]
        rows = [row for record in with_sections for row in self.processor.sentence_rows(record)]
        kept = sum(r["keep"] for r in rows)
        _count(
            {
                "notes_with_sections": len(with_sections),
                "notes_without_sections": len(records) - len(with_sections),
                "sections": sum(len(r["sections"]) for r in with_sections),
                "sentences": len(rows),
                "sentences_selected": kept,
                "sentences_not_selected": len(rows) - kept,
            }
        )
        if not with_sections:
            return
        path = FileSystems.join(self.out_dir, f"part-{key}.parquet")
        with FileSystems.create(path) as fh:
            fh.write(table_bytes(rows, with_lineage(NOTES_SENTENCES, self.tags)))
        yield path


class SelectSentences(beam.PTransform):
    """Batches of sections -> sentence rows with Algorithm 1's n, abb, unc, ratio and keep,
    written as one parquet file per batch under `out_dir`; notes whose locator is in
    `duplicates` are dropped. The lexicons travel with the transform, so workers need no
    local files."""

    def __init__(
        self,
        params: Notes,
        lexicons: tuple[list[str], list[str]],
        out_dir: str,
        duplicates: beam.PCollection,
        tags: tuple[str, ...] = (MIMIC,),
    ):
        super().__init__()
        self.params, self.lexicons, self.out_dir, self.tags = params, lexicons, out_dir, tags
        self.duplicates = duplicates

    def expand(self, batches):
        return batches | "SplitSelectWrite" >> beam.ParDo(
            _SentencesFn(self.params, self.lexicons, self.out_dir, self.tags),
            beam.pvalue.AsDict(self.duplicates),
        )


def dead_letter_sort_key(row: Mapping) -> tuple:
    source, _, offset = row["locator"].rpartition("@")
    return (source, int(offset) if offset.isdigit() else -1, row["reason"])


class NoteSentences(beam.PTransform):
    """Note files -> 'sentences' (the parquet files SelectSentences wrote under
    `out_dir/sentences`, with `tags` as their lineage) and 'dead' (every rejected row)."""

    def __init__(
        self,
        files: list[tuple[str, str, int]],
        out_dir: str,
        params: Notes,
        lexicons: tuple[list[str], list[str]],
        tags: tuple[str, ...] = (MIMIC,),
    ):
        super().__init__()
        self.files, self.out_dir, self.params = files, out_dir, params
        self.lexicons, self.tags = lexicons, tags

    def expand(self, pbegin):
        p = self.params
        read = pbegin | "ReadNotes" >> ReadNotes(self.files, p.categories, p.num_ranges, p.max_text_chars)
        sentences = (
            read["notes"]
            | "ExtractSections" >> ExtractSections(p)
            | "SelectSentences"
            >> SelectSentences(
                p, self.lexicons, FileSystems.join(self.out_dir, "sentences"), read["duplicates"], self.tags
            )
        )
        return {"sentences": sentences, "dead": read["rejects"]}


DEAD_LETTERS = Table(
    "dead_letter", None, lambda r: r["locator"], dead_letter_sort_key, counter="rejected"
)  # in file and byte order (the radiology job's too)
TABLES = {"sentences": Table("sentences", NOTES_SENTENCES, counter="sentences"), "dead": DEAD_LETTERS}
RECONCILE = (
    ("read", ("kept", "filtered", "rejected")),
    ("kept", ("notes_with_sections", "notes_without_sections")),
    ("sentences", ("sentences_selected", "sentences_not_selected")),
)


def run(
    files: list[tuple[str, str, int]],
    out_dir: str,
    params: Notes,
    beam_params: Beam,
    beam_args: list[str],
    metrics_file: str | None,
    lexicons: tuple[list[str], list[str]],
    tags: tuple[str, ...] = (MIMIC,),
) -> dict:
    """The notes job end to end into `out_dir` (fresh): sentences/, dead_letter/, stats.json
    reconciled with the rows written, then the stage's summary (and `metrics_file`)."""
    inputs = [name for _, name, _ in files]
    spec = JobSpec(
        NAMESPACE,
        TABLES,
        tags,
        reconcile=RECONCILE,
        hidden=("inputs", "categories"),
        after_run=lambda out: raise_file_errors(FileSystems.join(out, "dead_letter")),
        stats=lambda result: stats_from_counters(committed_counters(result, NAMESPACE), inputs, params),
    )
    job = NoteSentences(files, out_dir, params, lexicons, tags)
    return run_job(spec, job, out_dir, beam_params, beam_args, metrics_file)


def note_files(patterns: list[str], expand_dirs: bool) -> list[tuple[str, str, int]]:
    """(path, display name, size) of every file matching `patterns` (a folder gives its
    *.csv* files when `expand_dirs`), each checked up front by `noteevents.check_file`.
    Raises InputError (one line, naming the file, never its content)."""
    found = []
    for pattern in patterns:
        if FileSystems.exists(pattern) and os.path.isdir(pattern):
            if not expand_dirs:
                raise InputError(f"{pattern} is a directory; give a note file or a glob")
            pattern = FileSystems.join(pattern, "*.csv*")
        try:
            matches = FileSystems.match([pattern])[0].metadata_list
        except Exception as exc:  # noqa: BLE001 - Beam wraps every match failure
            raise InputError(f"cannot list {pattern!r} ({type(exc).__name__})") from None
        if not matches:
            raise InputError(f"no file matches {pattern!r}")
        found += [(m.path, m.size_in_bytes) for m in matches]
    found = sorted(set(found))
    for path, _ in found:  # no record or Beam coder can carry a name that is not UTF-8
        try:
            path.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(
                f"{FileSystems.split(path)[0]!a}: a file name holds a byte that is not UTF-8 "
                f"(at character {exc.start + 1}); rename it"
            ) from None
    names = display_names([p for p, _ in found])
    for (path, _), name in zip(found, names):
        try:
            noteevents.check_file(path, source=name, opener=open_file)
        except noteevents.NoteFileError as exc:
            raise InputError(str(exc)) from None
    return [(path, name, size) for (path, size), name in zip(found, names)]


def raise_file_errors(dead_letter_dir: str) -> None:
    """InputError naming the first whole-file fault a reader met mid-file (e.g. a truncated
    .gz), found among the dead letters; nothing when there is none."""
    for match in sorted(
        m.path
        for m in FileSystems.match([FileSystems.join(glob_escape(dead_letter_dir), "*.jsonl")])[
            0
        ].metadata_list
    ):
        with FileSystems.open(match) as fh:
            for line in fh:
                row = json.loads(line)
                if row["reason"] == "file_error":
                    raise InputError(row["detail"]["problem"])


# --- the stage's numbers and lineage (used by the notes and radiology commands) ---

FILTERED = ("notes_filtered_category", "notes_filtered_iserror")


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


def stats_from_counters(counts: dict[str, int], inputs: list[str], params: Notes) -> dict:
    """The stats.json record from the job's counters (reconciliation is checked by the caller)."""
    get = lambda k: int(counts.get(k, 0))  # noqa: E731
    return {
        "inputs": inputs,
        "categories": list(params.categories),
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
    releases = {"mimic3": MIMIC_III, "mimic4": MIMIC_IV_NOTE}
    tags = set()
    for path in paths:
        try:  # the reader's own header check (BOM, any newline, gzip)
            layout = check_file(path, opener=lambda p: FileSystems.open(p, compression_type="uncompressed"))
            tags.add(releases.get(layout.schema.name, MIMIC))
        except (OSError, EOFError, NoteFileError, ValueError):
            tags.add(MIMIC)
    return normalise(tags or [MIMIC])
