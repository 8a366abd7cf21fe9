"""Beam job: PLABA JSON -> sentence table + gold sentence-aligned pairs."""
from __future__ import annotations

import json
import os
from typing import Any

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from medsimp.pipelines.beam_io import new_pipeline
from medsimp.pipelines.cochrane_formats import FormatError
from medsimp.pipelines.plaba import SOURCE, document_sentence_rows, gold_pairs, iter_documents
from medsimp.pipelines.sentence_rows import dead_letter, sentence_schema
from medsimp.pipelines.source_job import Counter, Table, dead_letter_table, finish, prepare_dirs, stamp, write_tables

_IDS = [pa.field("question_id", pa.string()), pa.field("pmid", pa.string())]
SCHEMA = sentence_schema(*_IDS, pa.field("sentence_number", pa.int32()), pa.field("adaptation", pa.int32()))
PAIR_SCHEMA = pa.schema([
    pa.field("pair_id", pa.string()), *_IDS, pa.field("adaptation", pa.int32()),
    pa.field("sentence_number", pa.int32()), pa.field("complex_id", pa.string()),
    pa.field("complex_text", pa.string()), pa.field("simple_ids", pa.list_(pa.string())),
    pa.field("simple_text", pa.string()), pa.field("n_simple", pa.int32()),
    pa.field("alignment", pa.string()),
])


def read_file(path: str):
    name = os.path.basename(path)
    with FileSystems.open(path) as fh:
        raw = fh.read()
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        yield f"{name}#", FormatError("bad_json", str(exc)[:200])
        return
    yield from iter_documents(data, name)


@beam.typehints.with_output_types(Any)
class DocFn(beam.DoFn):
    def setup(self):
        self.count = Counter(SOURCE)

    def process(self, item):
        locator, doc = item
        self.count.inc("read")
        if isinstance(doc, FormatError):
            self.count.inc("rejected")
            self.count.inc(f"rejected.{doc.reason}")
            yield beam.pvalue.TaggedOutput("dead", dead_letter(SOURCE, locator, doc.reason, doc.detail))
            return
        self.count.inc("kept")
        rows = document_sentence_rows(doc, locator)
        for row in rows:
            self.count.inc(f"sentences.{row['side']}")
            yield row
        for pair in gold_pairs(doc, rows):
            self.count.inc("pairs")
            self.count.inc(f"pairs.{pair['alignment']}")
            yield beam.pvalue.TaggedOutput("pairs", pair)


def run(input_path: str, out_dir: str, params: dict, beam_params: dict, beam_args: list[str],
        metrics_file: str | None) -> dict:
    num_shards = int(params.get("num_shards", 1))
    tables = {
        "sentences": Table("sentences", SCHEMA, lambda r: r["doc_id"],
                           lambda r: (r["doc_id"], r["side"], r["sentence_index"])),
        "pairs": Table("pairs", PAIR_SCHEMA, lambda r: r["pair_id"],
                       lambda r: (r["question_id"], r["pmid"], r["adaptation"], r["sentence_number"])),
        "dead": dead_letter_table(),
    }
    tables = stamp(tables, ["plaba"])
    prepare_dirs(out_dir, tables)
    with new_pipeline(beam_params, beam_args) as p:
        out = (p | "Files" >> beam.Create([input_path]) | "Read" >> beam.FlatMap(read_file)
               | "Reshuffle" >> beam.Reshuffle()
               | "Docs" >> beam.ParDo(DocFn()).with_outputs("dead", "pairs", main="rows"))
        write_tables({"sentences": out.rows, "pairs": out.pairs, "dead": out.dead},
                     tables, out_dir, num_shards)
    return finish(p.result, SOURCE, out_dir, tables, num_shards, metrics_file,
                  extra={"filtered": 0})
