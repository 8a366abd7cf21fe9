"""Parquet tables read through Beam's FileSystems outside a pipeline (local or an object
store), a batch at a time: the readers the Beam jobs' PTransforms (`pipelines.jobs.beam_io`
`ReadRows`, `ReadDocuments`) and `align train`'s self-training pool share, and the sentence
table's checks (`sentence_files`, `check_sentence_table`: one line naming the file, column and
row, before any work)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from medsimp.errors import InputError

# The columns of a sentence table (`cochrane`/`msd`/`plaba`) that aligning reads.
SENTENCE_FIELDS = ("sentence_id", "doc_id", "side", "language", "section", "sentence_index", "text")


def _key_runs(path: str, key_columns: list[str], batch_rows: int) -> Iterator[tuple]:
    """The key of each run of consecutive rows with equal `key_columns` in one parquet file."""
    with FileSystems.open(path) as fh:
        last: tuple | None = None
        for batch in pq.ParquetFile(fh).iter_batches(batch_size=batch_rows, columns=key_columns):
            for key in zip(*(batch.column(c).to_pylist() for c in key_columns)):
                if key != last:
                    yield key
                    last = key


def grouped_by(files: Iterable[str], key_columns: list[str], batch_rows: int = 10_000) -> bool:
    """Whether every document (rows with equal `key_columns`) lies in one file, in consecutive
    rows: then `ReadDocuments` streams the documents and no GroupByKey is needed. Reads only
    the key columns; memory grows with the number of documents, not rows."""
    seen: set[tuple] = set()
    for path in files:
        for key in _key_runs(path, key_columns, batch_rows):
            if key in seen:
                return False
            seen.add(key)
    return True


def read_numbered_documents(
    path: str, key_columns: list[str], columns: list[str] | None = None, batch_rows: int = 10_000
) -> Iterator[tuple[tuple, list[tuple[int, dict]]]]:
    """(key, [(row number, row), ...]) for each run of consecutive rows with equal
    `key_columns` in one parquet file, in file order, reading `batch_rows` rows at a time (one
    document and one batch in memory). Row numbers count from 1; rows hold `columns` (default:
    all) in that order."""
    with FileSystems.open(path) as fh:
        current: tuple = ()
        rows: list[tuple[int, dict]] = []
        number = 0
        for batch in pq.ParquetFile(fh).iter_batches(batch_size=batch_rows, columns=columns):
            for row in batch.to_pylist():
                number += 1
                key = tuple(row[c] for c in key_columns)
                if rows and key != current:
                    yield current, rows
                    rows = []
                current = key
                rows.append((number, {c: row[c] for c in columns} if columns else row))
        if rows:
            yield current, rows


def read_documents(
    path: str, key_columns: list[str], columns: list[str] | None = None, batch_rows: int = 10_000
) -> Iterator[tuple[tuple, list[dict]]]:
    """(key, rows) for each run of consecutive rows with equal `key_columns` in one parquet
    file (`read_numbered_documents` without the row numbers)."""
    for key, numbered in read_numbered_documents(path, key_columns, columns, batch_rows):
        yield key, [row for _, row in numbered]


def read_rows(path: str, columns: list[str] | None = None, batch_rows: int = 5_000) -> Iterator[dict]:
    """The rows of one parquet file, `batch_rows` at a time as Python dicts (Beam's
    ReadFromParquet converts a whole row group, up to ROW_GROUP_SIZE rows, at once)."""
    with FileSystems.open(path) as fh:
        for batch in pq.ParquetFile(fh).iter_batches(batch_size=batch_rows, columns=columns):
            yield from batch.to_pylist()


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
    table whose cells are of the right kind: the columns of `SENTENCE_FIELDS`, strings and an integer
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
            missing = sorted(set(SENTENCE_FIELDS) - set(schema.names))
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
