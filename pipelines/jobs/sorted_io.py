"""Deterministic sharded I/O for the jobs: rows routed to a fixed number of shards by a stable
hash of a key (`stable_shard`), sorted inside each shard through bounded run files and merges
(`WriteSorted`, `GroupSorted`), written as parquet or JSON lines through Beam's FileSystems,
and parquet files read a batch or a document at a time (`ReadRows`, `ReadDocuments`). The same
bytes on every run and runner. Every step that touches files is a `store_dofn.StoreDoFn`, so a
worker reaches the job's object store."""

from __future__ import annotations

import heapq
import io
import itertools
import json
import math
import pickle
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from pipelines.jobs.store import create_file
from pipelines.jobs.store_dofn import FilesFn, StoreDoFn
from pipelines.sources.tables import read_documents, read_rows


def stable_shard(key: str, num_shards: int) -> int:
    """Shard index from a CRC32 of the key: the same on every machine and run."""
    return zlib.crc32(key.encode("utf-8")) % num_shards


def shard_name(prefix: str, index: int, num_shards: int, suffix: str) -> str:
    return f"{prefix}-{index:05d}-of-{num_shards:05d}{suffix}"


ROW_GROUP_SIZE = 10_000  # rows per parquet row group (part of the output bytes; a writer holds one)
ARROW_CHUNK = 5_000  # rows a streamed write converts from dicts at once (not part of the bytes)
RUN_ROWS = 5_000  # rows a WriteSorted worker holds before it writes them, sorted, as a run


def _parquet_writer(sink, schema: pa.Schema) -> pq.ParquetWriter:
    return pq.ParquetWriter(sink, schema, compression="zstd", write_statistics=True)


def table_bytes(rows: list[dict], schema: pa.Schema, row_group_size: int = ROW_GROUP_SIZE) -> bytes:
    """Rows -> parquet bytes with fixed settings (deterministic for a pinned pyarrow)."""
    table = pa.Table.from_pylist(rows, schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", row_group_size=row_group_size, write_statistics=True)
    return sink.getvalue()


def write_parquet_stream(
    sink, rows: Iterable[dict], schema: pa.Schema, row_group_size: int = ROW_GROUP_SIZE
) -> int:
    """Write rows to `sink` holding one row group at a time, in Arrow form (rows are converted
    `ARROW_CHUNK` at a time, so at most that many are Python dicts); the bytes are those of
    `table_bytes(list(rows), schema, row_group_size)`: same writer, same row groups (a
    chunked row group writes the bytes of a contiguous one: tests). An empty `rows` writes the
    empty table. Returns the number of rows."""
    writer = _parquet_writer(sink, schema)
    chunk_rows = math.gcd(row_group_size, ARROW_CHUNK)  # chunks tile a row group exactly
    batches: list[pa.Table] = []
    chunk: list[dict] = []
    held = n = 0

    def write_group() -> None:
        table = pa.concat_tables(batches) if batches else pa.Table.from_pylist([], schema=schema)
        writer.write_table(table, row_group_size=row_group_size)
        batches.clear()

    try:
        for row in rows:
            chunk.append(row)
            if len(chunk) == chunk_rows:
                batches.append(pa.Table.from_pylist(chunk, schema=schema))
                held, chunk = held + len(chunk), []
                if held == row_group_size:
                    write_group()
                    n, held = n + row_group_size, 0
        if chunk:
            batches.append(pa.Table.from_pylist(chunk, schema=schema))
            held += len(chunk)
        if batches or not n:
            write_group()
            n += held
    finally:
        writer.close()
    return n


def _run_path(out_dir: str, prefix: str, shard: int) -> str:
    """A hidden run file beside the shard it belongs to (no reader's `*.parquet` pattern
    matches it; `fill_empty_shards` deletes it after the pipeline)."""
    return FileSystems.join(out_dir, f".{prefix}-{shard:05d}-{uuid.uuid4().hex}.run")


def read_run(path: str) -> Iterator[dict]:
    """The rows of a run file, one at a time."""
    with FileSystems.open(path) as fh:
        while True:  # one pickle per row: a shared Unpickler's memo would not match the writer's
            try:
                yield pickle.load(fh)
            except EOFError:
                return


class _SpillRunsFn(StoreDoFn):
    """Rows -> (shard, run file): rows are routed to their shard and buffered; every
    `run_rows` rows, and at the end of a bundle, each shard's buffer is written sorted as a
    run (a pickle stream). A worker holds at most `run_rows` rows, whatever the data size."""

    def __init__(self, out_dir, prefix, num_shards, shard_key, sort_key, run_rows):
        super().__init__()
        self.out_dir, self.prefix, self.num_shards = out_dir, prefix, num_shards
        self.shard_key, self.sort_key, self.run_rows = shard_key, sort_key, run_rows

    def start_bundle(self):
        self.buffers: dict[int, list[dict]] = {}
        self.buffered = 0

    def process(self, row):
        self.buffers.setdefault(stable_shard(self.shard_key(row), self.num_shards), []).append(row)
        self.buffered += 1
        if self.buffered >= self.run_rows:
            yield from self._flush()

    def finish_bundle(self):
        from apache_beam.transforms.window import GlobalWindows

        for run in self._flush():
            yield GlobalWindows.windowed_value(run)

    def _flush(self) -> list[tuple[int, str]]:
        runs = []
        for shard in sorted(self.buffers):
            path = _run_path(self.out_dir, self.prefix, shard)
            with create_file(path) as fh:
                for row in sorted(self.buffers[shard], key=self.sort_key):
                    pickle.dump(row, fh, protocol=pickle.HIGHEST_PROTOCOL)
            runs.append((shard, path))
        self.buffers, self.buffered = {}, 0
        return runs


MERGE_FAN_IN = 64  # run files a merge reads at once; more are merged in passes first


def merge_runs(runs: list[str], sort_key: Callable[[dict], Any], out_dir: str, prefix: str, shard: int):
    """The rows of `runs` in sort order, with at most MERGE_FAN_IN files open: while there are
    more, the first MERGE_FAN_IN are merged into a new run (deleted once read). The given runs
    are never deleted here: a retried bundle must find them (`fill_empty_shards` removes every
    run file once the pipeline is done)."""
    runs, made = sorted(runs), set()
    try:
        while len(runs) > MERGE_FAN_IN:
            path = _run_path(out_dir, prefix, shard)
            made.add(path)
            merged = runs[:MERGE_FAN_IN]
            with create_file(path) as fh:
                for row in heapq.merge(*(read_run(r) for r in merged), key=sort_key):
                    pickle.dump(row, fh, protocol=pickle.HIGHEST_PROTOCOL)
            done = [r for r in merged if r in made]  # our own intermediates, now merged
            if done:
                delete_files(done)
                made.difference_update(done)
            runs = [*runs[MERGE_FAN_IN:], path]
        yield from heapq.merge(*(read_run(r) for r in runs), key=sort_key)
    finally:
        if made:
            delete_files(sorted(made))


class _MergeShardFn(StoreDoFn):
    """(shard, run files) -> the shard's file: the runs merged in sort order and written as
    they stream (a parquet row group at a time)."""

    def __init__(self, out_dir, prefix, num_shards, schema, sort_key, fmt):
        super().__init__()
        self.out_dir, self.prefix, self.num_shards = out_dir, prefix, num_shards
        self.schema, self.sort_key, self.fmt = schema, sort_key, fmt

    def process(self, element):
        index, runs = element
        rows = merge_runs(list(runs), self.sort_key, self.out_dir, self.prefix, index)
        suffix = ".parquet" if self.fmt == "parquet" else ".jsonl"
        path = FileSystems.join(self.out_dir, shard_name(self.prefix, index, self.num_shards, suffix))
        with create_file(path) as fh:
            if self.fmt == "parquet":
                write_parquet_stream(fh, rows, self.schema)
            else:
                for r in rows:
                    fh.write((json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
        yield path


class WriteSorted(beam.PTransform):
    """Write dict rows to `num_shards` sorted files under `out_dir` (parquet or jsonl).

    `shard_key(row)` picks the shard, `sort_key(row)` orders rows within it.
    Shards that receive no rows are written empty by `fill_empty_shards` after the run.

    Memory stays flat in the data size: workers write sorted runs of at most `run_rows` rows
    next to the output, and one merge per shard streams them into the shard's file (at most
    MERGE_FAN_IN runs open at once); only run file names are grouped, so the rows never cross
    a stage boundary (where the local runner would hold a whole PCollection in memory). Run
    files stay until `fill_empty_shards`, so a retried merge reads them again. Rows with equal sort keys may come in any
    order, as they could before; every job's sort key is unique per row.
    """

    def __init__(
        self,
        out_dir: str,
        *,
        prefix: str,
        num_shards: int,
        shard_key: Callable[[dict], str],
        sort_key: Callable[[dict], Any],
        schema: pa.Schema | None = None,
        fmt: str = "parquet",
        run_rows: int = RUN_ROWS,
    ):
        super().__init__()
        if fmt == "parquet" and schema is None:
            raise ValueError("parquet output needs a schema")
        self.out_dir, self.prefix, self.num_shards = out_dir, prefix, num_shards
        self.shard_key, self.sort_key, self.schema, self.fmt = shard_key, sort_key, schema, fmt
        self.run_rows = run_rows

    def expand(self, rows):
        n, out_dir, prefix = self.num_shards, self.out_dir, self.prefix
        return (
            rows
            | "SpillRuns"
            >> beam.ParDo(_SpillRunsFn(out_dir, prefix, n, self.shard_key, self.sort_key, self.run_rows))
            | "GroupRunsByShard" >> beam.GroupByKey()
            | "MergeShard"
            >> beam.ParDo(_MergeShardFn(out_dir, prefix, n, self.schema, self.sort_key, self.fmt))
        )


GROUP_SHARDS = 8  # merges of a GroupSorted: parallel work for up to this many workers
GROUP_RUN_ROWS = 500  # (key, value) pairs a GroupSorted worker holds: values are whole records


def _first(kv: tuple) -> Any:
    return kv[0]


class _MergeGroupsFn(StoreDoFn):
    """(shard, run files of (key, value) pairs sorted by key) -> (key, [values]) per key."""

    def __init__(self, tmp_dir: str, prefix: str):
        super().__init__()
        self.tmp_dir, self.prefix = tmp_dir, prefix

    def process(self, element):
        shard, runs = element
        merged = merge_runs(list(runs), _first, self.tmp_dir, self.prefix, shard)
        for key, group in itertools.groupby(merged, key=_first):
            yield key, [value for _, value in group]


class GroupSorted(beam.PTransform):
    """(key, value) -> (key, [values]): a GroupByKey that holds no data at a stage boundary.

    Workers write the pairs, sorted by key, as run files in `tmp_dir` (at most `run_rows`
    pairs held, see WriteSorted), only the run names are grouped, and one merge per shard
    (GROUP_SHARDS, by a stable hash of the key) yields each key's values. The local runner
    would hold a GroupByKey's whole input in the main process and hand each worker its
    whole share at once; a cluster runner shuffles either way. Keys must be orderable and
    equal keys must pickle alike (strings); values come in no particular order, as from a
    GroupByKey. The caller deletes the runs after the pipeline (`delete_runs(tmp_dir, prefix)`).
    """

    def __init__(self, tmp_dir: str, *, prefix: str = "group", run_rows: int = GROUP_RUN_ROWS):
        super().__init__()
        self.tmp_dir, self.prefix, self.run_rows = tmp_dir, prefix, run_rows

    def expand(self, pairs):
        spill = _SpillRunsFn(self.tmp_dir, self.prefix, GROUP_SHARDS, _first, _first, self.run_rows)
        return (
            pairs
            | "SpillRuns" >> beam.ParDo(spill)
            | "GroupRunsByShard" >> beam.GroupByKey()
            | "MergeGroups" >> beam.ParDo(_MergeGroupsFn(self.tmp_dir, self.prefix))
        )


def delete_runs(tmp_dir: str, prefix: str) -> None:
    """Delete the run files of `prefix` a WriteSorted or GroupSorted left in `tmp_dir` (a file
    another attempt removed first is fine); RuntimeError if any is left, since runs hold the
    rows in the clear and must never be published with the output."""
    for path in list_run_files(tmp_dir, prefix):
        try:
            delete_files([path])
        except BeamIOError:
            if FileSystems.exists(path):
                raise
    if list_run_files(tmp_dir, prefix):
        raise RuntimeError(f"run files of {prefix!r} are left in the output's staging folder")


class ReadRows(beam.PTransform):
    """Parquet files -> their rows, read `read_rows`' batch at a time in the worker that reads
    the file: memory does not grow with a file's row groups."""

    def __init__(self, files: list[str], columns: list[str] | None = None):
        super().__init__()
        self.files, self.columns = list(files), columns

    def expand(self, pbegin):
        return (
            pbegin
            | "Files" >> beam.Create(self.files)
            | "Reshuffle" >> beam.Reshuffle()
            | "Rows" >> beam.ParDo(FilesFn(read_rows, self.columns))
        )


class ReadDocuments(beam.PTransform):
    """Parquet files in which each document's rows are consecutive and in one file (see
    `grouped_by`) -> (key, rows) per document, streamed a file at a time: what a GroupByKey
    on the key would give, without a sort or a group. A Reshuffle then spreads the documents
    over every worker, so the per-document work after it is parallel by document, not by file
    (one input file still keeps every worker busy)."""

    def __init__(self, files: list[str], key_columns: list[str], columns: list[str] | None = None):
        super().__init__()
        self.files, self.key_columns, self.columns = list(files), list(key_columns), columns

    def expand(self, pbegin):
        return (
            pbegin
            | "Files" >> beam.Create(self.files)
            | "Reshuffle" >> beam.Reshuffle()
            | "Documents" >> beam.ParDo(FilesFn(read_documents, self.key_columns, self.columns))
            | "SpreadDocuments" >> beam.Reshuffle()
        )


def fill_empty_shards(
    out_dir: str, prefix: str, num_shards: int, schema: pa.Schema | None = None, fmt: str = "parquet"
) -> None:
    """After the pipeline: write an empty file for every shard it did not produce, and delete
    the run files `WriteSorted` left (those the merges read and those of retried bundles)."""
    suffix = ".parquet" if fmt == "parquet" else ".jsonl"
    for i in range(num_shards):
        path = FileSystems.join(out_dir, shard_name(prefix, i, num_shards, suffix))
        if not FileSystems.exists(path):
            with create_file(path) as fh:
                fh.write(table_bytes([], schema) if fmt == "parquet" else b"")
    delete_runs(out_dir, prefix)


def glob_escape(path: str) -> str:
    """`path` with glob characters bracketed, so a pattern built on it (`FileSystems.match`: the
    local filesystem's glob, fnmatch on object stores) matches the folder literally: an output
    named `out[v2]` must still find its own files."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in path)


def delete_files(paths: list[str]) -> None:
    """FileSystems.delete of these exact files: Beam's filesystems match what they delete as a
    pattern, so the paths are escaped (`glob_escape`)."""
    FileSystems.delete([glob_escape(p) for p in paths])


def list_run_files(out_dir: str, prefix: str) -> list[str]:
    """The `WriteSorted`/`GroupSorted` run files of `prefix` in `out_dir`."""
    pattern = FileSystems.join(glob_escape(out_dir), f".{prefix}-*.run")
    return sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)
