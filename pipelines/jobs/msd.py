"""Beam job: MSD manuals (documented JSONL or the MSD dataset) -> sentence table + PCIO groups."""

from __future__ import annotations

import functools

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from medsimp.params_schema import Beam, Msd
from medsimp.schemas import MSD_GROUPS, MSD_SENTENCES
from medsimp.stats import dead_letter
from medsimp.text.multilingual import punkt_english
from pipelines.jobs.common import Counter, ParseFn, check_json_lines, read_records
from pipelines.jobs.runtime import JobSpec, Table, dead_letter_table, run_job
from pipelines.jobs.store_dofn import FilesFn
from pipelines.sources.files import list_inputs
from pipelines.sources.msd import assemble, parse_line, pcio_lookup
from pipelines.sources.records import FormatError, guarded

SOURCE = "msd"
TABLES = {
    "sentences": Table(
        "sentences",
        MSD_SENTENCES,
        lambda r: r["doc_id"],
        lambda r: (r["doc_id"], r["side"], r["sentence_index"]),
        counter="sentences.*",
    ),
    "pairs": Table("pairs", MSD_GROUPS, lambda r: r["doc_id"], lambda r: r["group_id"], counter="groups"),
    "dead": dead_letter_table(),
}


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
    def __init__(self, pcio: dict, splitter: str):
        self.pcio, self.splitter = pcio, splitter

    def setup(self):
        self.count = Counter(SOURCE)
        self.lookup = pcio_lookup(self.pcio)
        self.assemble = functools.partial(assemble, splitter=self.splitter)
        if self.splitter == "nltk":  # a worker without NLTK's punkt fails here, not per document
            punkt_english()

    def process(self, element):
        doc_id, records = element
        records = list(records)
        done = guarded(self.assemble, doc_id, records, self.lookup, SOURCE)
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


class ParseManuals(beam.PTransform):
    """MSD files -> 'sentences' (rows of both versions of each document), 'pairs' (PCIO
    candidate groups) and 'dead' (lines that do not parse, records of a document that broke)."""

    def __init__(self, files: list[str], paired_markers: list[str], pair_key: str, pcio: dict, splitter: str):
        super().__init__()
        self.files, self.paired_markers, self.pair_key, self.pcio = files, paired_markers, pair_key, pcio
        self.splitter = splitter

    def expand(self, pbegin):
        parsed = (
            pbegin
            | "Files" >> beam.Create(self.files)
            | "Read" >> beam.ParDo(FilesFn(read_file, self.paired_markers, self.pair_key))
            | "Reshuffle" >> beam.Reshuffle()
            | "Parse" >> beam.ParDo(ParseFn(SOURCE, lambda r: r.doc_id)).with_outputs("dead", main="records")
        )
        docs = (
            parsed.records
            | "ByDoc" >> beam.GroupByKey()
            | "Assemble"
            >> beam.ParDo(AssembleFn(self.pcio, self.splitter)).with_outputs("dead", "groups", main="rows")
        )
        dead = (parsed.dead, docs.dead) | "Dead" >> beam.Flatten()
        return {"sentences": docs.rows, "pairs": docs.groups, "dead": dead}


def run(
    input_path: str,
    out_dir: str,
    params: Msd,
    beam_params: Beam,
    beam_args: list[str],
    metrics_file: str | None,
) -> dict:
    files = input_files(input_path)
    job = ParseManuals(files, list(params.paired_files), params.pair_key, dict(params.pcio), params.splitter)
    spec = JobSpec(SOURCE, TABLES, ("msd",), num_shards=params.num_shards)
    return run_job(spec, job, out_dir, beam_params, beam_args, metrics_file)
