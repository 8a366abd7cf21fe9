"""Beam job: Cochrane reviews (canonical JSONL or Devaraj files) -> sentence table.

Reads every record, joins the records of a review by normalised DOI (through sorted run
files, GroupSorted: memory does not grow with the corpus), and writes the
English abstract (side `complex`, section headings kept) and the PLS of every
language present (side `simple`) as sentence rows carrying `doi`, `version` and `split` (the
input's own split: a canonical record's `split` field, a Devaraj file's name; null when none).
"""

from __future__ import annotations

from collections.abc import Iterator

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from medsimp.params_schema import Beam, Cochrane
from medsimp.schemas import COCHRANE_SENTENCES
from medsimp.stats import dead_letter
from pipelines.jobs.common import Counter, ParseFn, check_json_lines, read_records
from pipelines.jobs.runtime import JobSpec, Table, dead_letter_table, run_job
from pipelines.jobs.sorted_io import GroupSorted, delete_runs
from pipelines.jobs.store_dofn import FilesFn
from pipelines.sources.cochrane import (
    FormatError,
    ReviewRecord,
    canonical_files,
    devaraj_prefixes,
    doi_key,
    join_reviews,
    parse_canonical_line,
    read_devaraj,
)
from pipelines.sources.files import check_file, check_lines, list_files
from pipelines.sources.records import guarded
from pipelines.sources.rows import document_rows

SOURCE = "cochrane"
GROUP_PREFIX = "group"  # JoinReviews' run files in the output's staging folder (deleted after)
TABLES = {
    "sentences": Table(
        "sentences",
        COCHRANE_SENTENCES,
        lambda r: r["doc_id"],
        lambda r: (r["doc_id"], r["side"], r["language"], r["sentence_index"]),
        counter="sentences",
    ),
    "dead": dead_letter_table(),
}


def input_specs(path: str) -> list[tuple[str, str]]:
    """("jsonl", file) for a canonical file, ("devaraj", prefix) per Devaraj triple; a folder
    gives its `*.jsonl` files (canonical) and its triples (the folder `medsimp init` makes takes
    either). Every file passes `check_file` and `check_lines` (one line, exit 2, for a whole-file
    fault)."""
    if (
        FileSystems.exists(path)
        and not FileSystems.exists(path + ".source")
        and not list_files(FileSystems.join(path.rstrip("/"), "*"))
    ):
        check_json_lines(path)
        return [("jsonl", path)]
    canonical = canonical_files(path) if list_files(FileSystems.join(path.rstrip("/"), "*")) else []
    for name in canonical:
        check_json_lines(name)
    specs = [("devaraj", prefix) for prefix in devaraj_prefixes(path, canonical=True)]
    for _, prefix in specs:
        for ext in (".doi", ".source", ".target"):
            check_file(prefix + ext)
            check_lines(prefix + ext)
    return [("jsonl", name) for name in canonical] + specs


def read_spec(spec: tuple[str, str]) -> Iterator[tuple[str, ReviewRecord | FormatError]]:
    kind, path = spec
    if kind == "devaraj":
        yield from read_devaraj(path)
        return
    yield from read_records(path, lambda line: parse_canonical_line(line.text, line.locator))


def review_rows(review) -> list[dict]:
    """Sentence rows of a joined review: English abstract + PLS per language."""

    def extra(rec: ReviewRecord) -> dict:
        return {"doi": review.doi, "version": rec.version, "title": rec.title, "split": rec.split}

    rec = review.abstract
    rows = document_rows(
        SOURCE,
        review.doi,
        "complex",
        "en",
        [(s.heading, s.text) for s in rec.abstract],
        rec.locator,
        extra(rec),
    )
    for lang, pls in review.pls.items():
        rows += document_rows(
            SOURCE,
            review.doi,
            "simple",
            lang,
            [(s.heading, s.text) for s in pls.pls],
            pls.locator,
            extra(pls),
        )
    return rows


class JoinFn(beam.DoFn):
    def setup(self):
        self.count = Counter(SOURCE)

    def process(self, element):
        _, records = element
        records = list(records)
        review, filtered, orphans = join_reviews(records)
        rows = guarded(review_rows, review) if review is not None else []
        if isinstance(rows, FormatError):  # the review's text broke a later step: reject its records
            orphans = [r for r in records if all(r is not f for f in filtered)]
            review, reason = None, rows.reason
        else:
            reason = "no_english_abstract"
        self.count.inc("filtered", len(filtered))
        self.count.inc("filtered.superseded_or_unused", len(filtered))
        for rec in orphans:
            self.count.inc("rejected")
            self.count.inc(f"rejected.{reason}")
            yield beam.pvalue.TaggedOutput(
                "dead", dead_letter(SOURCE, rec.locator, reason, f"doi {rec.doi} language {rec.language}")
            )
        if review is None:
            return
        self.count.inc("kept", len(records) - len(filtered) - len(orphans))
        self.count.inc("reviews")
        if len(review.pls) > 1:
            self.count.inc("reviews_multilingual")
        for row in rows:
            self.count.inc("sentences")
            self.count.inc(f"sentences.{row['side']}_{row['language']}")
            yield row


class ReadRecords(beam.PTransform):
    """Input specs -> 'records' ((DOI key, ReviewRecord)) and 'dead' (dead letters of lines
    that do not parse)."""

    def __init__(self, specs: list[tuple[str, str]]):
        super().__init__()
        self.specs = specs

    def expand(self, pbegin):
        parsed = (
            pbegin
            | "Specs" >> beam.Create(self.specs)
            | "Read" >> beam.ParDo(FilesFn(read_spec))
            | "Parse"
            >> beam.ParDo(ParseFn(SOURCE, lambda r: doi_key(r.doi))).with_outputs("dead", main="records")
        )
        return {"records": parsed.records, "dead": parsed.dead}


class JoinReviews(beam.PTransform):
    """(DOI key, ReviewRecord) -> 'rows' (sentence rows of each joined review) and 'dead'
    (records of a review without an English abstract, or whose text broke a later step).
    Records are grouped by DOI through sorted run files in `tmp_dir` (GroupSorted), so no
    process holds the corpus."""

    def __init__(self, tmp_dir: str):
        super().__init__()
        self.tmp_dir = tmp_dir

    def expand(self, records):
        joined = (
            records
            | "ByDoi" >> GroupSorted(self.tmp_dir, prefix=GROUP_PREFIX)
            | "Join" >> beam.ParDo(JoinFn()).with_outputs("dead", main="rows")
        )
        return {"rows": joined.rows, "dead": joined.dead}


class CochraneSentences(beam.PTransform):
    """Input specs -> 'sentences' (the rows of every joined review) and 'dead' (lines that do
    not parse, records no review could use); the joins' run files go to `tmp_dir`."""

    def __init__(self, specs: list[tuple[str, str]], tmp_dir: str):
        super().__init__()
        self.specs, self.tmp_dir = specs, tmp_dir

    def expand(self, pbegin):
        parsed = pbegin | "ReadRecords" >> ReadRecords(self.specs)
        joined = parsed["records"] | "JoinReviews" >> JoinReviews(self.tmp_dir)
        dead = (parsed["dead"], joined["dead"]) | "Dead" >> beam.Flatten()
        return {"sentences": joined["rows"], "dead": dead}


def run(
    input_path: str,
    out_dir: str,
    params: Cochrane,
    beam_params: Beam,
    beam_args: list[str],
    metrics_file: str | None,
) -> dict:
    job = CochraneSentences(input_specs(input_path), out_dir)
    spec = JobSpec(
        SOURCE,
        TABLES,
        ("cochrane",),
        num_shards=params.num_shards,
        after_run=lambda out: delete_runs(out, GROUP_PREFIX),
    )
    return run_job(spec, job, out_dir, beam_params, beam_args, metrics_file)
