"""Beam job: MSD manuals (documented JSONL or the MSD dataset) -> sentence table + PCIO groups."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from medsimp.params_schema import default
from medsimp.pipelines.beam_io import new_pipeline
from medsimp.pipelines.input_files import list_inputs
from medsimp.pipelines.msd_formats import assemble, parse_line, pcio_lookup
from medsimp.pipelines.records import FormatError, guarded
from medsimp.pipelines.sentence_rows import dead_letter
from medsimp.pipelines.source_job import (
    Counter,
    ParseFn,
    Table,
    check_json_lines,
    dead_letter_table,
    finish,
    prepare_dirs,
    read_records,
    stamp,
    write_tables,
)
from medsimp.schemas import MSD_GROUPS, MSD_SENTENCES

SOURCE = "msd"


def input_files(path: str) -> list[str]:
    """The file, or the files of a folder; each passes `check_json_lines` (one line, exit 2)."""
    files = list_inputs(path)
    for name in files:
        check_json_lines(name)
    return files


def read_file(path: str, paired_markers: list[str], pair_key: str):
    name = FileSystems.split(path)[1]
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    paired = any(marker in stem for marker in paired_markers)
    yield from read_records(path, lambda line: parse_line(line, stem, paired, pair_key))


class AssembleFn(beam.DoFn):
    def __init__(self, pcio: dict):
        self.pcio = pcio

    def setup(self):
        self.count = Counter(SOURCE)
        self.lookup = pcio_lookup(self.pcio)

    def process(self, element):
        doc_id, records = element
        records = list(records)
        done = guarded(assemble, doc_id, records, self.lookup, SOURCE)
        if isinstance(done, FormatError):  # the document's text broke a later step
            done = [], [], [], [(rec, done.reason) for rec in records]
        rows, groups, filtered, rejected = done
        self.count.inc("filtered", len(filtered))
        self.count.inc("filtered.duplicate_side", len(filtered))
        for rec, reason in rejected:
            self.count.inc("rejected")
            self.count.inc(f"rejected.{reason}")
            yield beam.pvalue.TaggedOutput(
                "dead", dead_letter(SOURCE, rec.locator, reason, f"its document has {len(records)} line(s)")
            )
        self.count.inc("kept", len(records) - len(filtered) - len(rejected))
        if len({row["side"] for row in rows}) == 1:  # one version only: no pair (e.g. keys differ)
            self.count.inc("documents_one_sided")
        for row in rows:
            self.count.inc(f"sentences.{row['side']}")
            yield row
        for group in groups:
            self.count.inc("groups")
            self.count.inc(f"groups.{group['pcio']}")
            yield beam.pvalue.TaggedOutput("groups", group)


def run(
    input_path: str,
    out_dir: str,
    params: dict,
    beam_params: dict,
    beam_args: list[str],
    metrics_file: str | None,
) -> dict:
    files = input_files(input_path)
    num_shards = int(params.get("num_shards", 1))
    markers = list(params.get("paired_files", ["test"]))
    pair_key = str(params.get("pair_key", default("msd.pair_key")))
    tables = {
        "sentences": Table(
            "sentences",
            MSD_SENTENCES,
            lambda r: r["doc_id"],
            lambda r: (r["doc_id"], r["side"], r["sentence_index"]),
        ),
        "pairs": Table("pairs", MSD_GROUPS, lambda r: r["doc_id"], lambda r: r["group_id"]),
        "dead": dead_letter_table(),
    }
    tables = stamp(tables, ["msd"])
    prepare_dirs(out_dir, tables)
    with new_pipeline(beam_params, beam_args) as p:
        parsed = (
            p
            | "Files" >> beam.Create(files)
            | "Read" >> beam.FlatMap(read_file, markers, pair_key)
            | "Reshuffle" >> beam.Reshuffle()
            | "Parse" >> beam.ParDo(ParseFn(SOURCE, lambda r: r.doc_id)).with_outputs("dead", main="records")
        )
        docs = (
            parsed.records
            | "ByDoc" >> beam.GroupByKey()
            | "Assemble"
            >> beam.ParDo(AssembleFn(dict(params.get("pcio", default("msd.pcio"))))).with_outputs(
                "dead", "groups", main="rows"
            )
        )
        dead = (parsed.dead, docs.dead) | "Dead" >> beam.Flatten()
        write_tables(
            {"sentences": docs.rows, "pairs": docs.groups, "dead": dead}, tables, out_dir, num_shards
        )
    return finish(p.result, SOURCE, out_dir, tables, num_shards, metrics_file)
