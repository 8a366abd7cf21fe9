"""Beam job: sentence table -> aligned pairs (CRF for English, CRF + Vecalign bridge for others).

Reads `<input>/sentences/*.parquet`, groups sentences by document, and aligns each
document in `AlignDocFn` (CRF model and encoders loaded once per worker in setup()).
Counts documents: read = kept (aligned) + rejected (dead letter with the reason).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from medsimp.errors import InputError
from medsimp.params_schema import Align, Beam
from medsimp.progress import ProgressSink, watch
from medsimp.reviews import review_key
from medsimp.schemas import PAIRS, pair_sort_key
from pipelines.jobs.beam_io import (
    ReadDocuments,
    counters,
    grouped_by,
    new_pipeline,
    read_documents,
    read_rows,
    trim_heap,
)
from pipelines.jobs.common import (
    Counter,
    Table,
    dead_letter_table,
    finish,
    prepare_dirs,
    stamp,
    write_tables,
)
from pipelines.sources.files import parquet_lineage

if TYPE_CHECKING:
    from alignment.gold import DocPair

NAMESPACE = "align"
_FIELDS = ("sentence_id", "doc_id", "side", "language", "section", "sentence_index", "text")


# What `dvc metrics show` shows for this stage: the counts every data stage shares, so the table
# stays narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")


class AlignDocFn(beam.DoFn):
    def __init__(self, params: Align, cache_root: str | None, progress: str | None = None):
        self.params = params
        self.cache_root = cache_root
        self.progress = ProgressSink(progress)  # documents done, for the launcher's display

    def setup(self):
        from alignment.crf import CRFAligner
        from alignment.encoders import PairEncoders, make_encoder

        crf_p = self.params.crf
        self.crf_encoder = make_encoder(crf_p.encoder, self.cache_root)
        self.crf = CRFAligner.load(self.params.model, self.crf_encoder, crf_p.merge)
        self.vec_encoders = PairEncoders(self.params.vecalign.encoder, self.cache_root)  # built on first use
        self.vec_params = self.params.vecalign
        self.count = Counter(NAMESPACE)

    def process(self, element):
        from alignment.bridge import DocumentError, align_document

        doi, rows = element
        rows = sorted(rows, key=lambda r: r["sentence_id"])
        self.count.inc("read")
        before = self._cache_counts()
        fallbacks = dict(self.vec_encoders.fallbacks)
        try:
            pairs = align_document(doi, rows, self.crf, self.vec_encoders, self.vec_params)
        except DocumentError as exc:
            trim_heap()
            self.count.inc("rejected")
            self.progress.tick()  # a document done, though rejected
            self.count.inc(f"rejected.{exc.reason}")
            yield beam.pvalue.TaggedOutput(
                "dead_letter", {"source": "align", "locator": doi, "reason": exc.reason, "detail": str(exc)}
            )
            return
        after = self._cache_counts()
        self.count.inc("cache_hits", after[0] - before[0])
        self.count.inc("cache_misses", after[1] - before[1])
        for pair, n in self.vec_encoders.fallbacks.items():
            if n > fallbacks.get(pair, 0):
                self.count.inc(f"encoder_fallback.{pair}", n - fallbacks.get(pair, 0))
        self.count.inc("kept")
        for p in pairs:
            self.count.inc(f"pairs.{p['language']}")
        self.count.inc("pairs_total", len(pairs))
        trim_heap()  # the document's embeddings and CRF tensors are freed: return their pages
        self.progress.tick()
        yield from pairs

    def finish_bundle(self):
        self.progress.flush()

    def _cache_counts(self) -> tuple[int, int]:
        encs = (self.crf_encoder, self.vec_encoders)
        return sum(e.hits for e in encs), sum(e.misses for e in encs)


class AlignDocuments(beam.PTransform):
    """Sentence rows -> 'pairs' (the aligned pairs of every document) and 'dead_letter' (a
    document that cannot be aligned, with the reason). The CRF model and the encoders load
    once per worker (AlignDocFn.setup)."""

    def __init__(
        self, params: Align, cache_root: str | None, grouped: bool = False, progress: str | None = None
    ):
        super().__init__()
        self.params, self.cache_root, self.grouped = params, cache_root, grouped
        self.progress = progress  # a folder the workers count finished documents in (medsimp.progress)

    def expand(self, sentences):
        if self.grouped:  # (doc_id, rows) already, from ReadDocuments
            docs = sentences
        else:
            docs = (
                sentences
                | "KeyByDoc" >> beam.Map(lambda r: (r["doc_id"], {k: r[k] for k in _FIELDS}))
                | "GroupByDoc" >> beam.GroupByKey()
            )
        aligned = docs | "Align" >> beam.ParDo(
            AlignDocFn(self.params, self.cache_root, self.progress)
        ).with_outputs("dead_letter", main="pairs")
        return {"pairs": aligned.pairs, "dead_letter": aligned.dead_letter}


def sentence_files(input_dir: str) -> list[str]:
    """The sentence table's parquet files (sorted); FileNotFoundError when there are none."""
    pattern = FileSystems.join(input_dir, "sentences", "*.parquet")
    files = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    if not files:
        raise FileNotFoundError(f"no sentence table at {pattern} (run `medsimp cochrane` first)")
    return files


# The kind each column of a sentence table must hold (the `cochrane`/`msd`/`plaba` schema).
_KINDS = {
    "sentence_id": "string",
    "doc_id": "string",
    "side": "string",
    "language": "string",
    "section": "string",
    "sentence_index": "integer",
    "text": "string",
}
_NOT_NULL = ("sentence_id", "doc_id", "side", "language", "sentence_index", "text")


def _kind_of(dtype: pa.DataType) -> str:
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "string"
    if pa.types.is_integer(dtype):
        return "integer"
    return str(dtype)


def check_sentence_table(files: list[str]) -> int:
    """InputError (one line naming the file, column and row) unless every file is a sentence
    table whose cells are of the right kind: the columns of `_FIELDS`, strings and an integer
    `sentence_index`, no null in `_NOT_NULL`, and no sentence (`sentence_id`) twice, in one file
    or across part files (a part file copied twice would double every sentence of its
    documents). Reads the schema, then only the id column and the null counts the files record
    (a column whose statistics do not say is read), before any work."""
    documents: set[str] = set()
    first_seen: dict[str, tuple[str, int]] = {}
    for path in files:
        with FileSystems.open(path) as fh:
            meta = pq.ParquetFile(fh).metadata
            schema = meta.schema.to_arrow_schema()
            missing = sorted(set(_FIELDS) - set(schema.names))
            if missing:
                raise InputError(f"{path}: not a sentence table (no column {', '.join(missing)})")
            for column, kind in _KINDS.items():
                found = _kind_of(schema.field(column).type)
                if found != kind:
                    raise InputError(f"{path}: column {column} holds {found} values, not {kind}s")
            suspect = [c for c in _NOT_NULL if _may_hold_nulls(meta, schema.get_field_index(c))]
        if suspect:
            with FileSystems.open(path) as fh:
                table = pq.read_table(fh, columns=suspect)
            for column in suspect:
                first = pc.index(table.column(column).is_null(), True).as_py()
                if first >= 0:
                    row = first + 1
                    raise InputError(f"{path}: column {column}, row {row}: empty (null); every row needs one")
        row = 0
        for ids, docs in _id_batches(path):
            documents.update(docs)
            for sentence_id in ids:
                row += 1
                if sentence_id in first_seen:
                    where, at = first_seen[sentence_id]
                    raise InputError(
                        f"{path}: column sentence_id, row {row}: the sentence {sentence_id!r} appears twice "
                        f"(first in {where}, row {at}); remove the duplicate part file or rows"
                    )
                first_seen[sentence_id] = (path, row)
    return len(documents)


def _may_hold_nulls(meta: pq.FileMetaData, index: int) -> bool:
    """Whether column `index` may hold a null: its statistics say so, or some row group has none."""
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if stats is None or not stats.has_null_count or stats.null_count:
            return True
    return False


def _id_batches(path: str) -> Iterator[tuple[list[str], list[str]]]:
    with FileSystems.open(path) as fh:
        for batch in pq.ParquetFile(fh).iter_batches(batch_size=50_000, columns=["sentence_id", "doc_id"]):
            yield batch.column(0).to_pylist(), batch.column(1).to_pylist()


def english_documents(input_dir: str) -> Iterator[DocPair]:
    """Every document of a sentence table as an unlabelled English DocPair (its English
    abstract and PLS sentences, as the CRF aligns them), read through Beam's FileSystems outside
    a pipeline: `align train`'s self-training pool. A table `cochrane` wrote is streamed a
    document at a time; one whose documents span files is grouped in memory first."""
    from alignment.bridge import english_sides
    from alignment.gold import DocPair

    files = sentence_files(input_dir)
    check_sentence_table(files)  # a column, cell or sentence amiss is one line, before any row is used
    if grouped_by(files, ["doc_id"]):
        docs: Iterator[tuple[str, list[dict]]] = (
            (key[0], rows) for f in files for key, rows in read_documents(f, ["doc_id"], list(_FIELDS))
        )
    else:
        by_doc: dict[str, list[dict]] = defaultdict(list)
        for f in files:
            for r in read_rows(f, list(_FIELDS)):
                by_doc[r["doc_id"]].append(r)
        docs = iter(sorted(by_doc.items()))
    for doc_id, rows in docs:
        complex_, simple = english_sides(rows)
        yield DocPair(doc_id, complex_, simple, frozenset(), review_key(doc_id))


def fallback_notes(result) -> list[str]:
    """A summary note per language pair that a fallback encoder aligned."""
    fallback = counters(result, NAMESPACE) or {}  # no committed counters: no note (stats say why)
    fallback = {k.split(".", 1)[1]: v for k, v in fallback.items() if k.startswith("encoder_fallback.")}
    return [
        f"the first encoder in align.vecalign.encoder does not cover {pair}; a fallback encoder "
        f"aligned it {n} time(s) (check its quality for that language pair)"
        for pair, n in sorted(fallback.items())
    ]


def run(
    input_dir: str,
    out_dir: str,
    params: Align,
    beam_params: Beam,
    beam_args: list[str],
    metrics_file: str | None,
    cache_root: str | None,
    extra: Mapping[str, Any] | None = None,
) -> dict:
    """Align every document of `input_dir`; `extra`: facts stats.json records beside the counts
    (the command passes the aligner model actually used, which the dataset card reads)."""
    files = sentence_files(input_dir)
    documents = check_sentence_table(files)
    pattern = FileSystems.join(input_dir, "sentences", "*.parquet")
    shards = params.num_shards
    tables = {
        "pairs": Table("pairs", PAIRS, lambda r: r["doi"], pair_sort_key, counter="pairs_total"),
        "dead_letter": dead_letter_table(),
    }
    tables = stamp(tables, parquet_lineage(input_dir))
    prepare_dirs(out_dir, tables)
    progress = FileSystems.join(out_dir, ".progress")  # removed before the output is published
    with watch(progress, documents, "align corpus"), new_pipeline(beam_params, beam_args) as p:
        if grouped_by(files, ["doc_id"]):  # a table `cochrane` wrote: stream its documents
            docs = p | "Read" >> ReadDocuments(files, ["doc_id"], list(_FIELDS))
            aligned = docs | "Key" >> beam.MapTuple(lambda key, rows: (key[0], rows))
            pairs = aligned | "AlignDocuments" >> AlignDocuments(params, cache_root, True, progress)
        else:
            sentences = p | "Read" >> beam.io.ReadFromParquet(pattern, columns=list(_FIELDS))
            pairs = sentences | "AlignDocuments" >> AlignDocuments(params, cache_root, False, progress)
        write_tables(pairs, tables, out_dir, shards)
    return finish(
        p.result,
        NAMESPACE,
        out_dir,
        tables,
        shards,
        metrics_file,
        extra=extra,
        reconcile=("read", ["kept", "rejected"]),
        zero=("cache_hits", "cache_misses", "pairs_total"),
        notes=fallback_notes(p.result),
        headline=HEADLINE,
    )
