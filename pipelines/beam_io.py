"""Beam plumbing shared by every job: runner options, deterministic sharded writes, counters.

Outputs are byte-identical across runs and runners: rows are routed to a fixed
number of shards by a stable hash of a key, sorted inside each shard, and
written by one DoFn call per shard through Beam's FileSystems (so gs://, s3://,
hdfs:// work on distributed runners).
"""

from __future__ import annotations

import io
import json
import sys
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions


def pipeline_options(
    beam_params: Mapping[str, Any] | None = None, extra_args: Iterable[str] = ()
) -> PipelineOptions:
    """Options from the `beam` params section plus raw `--beam-arg` flags.

    Locally: FnApiRunner (the DirectRunner's engine, no Prism download) in
    multi-processing mode on `num_workers` processes. Pass e.g.
    `--beam-arg=--runner=FlinkRunner --beam-arg=--flink_master=host:8081`
    to run the same job elsewhere.
    """
    from medsimp.pipelines.beam_worker import local_mode

    beam_params = dict(beam_params or {})
    runner, workers, mode = local_mode(beam_params)
    args = [f"--runner={runner}"]
    if mode:
        args += [f"--direct_num_workers={workers}", f"--direct_running_mode={mode}"]
    args.append(f"--default_sdk_harness_log_level={beam_params.get('log_level', 'WARNING')}")
    args += [str(a) for a in beam_params.get("options", [])]
    args += list(extra_args)
    return PipelineOptions(args)


class _LivePipeline(beam.Pipeline):
    """A Pipeline that shows a live spinner with the elapsed time while it runs (TTY only)."""

    def run(self, test_runner_api="AUTO"):
        from medsimp.progress import live

        with live(f"Beam job on {self._options.view_as(StandardOptions).runner}"):
            result = super().run(test_runner_api)
            result.wait_until_finish()
        return result


def _quiet_fn_api_runner(provision_info):
    """FnApiRunner whose worker processes start through `medsimp.pipelines.beam_worker`
    (Beam's worker without its start-up chatter). FnApiRunner picks the worker command when
    it runs (from `--direct_running_mode`), so the swap happens as it assigns it."""
    from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner
    from apache_beam.transforms.environments import SubprocessSDKEnvironment

    class QuietWorkersRunner(FnApiRunner):
        @property
        def _default_environment(self):
            return self._environment

        @_default_environment.setter
        def _default_environment(self, environment):
            if isinstance(environment, SubprocessSDKEnvironment):
                environment = SubprocessSDKEnvironment.from_command_string(
                    f"{sys.executable} -m medsimp.pipelines.beam_worker"
                )
            self._environment = environment

    return QuietWorkersRunner(provision_info=provision_info)


def new_pipeline(
    beam_params: Mapping[str, Any] | None = None, extra_args: Iterable[str] = ()
) -> beam.Pipeline:
    """A Pipeline on `pipeline_options`. The local FnApiRunner does not hand pipeline options
    to its worker processes, so they would log at INFO whatever `--default_sdk_harness_log_level`
    says; here the runner gets the level in its provision info, which the workers read."""
    from medsimp.pipelines.beam_worker import QUIET_RUNNER

    options = pipeline_options(beam_params, extra_args)
    if options.view_as(StandardOptions).runner != QUIET_RUNNER:
        return _LivePipeline(options=options)
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo
    from google.protobuf import struct_pb2

    level = struct_pb2.Struct()
    level.update(
        {"default_sdk_harness_log_level": options.get_all_options()["default_sdk_harness_log_level"]}
    )
    info = ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(retrieval_token="unused-retrieval-token", pipeline_options=level)
    )
    return _LivePipeline(runner=_quiet_fn_api_runner(info), options=options)


def list_files(pattern: str) -> list[str]:
    """Files matching a glob (`dir/*.parquet`, `dir/**.parquet`) on any Beam filesystem, sorted."""
    return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)


def open_file(path: str):
    """`path` opened for binary reading through Beam's FileSystems, without decompression."""
    from apache_beam.io.filesystem import CompressionTypes

    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def write_file(path: str, data: bytes) -> None:
    """Write `data` to `path` through Beam's FileSystems (inside an output folder that is
    swapped in whole, so no temp file is needed)."""
    with FileSystems.create(path) as fh:
        fh.write(data)


def parquet_lineage(path: str) -> tuple[str, ...] | None:
    """`medsimp.lineage.read_lineage` on any Beam filesystem: the union of the lineage of a
    Parquet file or of every `*.parquet` below a folder (None: unknown)."""
    from medsimp.lineage import from_metadata, union

    files = [path] if path.endswith(".parquet") else list_files(FileSystems.join(path, "**.parquet"))
    if not files:
        return None
    found = []
    for file in files:
        try:
            with open_file(file) as fh:
                found.append(from_metadata(pq.read_schema(io.BytesIO(fh.read())).metadata))
        except (OSError, ValueError):
            return None
    return union(*found)


def stable_shard(key: str, num_shards: int) -> int:
    """Shard index from a CRC32 of the key: the same on every machine and run."""
    return zlib.crc32(key.encode("utf-8")) % num_shards


def shard_name(prefix: str, index: int, num_shards: int, suffix: str) -> str:
    return f"{prefix}-{index:05d}-of-{num_shards:05d}{suffix}"


def table_bytes(rows: list[dict], schema: pa.Schema) -> bytes:
    """Rows -> parquet bytes with fixed settings (deterministic for a pinned pyarrow)."""
    table = pa.Table.from_pylist(rows, schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", row_group_size=50_000, write_statistics=True)
    return sink.getvalue()


class _WriteShardFn(beam.DoFn):
    def __init__(
        self,
        out_dir: str,
        prefix: str,
        num_shards: int,
        schema: pa.Schema,
        sort_key: Callable[[dict], Any],
        fmt: str,
    ):
        self.out_dir, self.prefix, self.num_shards = out_dir, prefix, num_shards
        self.schema, self.sort_key, self.fmt = schema, sort_key, fmt

    def process(self, element):
        index, rows = element
        rows = sorted(rows, key=self.sort_key)
        if self.fmt == "parquet":
            data, suffix = table_bytes(rows, self.schema), ".parquet"
        else:
            data = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
            data, suffix = data.encode("utf-8"), ".jsonl"
        path = FileSystems.join(self.out_dir, shard_name(self.prefix, index, self.num_shards, suffix))
        with FileSystems.create(path) as fh:
            fh.write(data)
        yield path


class WriteSorted(beam.PTransform):
    """Write dict rows to `num_shards` sorted files under `out_dir` (parquet or jsonl).

    `shard_key(row)` picks the shard, `sort_key(row)` orders rows within it.
    Shards that receive no rows are written empty by `fill_empty_shards` after the run.
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
    ):
        super().__init__()
        if fmt == "parquet" and schema is None:
            raise ValueError("parquet output needs a schema")
        self.out_dir, self.prefix, self.num_shards = out_dir, prefix, num_shards
        self.shard_key, self.sort_key, self.schema, self.fmt = shard_key, sort_key, schema, fmt

    def expand(self, rows):
        n, shard_key = self.num_shards, self.shard_key
        return (
            rows
            | "KeyByShard" >> beam.Map(lambda r: (stable_shard(shard_key(r), n), r))
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShard"
            >> beam.ParDo(_WriteShardFn(self.out_dir, self.prefix, n, self.schema, self.sort_key, self.fmt))
        )


def fill_empty_shards(
    out_dir: str, prefix: str, num_shards: int, schema: pa.Schema | None = None, fmt: str = "parquet"
) -> None:
    """Write an empty file for every shard the pipeline did not produce."""
    suffix = ".parquet" if fmt == "parquet" else ".jsonl"
    for i in range(num_shards):
        path = FileSystems.join(out_dir, shard_name(prefix, i, num_shards, suffix))
        if not FileSystems.exists(path):
            with FileSystems.create(path) as fh:
                fh.write(table_bytes([], schema) if fmt == "parquet" else b"")


def counters(result, namespace: str) -> dict[str, int]:
    """Committed Beam counter values of one namespace, by counter name."""
    from apache_beam.metrics.metric import MetricsFilter

    out: dict[str, int] = {}
    query = result.metrics().query(MetricsFilter().with_namespace(namespace))
    for item in query["counters"]:
        value = item.committed if item.committed is not None else item.attempted
        out[item.key.metric.name] = out.get(item.key.metric.name, 0) + int(value or 0)
    return out
