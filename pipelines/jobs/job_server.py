"""medsimp's portable job server: Beam's Python job server, running as many SDK workers as a
job asks for.

`python -m pipelines.jobs.job_server --port=J` serves Beam's Job API like
`python -m apache_beam.runners.portability.local_job_service_main --port=J` (Beam's
`LocalJobServicer`, the same staging and artifact service). The difference is the number of SDK
workers per job. Beam's job runs each pipeline with `FnApiRunner().run_via_runner_api(...)`
(`local_job_service.BeamJob._invoke_runner`), which never reads a worker count: only
`FnApiRunner.run_pipeline`, the in-process path, sets it from `--direct_num_workers`. So every
job of Beam's job server asks its environment (an EXTERNAL worker pool, a process, Docker) for
ONE worker, whatever `--sdk_worker_parallelism` or `--direct_num_workers` say (measured: one
worker process per job on the pool). Here each job runs on `--sdk_worker_parallelism` workers
(Beam's portable option for "SDK worker processes per worker node"; 0 = this machine's CPU
count; medsimp's launcher sets it from `beam.num_workers`), and the FnApiRunner splits every
stage's bundle between them (its ParallelBundleManager, as in `multi_processing` mode).

A dead worker. Beam's FnApiRunner does not retry a bundle whose worker died, and worse, it may
not notice: a worker's control channel is read by a thread (`worker_handlers.ControlConnection`)
that ends with an error when the worker is killed, leaving the runner waiting forever for the
answer to the bundle it had sent (measured: an SDK worker SIGKILLed mid-job, the job still
RUNNING minutes later). Here the instructions a closed control channel still owes fail instead
(`fail_owed_instructions`), so the job FAILS at once and medsimp's launcher retries the whole job
(`beam.retries`, `pipelines.jobs.beam_io`). A worker can also die after the pool started it but
before it opened its control channel (its TCP connection may already be up): Beam then waits
forever for a channel that never comes, so instructions pushed to a worker that has not connected
within `--worker_connect_seconds` (default 120) fail the same way.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from apache_beam.options.pipeline_options import PipelineOptions, PortableOptions
from apache_beam.portability.api import beam_fn_api_pb2, beam_job_api_pb2
from apache_beam.runners.portability import local_job_service
from apache_beam.runners.portability.fn_api_runner import fn_runner, worker_handlers

from pipelines.jobs.pool import DEAD_WORKER, NO_WORKER

# How long a worker the pool was asked for may take to open its control channel (--worker_connect_seconds)
WORKER_CONNECT_SECONDS = 120.0


def sdk_workers(options: PipelineOptions) -> int:
    """The SDK workers a job asks for: `--sdk_worker_parallelism` (Beam's default 1; 0 = the
    CPU count). Beam declares the option without a type, so it arrives as text or a number."""
    value = options.view_as(PortableOptions).sdk_worker_parallelism
    try:
        count = int(float(value))
    except (TypeError, ValueError):
        count = 1
    return count if count > 0 else (os.cpu_count() or 1)


def fail_owed_instructions(connect_seconds: float = WORKER_CONNECT_SECONDS) -> None:
    """Make a worker's control channel fail what it still owes when it closes, or when the worker
    has not opened it `connect_seconds` after the first instruction was pushed (once per
    process): Beam's reader thread of the channel (`ControlConnection._read`) only hands out
    answers, so a worker that dies mid-bundle leaves the bundle's future unanswered forever, and
    one that dies before it connects leaves every instruction queued for it unanswered."""
    connection = worker_handlers.ControlConnection
    if getattr(connection, "_medsimp_fails_owed", False):
        return
    missing = [name for name in ("_read", "push") if not callable(getattr(connection, name, None))]
    # the state the patch reads: whether the worker's stream arrived, and what it still owes
    missing += [name for name in ("_input", "_futures_by_id") if not hasattr(connection(), name)]
    if missing:  # another Beam than the one this was written for: refuse rather than hang again
        raise SystemExit(
            f"medsimp job server: this Beam's ControlConnection has no {', '.join(missing)}; "
            "use Beam's own job server (one SDK worker per job, no dead-worker detection)"
        )
    read, push = connection._read, connection.push

    def _fail(self, reason: str) -> None:
        if not getattr(self, "_medsimp_closed", False):
            setattr(self, "_medsimp_reason", reason)  # noqa: B010 - the first reason stands
        self._medsimp_closed = True  # before the answers: a push from now on fails at once
        # asked and never answered: the worker is gone (a copy: pushes may add meanwhile)
        for future in list(self._futures_by_id.values()):
            _answer_failed(future, self._medsimp_reason)

    def _unconnected(self) -> None:
        with connection._lock:  # the lock `set_input` holds while the worker's stream arrives
            if self._input is not None or getattr(self, "_medsimp_closed", False):
                return
            logging.getLogger(__name__).warning(
                "an SDK worker did not open its control channel within %g s", connect_seconds
            )
            _fail(self, NO_WORKER)

    def _read(self) -> None:
        try:
            read(self)
        except Exception as exc:  # the stream broke: the worker was killed or lost its network
            logging.getLogger(__name__).warning(
                "an SDK worker's control channel broke (%s)", type(exc).__name__
            )
        finally:
            _fail(self, DEAD_WORKER)

    def _push(self, req):
        future = push(self, req)
        if future is None:  # the end-of-stream marker
            return future
        if getattr(self, "_medsimp_closed", False):
            _answer_failed(future, getattr(self, "_medsimp_reason", DEAD_WORKER))
        elif self._input is None and not hasattr(self, "_medsimp_deadline"):
            deadline = threading.Timer(connect_seconds, _unconnected, args=(self,))
            deadline.daemon = True
            setattr(self, "_medsimp_deadline", deadline)  # noqa: B010
            deadline.start()
        return future

    setattr(connection, "_read", _read)  # noqa: B010 - Beam's class, patched in this process only
    setattr(connection, "push", _push)  # noqa: B010
    setattr(connection, "_medsimp_fails_owed", True)  # noqa: B010


def _answer_failed(future, reason: str) -> None:
    """Answer an instruction as a worker answers one that failed (an `InstructionResponse` with an
    error), not with `ControlFuture.abort`: the runner's wait for a bundle's output data ends only
    on an answer with an error (or on its data channel closing, which a worker that never
    connected never opens), and then it fails the job with `reason`."""
    future.set(beam_fn_api_pb2.InstructionResponse(instruction_id=future.instruction_id, error=reason))


class ParallelBeamJob(local_job_service.BeamJob):
    """Beam's job, run on the number of SDK workers the job's options ask for."""

    def _invoke_runner(self):
        self.set_state(beam_job_api_pb2.JobState.RUNNING)
        options = self.pipeline_options()
        runner = fn_runner.FnApiRunner(provision_info=self._provision_info)
        # what FnApiRunner.run_pipeline does with --direct_num_workers; run_via_runner_api,
        # the job-service path, has no argument for it
        if not hasattr(runner, "_num_workers"):
            raise RuntimeError("this Beam's FnApiRunner has no worker count (medsimp's job server needs one)")
        runner._num_workers = sdk_workers(options)
        return runner.run_via_runner_api(self._pipeline_proto, options)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pipelines.jobs.job_server", description=__doc__)
    parser.add_argument("-p", "--port", "--job_port", type=int, default=0, help="port of the Job API")
    parser.add_argument("--staging_dir", help="where staged artifacts go (default: a temporary folder)")
    parser.add_argument(
        "--worker_connect_seconds",
        type=float,
        default=WORKER_CONNECT_SECONDS,
        help="fail a job whose SDK worker has not connected this long after its first instruction "
        "(default %(default)g; it died or could not start)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    # Beam logs its SDK workers' log entries here (worker_handlers.BasicLoggingService), which can
    # quote a document in a DoFn's traceback: MIMIC-derived text never reaches a log, so only
    # this server's own records are kept (as the launcher keeps only its own: beam_io._not_beam)
    for handler in logging.getLogger().handlers:
        handler.addFilter(lambda record: f"{os.sep}apache_beam{os.sep}" not in record.pathname)
    fail_owed_instructions(args.worker_connect_seconds)
    servicer = local_job_service.LocalJobServicer(args.staging_dir, beam_job_type=ParallelBeamJob)
    port = servicer.start_grpc_server(args.port)
    logging.getLogger(__name__).info("medsimp job server listening on port %d", port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        servicer.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
