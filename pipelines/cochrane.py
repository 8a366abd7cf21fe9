"""Beam job: Cochrane reviews (canonical JSONL or Devaraj files) -> sentence table.

Reads every record, joins the records of a review by normalised DOI, and writes the
English abstract (side `complex`, section headings kept) and the PLS of every
language present (side `simple`) as sentence rows carrying `doi` and `version`.
"""
from __future__ import annotations

import os
from collections.abc import Iterator

import apache_beam as beam
import pyarrow as pa

from medsimp.pipelines.beam_io import list_files, new_pipeline, open_file
from medsimp.pipelines.cochrane_formats import (FormatError, ReviewRecord, devaraj_prefixes, join_reviews,
                                        parse_canonical_line, read_devaraj)
from medsimp.pipelines.sentence_rows import dead_letter, document_rows, sentence_schema
from medsimp.pipelines.source_job import (Counter, ParseFn, Table, dead_letter_table, finish, iter_lines,
                                 prepare_dirs, stamp, write_tables)

SOURCE = "cochrane"
SCHEMA = sentence_schema(pa.field("doi", pa.string()), pa.field("version", pa.int32()),
                         pa.field("title", pa.string()))


def input_specs(path: str) -> list[tuple[str, str]]:
    """("jsonl", file) for a canonical file, ("devaraj", prefix) per Devaraj triple (any Beam
    filesystem)."""
    if list_files(path) == [path] and not os.path.isdir(path) and not list_files(path + ".source"):
        return [("jsonl", path)]
    return [("devaraj", prefix) for prefix in devaraj_prefixes(path, list_files)]


def read_spec(spec: tuple[str, str]) -> Iterator[tuple[str, ReviewRecord | FormatError]]:
    kind, path = spec
    if kind == "devaraj":
        yield from read_devaraj(path, open_file)
        return
    yield from iter_lines(path, lambda line, _number, locator: parse_canonical_line(line, locator))


def review_rows(review) -> list[dict]:
    """Sentence rows of a joined review: English abstract + PLS per language."""
    def extra(rec: ReviewRecord) -> dict:
        return {"doi": review.doi, "version": rec.version, "title": rec.title}

    rec = review.abstract
    rows = document_rows(SOURCE, review.doi, "complex", "en",
                         [(s.heading, s.text) for s in rec.abstract], rec.locator, extra(rec))
    for lang, pls in review.pls.items():
        rows += document_rows(SOURCE, review.doi, "simple", lang,
                              [(s.heading, s.text) for s in pls.pls], pls.locator, extra(pls))
    return rows


class JoinFn(beam.DoFn):
    def setup(self):
        self.count = Counter(SOURCE)

    def process(self, element):
        doi, records = element
        records = list(records)
        review, filtered, orphans = join_reviews(doi, records)
        self.count.inc("filtered", len(filtered))
        self.count.inc("filtered.superseded_or_unused", len(filtered))
        for rec in orphans:
            self.count.inc("rejected")
            self.count.inc("rejected.no_english_abstract")
            yield beam.pvalue.TaggedOutput("dead", dead_letter(
                SOURCE, rec.locator, "no_english_abstract", f"doi {doi} language {rec.language}"))
        if review is None:
            return
        self.count.inc("kept", len(records) - len(filtered) - len(orphans))
        self.count.inc("reviews")
        rows = review_rows(review)
        if len(review.pls) > 1:
            self.count.inc("reviews_multilingual")
        for row in rows:
            self.count.inc("sentences")
            self.count.inc(f"sentences.{row['side']}_{row['language']}")
            yield row


def run(input_path: str, out_dir: str, params: dict, beam_params: dict, beam_args: list[str],
        metrics_file: str | None) -> dict:
    specs = input_specs(input_path)
    num_shards = int(params.get("num_shards", 2))
    tables = {"sentences": Table("sentences", SCHEMA, lambda r: r["doc_id"],
                                 lambda r: (r["doc_id"], r["side"], r["language"], r["sentence_index"])),
              "dead": dead_letter_table()}
    tables = stamp(tables, ["cochrane"])
    prepare_dirs(out_dir, tables)
    with new_pipeline(beam_params, beam_args) as p:
        parsed = (p | "Specs" >> beam.Create(specs) | "Read" >> beam.FlatMap(read_spec)
                  | "Reshuffle" >> beam.Reshuffle()
                  | "Parse" >> beam.ParDo(ParseFn(SOURCE, lambda r: r.doi)).with_outputs("dead", main="records"))
        joined = (parsed.records | "ByDoi" >> beam.GroupByKey()
                  | "Join" >> beam.ParDo(JoinFn()).with_outputs("dead", main="rows"))
        dead = (parsed.dead, joined.dead) | "Dead" >> beam.Flatten()
        write_tables({"sentences": joined.rows, "dead": dead}, tables, out_dir, num_shards)
    result = p.result
    return finish(result, SOURCE, out_dir, tables, num_shards, metrics_file)
