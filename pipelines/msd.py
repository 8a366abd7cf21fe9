"""Beam job: MSD manuals (documented JSONL or the MSD dataset) -> sentence table + PCIO groups."""
from __future__ import annotations

import os

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from medsimp.params_schema import default
from medsimp.pipelines.beam_io import list_files, new_pipeline
from medsimp.pipelines.msd_formats import assemble, parse_line, pcio_lookup
from medsimp.pipelines.sentence_rows import dead_letter, sentence_schema
from medsimp.pipelines.source_job import (Counter, ParseFn, Table, dead_letter_table, finish, iter_lines,
                                 prepare_dirs, stamp, write_tables)

SOURCE = "msd"
_CONCEPT = pa.struct([pa.field("start", pa.int32()), pa.field("end", pa.int32()),
                      pa.field("term", pa.string()), pa.field("cui", pa.string())])
SCHEMA = sentence_schema(pa.field("topic", pa.string()), pa.field("title", pa.string()),
                         pa.field("pcio", pa.string()), pa.field("gold_concepts", pa.list_(_CONCEPT)))
GROUP_SCHEMA = pa.schema([
    pa.field("group_id", pa.string()), pa.field("doc_id", pa.string()), pa.field("topic", pa.string()),
    pa.field("pcio", pa.string()), pa.field("complex_ids", pa.list_(pa.string())),
    pa.field("simple_ids", pa.list_(pa.string())), pa.field("n_complex", pa.int32()),
    pa.field("n_simple", pa.int32()),
])


def input_files(path: str) -> list[str]:
    """The input file, or the files (not hidden) in a folder, on any Beam filesystem."""
    files = [f for f in list_files(FileSystems.join(path, "*")) if not os.path.basename(f).startswith(".")]
    if files:
        return files
    if os.path.isdir(path):
        raise FileNotFoundError(f"no files in {path}")
    if not list_files(path):
        raise FileNotFoundError(path)
    return [path]


def read_file(path: str, paired_markers: list[str]):
    name = os.path.basename(path)
    stem = os.path.splitext(name)[0]
    paired = any(marker in stem for marker in paired_markers)
    yield from iter_lines(path, lambda line, number, locator: parse_line(line, stem, number, paired,
                                                                       locator))


class AssembleFn(beam.DoFn):
    def __init__(self, pcio: dict):
        self.pcio = pcio

    def setup(self):
        self.count = Counter(SOURCE)
        self.lookup = pcio_lookup(self.pcio)

    def process(self, element):
        doc_id, records = element
        records = list(records)
        rows, groups, filtered, rejected = assemble(doc_id, records, self.lookup, SOURCE)
        self.count.inc("filtered", len(filtered))
        self.count.inc("filtered.duplicate_side", len(filtered))
        for rec, reason in rejected:
            self.count.inc("rejected")
            self.count.inc(f"rejected.{reason}")
            yield beam.pvalue.TaggedOutput("dead", dead_letter(
                SOURCE, rec.locator, reason, f"document {doc_id} has {len(records)} line(s)"))
        self.count.inc("kept", len(records) - len(filtered) - len(rejected))
        for row in rows:
            self.count.inc(f"sentences.{row['side']}")
            yield row
        for group in groups:
            self.count.inc("groups")
            self.count.inc(f"groups.{group['pcio']}")
            yield beam.pvalue.TaggedOutput("groups", group)


def run(input_path: str, out_dir: str, params: dict, beam_params: dict, beam_args: list[str],
        metrics_file: str | None) -> dict:
    files = input_files(input_path)
    num_shards = int(params.get("num_shards", 1))
    markers = list(params.get("paired_files", ["test"]))
    tables = {
        "sentences": Table("sentences", SCHEMA, lambda r: r["doc_id"],
                           lambda r: (r["doc_id"], r["side"], r["sentence_index"])),
        "pairs": Table("pairs", GROUP_SCHEMA, lambda r: r["doc_id"], lambda r: r["group_id"]),
        "dead": dead_letter_table(),
    }
    tables = stamp(tables, ["msd"])
    prepare_dirs(out_dir, tables)
    with new_pipeline(beam_params, beam_args) as p:
        parsed = (p | "Files" >> beam.Create(files)
                  | "Read" >> beam.FlatMap(read_file, markers) | "Reshuffle" >> beam.Reshuffle()
                  | "Parse" >> beam.ParDo(ParseFn(SOURCE, lambda r: r.doc_id)).with_outputs("dead", main="records"))
        docs = (parsed.records | "ByDoc" >> beam.GroupByKey()
                | "Assemble" >> beam.ParDo(AssembleFn(dict(params.get("pcio", default("msd.pcio")))))
                .with_outputs("dead", "groups", main="rows"))
        dead = (parsed.dead, docs.dead) | "Dead" >> beam.Flatten()
        write_tables({"sentences": docs.rows, "pairs": docs.groups, "dead": dead},
                     tables, out_dir, num_shards)
    return finish(p.result, SOURCE, out_dir, tables, num_shards, metrics_file)
