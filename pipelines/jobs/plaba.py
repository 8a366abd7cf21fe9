"""Beam job: PLABA JSON -> sentence table + gold sentence-aligned pairs."""

from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from medsimp.errors import InputError
from medsimp.params_schema import Beam, Plaba
from medsimp.schemas import PLABA_PAIRS, PLABA_SENTENCES
from medsimp.stats import dead_letter
from pipelines.jobs.common import Counter
from pipelines.jobs.runtime import JobSpec, Table, dead_letter_table, run_job
from pipelines.jobs.store_dofn import FilesFn
from pipelines.sources.files import check_file, read_text
from pipelines.sources.plaba import SOURCE, document_sentence_rows, gold_pairs, iter_documents, top_members
from pipelines.sources.records import FormatError, guarded

TABLES = {
    "sentences": Table(
        "sentences",
        PLABA_SENTENCES,
        lambda r: r["doc_id"],
        lambda r: (r["doc_id"], r["side"], r["sentence_index"]),
        counter="sentences.*",
    ),
    "pairs": Table(
        "pairs",
        PLABA_PAIRS,
        lambda r: r["pair_id"],
        lambda r: (r["question_id"], r["pmid"], r["adaptation"], r["sentence_number"]),
        counter="pairs",
    ),
    "dead": dead_letter_table(),
}


def check_input(path: str) -> None:
    """Whole-file faults (input_files), and a file that is not one JSON object: one line, exit 2."""
    check_file(path)
    try:
        top_members(read_text(path))
    except FormatError as exc:
        raise InputError(f"{path}: not PLABA JSON ({exc.detail})") from None


def read_file(path: str):
    name = FileSystems.split(path)[1]
    try:
        yield from iter_documents(read_text(path), name)
    except FormatError as exc:  # checked before the run; the file changed since
        yield f"{name}#", exc


def _document(doc, locator: str) -> tuple[list[dict], list[dict]]:
    rows = document_sentence_rows(doc, locator)
    return rows, gold_pairs(doc, rows)


@beam.typehints.with_output_types(Any)
class DocFn(beam.DoFn):
    def setup(self):
        self.count = Counter(SOURCE)

    def process(self, item):
        locator, doc = item
        self.count.inc("read")
        done = doc if isinstance(doc, FormatError) else guarded(_document, doc, locator)
        if isinstance(done, FormatError):
            self.count.inc("rejected")
            self.count.inc(f"rejected.{done.reason}")
            yield beam.pvalue.TaggedOutput("dead", dead_letter(SOURCE, locator, done.reason, done.detail))
            return
        self.count.inc("kept")
        rows, pairs = done
        for row in rows:
            self.count.inc(f"sentences.{row['side']}")
            yield row
        for pair in pairs:
            self.count.inc("pairs")
            self.count.inc(f"pairs.{pair['alignment']}")
            yield beam.pvalue.TaggedOutput("pairs", pair)


class ParsePlaba(beam.PTransform):
    """A PLABA JSON file -> 'sentences' (abstract and adaptation rows), 'pairs' (the gold
    sentence alignments) and 'dead' (documents that do not parse)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, pbegin):
        docs = (
            pbegin
            | "Files" >> beam.Create([self.path])
            | "Read" >> beam.ParDo(FilesFn(read_file))
            | "Reshuffle" >> beam.Reshuffle()
            | "Docs" >> beam.ParDo(DocFn()).with_outputs("dead", "pairs", main="rows")
        )
        return {"sentences": docs.rows, "pairs": docs.pairs, "dead": docs.dead}


def run(
    input_path: str,
    out_dir: str,
    params: Plaba,
    beam_params: Beam,
    beam_args: list[str],
    metrics_file: str | None,
) -> dict:
    check_input(input_path)
    spec = JobSpec(SOURCE, TABLES, ("plaba",), num_shards=params.num_shards, extra={"filtered": 0})
    return run_job(spec, ParsePlaba(input_path), out_dir, beam_params, beam_args, metrics_file)
