"""Beam plumbing shared by every job: runner options (`pipeline_options`, `local_mode`), the
pipeline every job runs (`new_pipeline`: a live display, one-line failures), heap trimming and
committed counters. Object stores: `pipelines.jobs.store`; the job's services and workers:
`pipelines.jobs.pool`; sharded, sorted I/O: `pipelines.jobs.sorted_io`.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable
from typing import Any

import apache_beam as beam
import psutil
from apache_beam.options.pipeline_options import (
    DirectOptions,
    PipelineOptions,
    PortableOptions,
    StandardOptions,
)

from medsimp.atomic import current_command
from medsimp.errors import MedsimpError, StageFailed
from medsimp.params_schema import Beam
from medsimp.progress import live
from medsimp.stats import record_run
from pipelines.jobs.pool import (
    check_endpoints,
    endpoints_of,
    service_error,
    services_answer,
    wait_watching_pool,
    watch_workers,
    worker_lost,
    write_error,
)

LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner")
PORTABLE_RUNNERS = ("PortableRunner", "portable")


def local_mode(beam_params: Beam | None) -> tuple[str, int, str]:
    """(runner, worker count, running mode) that the `beam` params section asks for; the
    mode is "" for a runner other than the local one."""
    beam_params = beam_params or Beam()  # none: the schema's defaults
    runner = beam_params.runner
    if runner not in LOCAL_RUNNERS:
        return runner, 0, ""
    workers = beam_params.num_workers
    mode = beam_params.running_mode or ("multi_processing" if workers > 1 else "in_memory")
    return runner, workers, mode


def pipeline_options(beam_params: Beam | None = None, extra_args: Iterable[str] = ()) -> PipelineOptions:
    """Options from the `beam` params section plus raw `--beam-arg` flags.

    Locally: FnApiRunner (the DirectRunner's engine, no Prism download) on `num_workers`
    worker processes (`running_mode: multi_processing`, the default for more than one worker),
    or Beam's `in_memory` / `multi_threading` modes. On the PortableRunner, `num_workers` is
    Beam's `--sdk_worker_parallelism` unless that is given (the SDK workers of each job:
    medsimp's job server, `pipelines.jobs.job_server`, honours it), and `--job_server_timeout`
    is JOB_STATE_SECONDS unless given. Pass e.g.
    `--beam-arg=--runner=FlinkRunner --beam-arg=--flink_master=host:8081`
    to run the same job elsewhere.
    """
    beam_params = beam_params or Beam()
    runner, workers, mode = local_mode(beam_params)
    args = [f"--runner={runner}"]
    if mode:
        args += [f"--direct_num_workers={workers}", f"--direct_running_mode={mode}"]
    args.append(f"--default_sdk_harness_log_level={beam_params.log_level}")
    args += [str(a) for a in beam_params.options]
    args += list(extra_args)
    if PipelineOptions(args).view_as(StandardOptions).runner in PORTABLE_RUNNERS:
        given = {str(a).split("=")[0].replace("-", "_") for a in args}
        if "__sdk_worker_parallelism" not in given:
            args.append(f"--sdk_worker_parallelism={beam_params.num_workers}")
        if "__job_server_timeout" not in given:
            args.append(f"--job_server_timeout={JOB_STATE_SECONDS}")
    return PipelineOptions(args)


# Beam's PortableRunner opens the job's state and message streams with `--job_server_timeout`
# (default 300 s) as their gRPC deadline, so a job that runs longer than that fails with
# DEADLINE_EXCEEDED however well it runs (measured: `align corpus` on 8 synthetic reviews, one
# worker, failed at 7 of 8 documents). medsimp passes a week unless the flag is given; the
# services are checked (`pool.check_endpoints`) and the pool watched while the job runs.
JOB_STATE_SECONDS = 7 * 24 * 3600


def workers_of(options: PipelineOptions) -> int:
    """The worker count a job asks for: the PortableRunner's `sdk_worker_parallelism`, else the
    local runner's `direct_num_workers` (the run record's `workers`)."""
    if options.view_as(StandardOptions).runner in PORTABLE_RUNNERS:
        try:
            return int(options.view_as(PortableOptions).sdk_worker_parallelism)
        except (TypeError, ValueError):
            return 1
    return options.view_as(DirectOptions).direct_num_workers


class _LivePipeline(beam.Pipeline):
    """A Pipeline that shows a live spinner with the elapsed time while it runs (TTY only), and
    runs the job again, up to `retries` times, when an SDK worker died under it.

    A retry reruns the whole job (neither Beam's local FnApiRunner nor its job server retries a
    bundle whose worker died). That gives the same bytes because every job's writes are
    idempotent, as a runner's bundle retries need too: shards have fixed names and are written
    whole from sorted runs, run files are named at random and deleted after the job
    (`sorted_io`), and the stats come from the counters of the run that succeeded. The document
    cache (`cache.dir`) keeps what the first run computed. A step that raised is not retried;
    neither is a job whose job endpoint or worker pool stopped answering."""

    retries = 0  # set by new_pipeline from beam.retries

    def run(self, test_runner_api="AUTO"):
        beam_log = logging.getLogger("apache_beam")
        level = beam_log.level
        quiet = beam_log.getEffectiveLevel() >= logging.ERROR  # not -v: a failure is raised, in one line
        if quiet:
            beam_log.setLevel(logging.CRITICAL)
            # the PortableRunner logs its job service's messages (worker tracebacks) on the root logger
            logging.getLogger().addFilter(_not_beam)
        attempt, gone = 1, False
        try:
            # read before the run: the PortableRunner clears the options' runner
            endpoints = endpoints_of(self._options)
            label = f"Beam job on {self._options.view_as(StandardOptions).runner}"
            check_endpoints(endpoints)  # before the job: one line if a service is not there
            while True:
                try:
                    with live(label), watch_workers():
                        result = super().run(test_runner_api)
                        wait_watching_pool(result, endpoints, type(self.runner).__name__)
                    break
                except Exception as exc:
                    if not worker_lost(exc) or attempt > self.retries:
                        raise
                    if not services_answer(endpoints):
                        gone = True  # the pool or the job service, not one worker: final
                        raise
                    attempt += 1
                    print(
                        f"{_command()}: an SDK worker died under the Beam job; running the job again "
                        f"(run {attempt} of {self.retries + 1}, beam.retries)",
                        file=sys.stderr,
                        flush=True,
                    )
        except MedsimpError as exc:  # medsimp's own one-line errors (endpoints, workers) stay as they are
            if worker_lost(exc) and attempt > 1:
                raise type(exc)(f"{exc} ({_runs(attempt)})") from None
            raise
        except Exception as exc:
            runner = type(self.runner).__name__
            error = (
                write_error(exc)
                or service_error(exc)
                or (lost_worker_error(runner, attempt, gone) if worker_lost(exc) else None)
                or runner_error(runner, exc)
            )
            if error is None:
                raise
            raise error from None
        finally:
            beam_log.setLevel(level)
            logging.getLogger().removeFilter(_not_beam)
        return result


def _not_beam(record: logging.LogRecord) -> bool:
    """Drop what Beam's modules log on the root logger (the PortableRunner relays its job
    service's messages there: worker tracebacks, which may quote data)."""
    return f"{os.sep}apache_beam{os.sep}" not in record.pathname


def _command() -> str:
    return f"medsimp {current_command()}".strip()


def _runs(attempt: int) -> str:
    return f"{attempt} runs, beam.retries: {attempt - 1}" if attempt > 1 else "beam.retries: 0"


def lost_worker_error(runner: str, attempt: int, gone: bool = False) -> Exception:
    """A `StageFailed` in one line for a portable job whose SDK worker died on its last run
    (`gone`: and its job service or worker pool no longer answers, so it was not run again)."""
    if gone:
        return StageFailed(
            f"the Beam job failed on the {runner}: an SDK worker died and the job endpoint or worker "
            "pool no longer answers, so the job was not run again; nothing is published"
        )
    return StageFailed(
        f"the Beam job failed on the {runner}: an SDK worker died ({_runs(attempt)}); nothing is "
        "published (check the worker pool's log: out of memory?)"
    )


def runner_error(runner: str, exc: BaseException) -> Exception | None:
    """A `StageFailed` in one line for a job a remote runner reports as failed (it raises a
    RuntimeError carrying the job's last error, e.g. "Channel closed prematurely." when the
    worker pool went away), without its text, which may quote data; None for local runners."""
    if runner in (
        "FnApiRunner",
        "DirectRunner",
        "BundleBasedDirectRunner",
        "SwitchingDirectRunner",
        "PrismRunner",
    ) or not isinstance(exc, RuntimeError):
        return None
    return StageFailed(
        f"the Beam job failed on the {runner}: a worker, the worker pool or a step failed; nothing is "
        "published (rerun with -v for the runner's messages)"
    )


# How long a portable job's job service and external worker pool may take to accept a
# connection before the job is refused in one line (Beam itself waits minutes, then raises a
# gRPC timeout): a bound on failure, not a knob of the data.


def new_pipeline(beam_params: Beam | None = None, extra_args: Iterable[str] = ()) -> beam.Pipeline:
    """A Pipeline on `pipeline_options`.

    For the local FnApiRunner in `multi_processing` mode, the runner is built with FnApiRunner's
    public constructor arguments: `default_environment`, worker processes that run
    `pipelines.jobs.worker` (Beam's worker, quiet), and `provision_info` carrying
    `--default_sdk_harness_log_level` (the local runner does not hand pipeline options to its
    workers, which would otherwise log at INFO). The options then say `in_memory`, since
    FnApiRunner replaces its environment with Beam's own worker command for `multi_processing`;
    `direct_num_workers` still sets the number of worker processes."""
    options = pipeline_options(beam_params, extra_args)
    direct = options.view_as(DirectOptions)
    # the run record's `runner` and `workers` (a refresh report's per-stage figures)
    record_run(runner=options.view_as(StandardOptions).runner, workers=workers_of(options))
    retries = (beam_params or Beam()).retries
    if (
        options.view_as(StandardOptions).runner != "FnApiRunner"
        or direct.direct_running_mode != "multi_processing"
        or any(str(a).split("=")[0] == "--environment_type" for a in extra_args)
    ):
        pipeline = _LivePipeline(options=options)
        pipeline.retries = retries
        return pipeline
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo, FnApiRunner
    from apache_beam.transforms.environments import SubprocessSDKEnvironment
    from google.protobuf import struct_pb2

    direct.direct_running_mode = "in_memory"
    level = struct_pb2.Struct()
    level.update(
        {"default_sdk_harness_log_level": options.get_all_options()["default_sdk_harness_log_level"]}
    )
    info = ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(retrieval_token="unused-retrieval-token", pipeline_options=level)
    )
    # workers die with this process (worker.py); its start time tells a reused pid apart
    os.environ["MEDSIMP_LAUNCHER_PID"] = f"{os.getpid()}:{psutil.Process().create_time()!r}"
    # -P: the worker's current folder is not on its path (`-m` would put it first), so a folder
    # named like one of our packages there cannot shadow it (worker.py checks the siblings too)
    workers = SubprocessSDKEnvironment.from_command_string(f"{sys.executable} -P -m pipelines.jobs.worker")
    pipeline = _LivePipeline(
        runner=FnApiRunner(default_environment=workers, provision_info=info), options=options
    )
    pipeline.retries = retries
    return pipeline


def trim_heap() -> None:
    """Give the C heap's free memory back to the OS (glibc `malloc_trim`; nothing elsewhere).

    A worker that embeds and aligns document after document frees what each document used,
    but glibc keeps the freed pages of its arenas, so resident memory creeps up with the number
    of documents (about 0.6 MB per review measured in one process; more in a Beam worker). A DoFn
    doing such work calls this after each element."""
    global _LIBC
    if _LIBC is None:
        import ctypes
        import ctypes.util

        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.malloc_trim  # noqa: B018 - glibc only
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


_LIBC: Any = None


def counters(result, namespace: str) -> dict[str, int] | None:
    """Committed Beam counter values of one namespace, by counter name; None when the runner
    gives no committed values (no metrics at all, or attempted values only, which a retried
    bundle counts twice): the caller then counts what was written instead."""
    import grpc
    from apache_beam.metrics.metric import MetricsFilter

    try:
        query = result.metrics().query(MetricsFilter().with_namespace(namespace))
    except (NotImplementedError, grpc.RpcError):  # a runner without metrics, or gone after the job
        return None
    items = list(query["counters"])
    if any(item.committed is None for item in items):
        return None
    out: dict[str, int] = {}
    for item in items:
        out[item.key.metric.name] = out.get(item.key.metric.name, 0) + int(item.committed)
    return out
