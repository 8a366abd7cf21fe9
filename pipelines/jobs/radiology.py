"""The radiology Beam job: MIMIC-III NOTEEVENTS (category Radiology) and MIMIC-IV-Note
radiology tables -> de-duplicated FINDINGS / IMPRESSION finding sentences with metadata.

DAG (RadiologySentences; `run` hands it to `pipelines.jobs.runtime.run_job`, which writes
each output with `WriteSorted`)::

    ReadNotes (pipelines.jobs.notes, categories=[Radiology]) -> notes | rejects | duplicates
    notes -> FindingSentences: Extract (pipelines.text.radiology.RadiologyExtractor), key by
          dedup_key -> GroupByKey -> merge_duplicates (minus duplicate-id notes) -> sentences/
    rejects -> dead_letter/

Counters: the reader's `notes` namespace (rows_read = notes_kept + notes_filtered_* +
rejected_*) and `radiology` (sentences = kept + duplicates + filtered_*); the command turns
them into the stats contract (`stats_from`).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from medsimp.lineage import MIMIC
from medsimp.params_schema import Beam, Radiology
from medsimp.schemas import RADIOLOGY_SENTENCES
from pipelines.jobs.notes import DEAD_LETTERS, ReadNotes, note_counts, raise_file_errors
from pipelines.jobs.notes import NAMESPACE as NOTES_NS
from pipelines.jobs.runtime import JobSpec, Table, committed_counters, run_job
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


class RadiologySentences(beam.PTransform):
    """Note files -> 'sentences' (FindingSentences) and 'dead' (every rejected row)."""

    def __init__(self, files: list[tuple[str, str, int]], params: Radiology, lexicons):
        super().__init__()
        self.files, self.params, self.lexicons = files, params, lexicons

    def expand(self, pbegin):
        p = self.params
        read = pbegin | "ReadNotes" >> ReadNotes(self.files, ["Radiology"], p.num_ranges, p.max_text_chars)
        sentences = read["notes"] | "FindingSentences" >> FindingSentences(
            p, self.lexicons, read["duplicates"]
        )
        return {"sentences": sentences, "dead": read["rejects"]}


TABLES = {
    "sentences": Table(
        "sentences", RADIOLOGY_SENTENCES, lambda r: r["doc_id"], row_order, counter="sentences_kept"
    ),
    "dead": DEAD_LETTERS,
}
RECONCILE = (
    ("read", ("kept", "filtered", "rejected")),
    ("sentences", ("sentences_kept", "sentences_duplicate", "sentences_filtered")),
)
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
    inputs = [name for _, name, _ in files]
    spec = JobSpec(
        NAMESPACE,
        TABLES,
        tags,
        num_shards=params.num_shards,
        reconcile=RECONCILE,
        hidden=("inputs",),
        after_run=lambda out: raise_file_errors(FileSystems.join(out, "dead_letter")),
        stats=lambda result: stats_from(
            committed_counters(result, NOTES_NS), committed_counters(result, NAMESPACE), inputs
        ),
    )
    job = RadiologySentences(files, params, lexicons)
    return run_job(spec, job, out_dir, beam_params, beam_args, metrics_file)
