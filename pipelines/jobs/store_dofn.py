"""The store settings a job's file-touching steps carry to their workers (`StoreDoFn`).

Beam's S3 filesystem is built from the pipeline options Beam's `FileSystems` hold in the
process (`FileSystems.set_options`); with none it refuses `s3://` ("Must provide one of client
or options"). The launcher sets them (`store.use_store`), and a worker started through Beam's
container boot (`sdk_worker_main`: Docker workers on Flink, Spark, Dataflow) gets the job's
options. Beam's Python worker pool (`python -m apache_beam.runners.worker.worker_pool_main`)
starts each worker as a bare `SdkHarness`, which sets none; the local runner's workers get
only the options medsimp hands them (`beam_io.new_pipeline`: the log level). So every DoFn of
the jobs that reads, writes, lists or deletes files is a `StoreDoFn`: it takes the store
settings of the launcher when it is built (`store_settings`) and, in `setup`, before any file
is touched in that worker process, fills in the ones its process's FileSystems options lack
(`reach_store`: options for a process that has none; a setting the worker was given is never
replaced). A function that reads files runs as `beam.ParDo(FilesFn(fn, *args))`, the
`beam.FlatMap(fn, *args)` of a StoreDoFn. Beam's own file sources (ReadFromParquet, ...) read
in workers the jobs cannot reach, so the jobs read files through `FilesFn` instead.

Only settings that are not secrets travel (`CARRIED`: endpoint, region, API version, TLS
verification, SSL off), pickled into the pipeline the runner stages. Credentials never do,
even when given as `--beam-arg=--s3_access_key_id=...`: a worker without the job's options
takes them from its own environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an
instance role: boto3's chain), as docs/refresh.md's runbook sets them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, S3Options

# Beam's S3Options a StoreDoFn carries to its workers: none is a secret (the access key, the
# secret key and the session token stay out: the workers' environment holds them)
CARRIED = ("s3_endpoint_url", "s3_region_name", "s3_api_version", "s3_verify", "s3_disable_ssl")

_LOCK = threading.Lock()  # a worker runs bundles, and so DoFn setups, on several threads


def filesystem_options() -> PipelineOptions | None:
    """The pipeline options Beam's FileSystems hold in this process (None: never set), which
    Beam's `get_filesystem` hands every filesystem it builds. Beam has a setter
    (`FileSystems.set_options`) but no getter: this is the one place medsimp reads it."""
    return FileSystems._pipeline_options


def store_settings() -> dict[str, Any]:
    """The `CARRIED` S3 settings of this process's FileSystems options (what `store.use_store`
    set from the job's `beam` params and `--beam-arg`s), those that are set: what a worker
    needs to reach the same store, without a secret."""
    options = filesystem_options()
    if options is None:
        return {}
    s3 = options.view_as(S3Options)
    return {name: getattr(s3, name) for name in CARRIED if getattr(s3, name) not in (None, False)}


def reach_store(settings: Mapping[str, Any]) -> None:
    """Give this process's Beam FileSystems the store `settings` they lack: new options holding
    them when the process has none (a worker of Beam's Python worker pool), else each setting
    its options leave unset (the local runner's workers). A setting the process has is kept."""
    with _LOCK:
        options = filesystem_options()
        if options is None:
            FileSystems.set_options(PipelineOptions([], **dict(settings)))
            return
        s3 = options.view_as(S3Options)
        for name, value in settings.items():
            if getattr(s3, name) in (None, False):
                setattr(s3, name, value)


class StoreDoFn(beam.DoFn):
    """The base of every DoFn of the jobs that touches files: it carries the launcher's store
    settings (`store_settings`, taken when it is built) and reaches the store with them in its
    worker (`reach_store`, in `setup`). A subclass that defines `__init__` or `setup` calls
    this class's first (tests/test_store_dofn.py checks)."""

    def __init__(self) -> None:
        super().__init__()
        self.store = store_settings()

    def setup(self) -> None:
        reach_store(self.store)


class FilesFn(StoreDoFn):
    """`beam.FlatMap(fn, *args)` as a StoreDoFn, for a `fn` that reads files:
    `beam.ParDo(FilesFn(fn, *args))` yields what `fn(element, *args)` yields."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        super().__init__()
        self.fn, self.args = fn, args

    def process(self, element):
        yield from self.fn(element, *self.args)
