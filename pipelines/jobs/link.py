"""Beam job: sentence table -> UMLS concepts (QuickUMLS) + readability per sentence and document.

Sentences are grouped by document side (source, doc_id, side, language): a table whose
document sides are consecutive rows of one file (what `cochrane` writes) is read a document
side at a time, anything else through a GroupByKey. One DoFn per worker opens the QuickUMLS
index in setup() and loads a language's matcher at its first document side that is not in the
cache (pipelines.text.umls.ConceptLinker). Results per document side go through DocCache
(key: its sentences, the index fingerprint and the link/readability params).
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from medsimp.doccache import DocCache, code_version, content_key
from medsimp.params_schema import Beam, Link, Readability
from medsimp.progress import ProgressSink
from medsimp.resources import cmudict_syllables
from medsimp.schemas import LINKED_DOCUMENTS, LINKED_SENTENCES
from medsimp.stats import dead_letter
from pipelines.jobs.common import Counter
from pipelines.jobs.runtime import JobSpec, Progress, Table, dead_letter_table, progress_folder, run_job
from pipelines.jobs.store_dofn import FilesFn, StoreDoFn
from pipelines.sources.files import list_files, open_file, parquet_lineage
from pipelines.sources.tables import grouped_by, read_numbered_documents
from pipelines.text.umls import (
    DEMO_TERMS,
    ConceptLinker,
    demo_note,
    index_terms,
    matcher_settings,
    read_manifest,
)

NAMESPACE = "link"
_NEEDED = ("sentence_id", "source", "doc_id", "side", "language", "section", "sentence_index", "text")
_DOC_KEY = ["source", "doc_id", "side", "language"]  # one document side: what LinkFn links at once
TABLES = {
    "sentences": Table(
        "",
        LINKED_SENTENCES,
        lambda r: r["doc_id"],
        lambda r: (r["doc_id"], r["side"], r["language"], r["sentence_index"]),
        counter="kept",
    ),
    "documents": Table(
        "documents", LINKED_DOCUMENTS, lambda r: r["doc_id"], lambda r: r["doc_key"], counter="documents"
    ),
    "dead": dead_letter_table(),
}


def sentence_files(path: str) -> list[str]:
    """Parquet parts of a sentence table: `path/sentences/*.parquet` or `path/*.parquet`."""
    for pattern in (FileSystems.join(path, "sentences", "*.parquet"), FileSystems.join(path, "*.parquet")):
        files = list_files(pattern)
        if files:
            return files
    raise FileNotFoundError(f"no sentence table (parquet) under {path}")


def read_rows(path: str):
    name = os.path.basename(path)
    with open_file(path) as fh:
        table = pq.read_table(io.BytesIO(fh.read()))
    missing = [c for c in _NEEDED if c not in table.column_names]
    if missing:
        raise ValueError(f"{path}: not a sentence table, missing columns {missing}")
    for i, row in enumerate(table.select(list(_NEEDED)).to_pylist()):
        yield f"{name}:{i + 1}", row


def compute(linker, texts: list[str], language: str, syllable_languages: list[str]) -> dict:
    """Concepts + readability of one document side (cacheable, plain values)."""
    from medsimp.text.readability import document_scores, scores

    linked = linker.has_language(language)
    return {
        "linked": linked,
        "concepts": [linker.link(t, language) if linked else [] for t in texts],
        "readability": [scores(t, language, syllable_languages) for t in texts],
        "document": document_scores(texts, language, syllable_languages),
    }


def missing_fields(row: Mapping[str, Any]) -> list[str]:
    """The needed fields a sentence row lacks (null, or an empty text)."""
    return [c for c in _NEEDED if row.get(c) is None or (c == "text" and not str(row[c]).strip())]


def _missing_field_letter(count: Counter, locator: str, bad: list[str]):
    count.inc("rejected")
    count.inc("rejected.missing_field")
    return beam.pvalue.TaggedOutput(
        "dead", dead_letter(NAMESPACE, locator, "missing_field", f"empty or null: {', '.join(bad)}")
    )


@beam.typehints.with_output_types(Any)
class ValidateFn(beam.DoFn):
    def setup(self):
        self.count = Counter(NAMESPACE)

    def process(self, item):
        locator, row = item
        self.count.inc("read")
        bad = missing_fields(row)
        if bad:
            yield _missing_field_letter(self.count, locator, bad)
            return
        yield tuple(row[c] for c in _DOC_KEY), row


@beam.typehints.with_output_types(Any)
class ValidateDocumentFn(beam.DoFn):
    """(file name, document key, numbered rows) -> (key, valid rows) and dead letters: what
    ValidateFn then a GroupByKey give, for a table whose documents are consecutive rows."""

    def setup(self):
        self.count = Counter(NAMESPACE)

    def process(self, item):
        name, key, numbered = item
        valid = []
        for number, row in numbered:
            self.count.inc("read")
            bad = missing_fields(row)
            if bad:
                yield _missing_field_letter(self.count, f"{name}:{number}", bad)
            else:
                valid.append(row)
        if valid:
            yield key, valid


def document_files(files: list[str]) -> bool:
    """Whether every file is a sentence table with each document side in consecutive rows of
    one file (what `cochrane` writes): then LinkSentences streams documents and holds no
    GroupByKey. Anything else (another layout, a file that is not such a table) takes the
    grouped path, which reports a broken file as before."""
    try:
        for path in files:
            with FileSystems.open(path) as fh:
                if any(c not in pq.read_schema(fh).names for c in _NEEDED):
                    return False
        return grouped_by(files, _DOC_KEY)
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return False


def read_document_sides(path: str):
    """(file name, key, numbered rows) per document side of one sentence-table file."""
    name = os.path.basename(path)
    for key, numbered in read_numbered_documents(path, _DOC_KEY, list(_NEEDED)):
        yield name, key, numbered


# what computes a cached link result: a change to any of these misses the old entries
CODE = (
    "medsimp.resources",
    "pipelines.jobs.link",
    "pipelines.text.umls",
    "medsimp.text.readability",
    "medsimp.text.words",  # readability's word tokenizer
)


class LinkFn(StoreDoFn):
    def __init__(
        self,
        index_dir: str,
        link_params: Link,
        syllable_languages: list[str],
        cache_root: str | None,
        progress: str | None = None,
    ):
        super().__init__()
        self.index_dir, self.link_params = index_dir, link_params
        self.syllable_languages, self.cache_root = syllable_languages, cache_root
        self.progress = ProgressSink(progress)  # sentences done, for the launcher's display

    def setup(self):
        super().setup()  # the progress files may be in the store
        self.linker = ConceptLinker(self.index_dir, self.link_params)
        self.cache = DocCache(self.cache_root, "link/quickumls")
        cmudict_syllables()  # build or load the syllable table once per worker, not inside process()
        self.count = Counter(NAMESPACE)

    def process(self, element):
        (source, doc_id, side, language), rows = element
        rows = sorted(rows, key=lambda r: r["sentence_index"])
        texts = [r["text"] for r in rows]
        key = content_key(
            code_version(*CODE),
            texts,
            language,
            self.linker.fingerprint,
            matcher_settings(self.link_params),
            self.syllable_languages,
        )
        result = self.cache.get(key)
        if result is None:
            self.count.inc("cache_misses")
            result = compute(self.linker, texts, language, self.syllable_languages)
            self.cache.put(key, result)
        else:
            self.count.inc("cache_hits")
        self.count.inc("kept", len(rows))
        self.count.inc("documents")
        if not result["linked"]:
            self.count.inc("sentences_without_index", len(rows))
            self.count.inc(f"sentences_without_index.{language}", len(rows))
        n_concepts = sum(len(c) for c in result["concepts"])
        self.count.inc("concepts", n_concepts)
        self.progress.tick(len(rows))
        for row, concepts, readability in zip(rows, result["concepts"], result["readability"]):
            yield {**{c: row[c] for c in _NEEDED}, "concepts": concepts, "readability": readability}
        yield beam.pvalue.TaggedOutput(
            "documents",
            {
                "doc_key": f"{source}:{doc_id}:{side}:{language}",
                "source": source,
                "doc_id": doc_id,
                "side": side,
                "language": language,
                "linked": result["linked"],
                "n_concepts": n_concepts,
                "readability": result["document"],
            },
        )

    def finish_bundle(self):
        self.progress.flush()


class LinkSentences(beam.PTransform):
    """Sentence-table parquet files -> 'sentences' (each row with its concepts and
    readability), 'documents' (readability per document side) and 'dead' (rows missing a
    field). A language's QuickUMLS matcher loads once per worker, at its first uncached document
    side (LinkFn). `streamed` (see
    `document_files`): read each file a document side at a time instead of grouping rows."""

    def __init__(
        self,
        files: list[str],
        index_dir: str,
        link_params: Link,
        syllable_languages: list[str],
        cache_root: str | None,
        streamed: bool = False,
        progress: str | None = None,
    ):
        super().__init__()
        self.files, self.index_dir, self.link_params = files, index_dir, link_params
        self.syllable_languages, self.cache_root = syllable_languages, cache_root
        self.streamed, self.progress = streamed, progress

    def expand(self, pbegin):
        files = pbegin | "Files" >> beam.Create(self.files) | "Reshuffle" >> beam.Reshuffle()
        if self.streamed:  # each document side in consecutive rows: no grouping held in memory
            docs = (
                files
                | "ReadDocuments" >> beam.ParDo(FilesFn(read_document_sides))
                | "Validate" >> beam.ParDo(ValidateDocumentFn()).with_outputs("dead", main="rows")
            )
            grouped, dead = docs.rows, docs.dead
        else:
            valid = (
                files
                | "Read" >> beam.ParDo(FilesFn(read_rows))
                | "ReshuffleRows" >> beam.Reshuffle()
                | "Validate" >> beam.ParDo(ValidateFn()).with_outputs("dead", main="rows")
            )
            grouped, dead = valid.rows | "ByDoc" >> beam.GroupByKey(), valid.dead
        link = LinkFn(
            self.index_dir, self.link_params, self.syllable_languages, self.cache_root, self.progress
        )
        linked = grouped | "Link" >> beam.ParDo(link).with_outputs("documents", main="rows")
        return {"sentences": linked.rows, "documents": linked.documents, "dead": dead}


def _rows_of(path: str) -> int:
    with open_file(path) as fh:
        return pq.ParquetFile(fh).metadata.num_rows


def run(
    input_path: str,
    out_dir: str,
    index_dir: str,
    link_params: Link,
    readability_params: Readability,
    cache_root: str | None,
    num_shards: int,
    beam_params: Beam,
    beam_args: list[str],
    metrics_file: str | None,
) -> dict:
    files = sentence_files(input_path)
    manifest = read_manifest(index_dir)  # fail early with a clear message
    syllables = list(readability_params.syllable_languages)
    streamed = document_files(files)
    job = LinkSentences(
        files, index_dir, link_params, syllables, cache_root, streamed, progress_folder(out_dir)
    )
    spec = JobSpec(
        NAMESPACE,
        TABLES,
        parquet_lineage(input_path),
        num_shards=num_shards,
        zero=("cache_hits", "cache_misses", "sentences_without_index", "concepts"),
        extra={
            "index_fingerprint": manifest["fingerprint"],
            "index_languages": sorted(manifest["languages"]),
            # what the card and the data report say of the concepts: a demo vocabulary or UMLS
            "index_terms": index_terms(manifest),
            "index_demo": index_terms(manifest) < DEMO_TERMS,
        },
        notes=lambda _: demo_note(manifest),
        # parquet footers: no row is read for the count
        progress=Progress(sum(_rows_of(f) for f in files), "link", "sentences"),
    )
    return run_job(spec, job, out_dir, beam_params, beam_args, metrics_file)
