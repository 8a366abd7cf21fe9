"""Issue 55 section 3, the fast part: how many SDK workers a portable job asks for and gets, and
which failures are a dead worker that the launcher runs the job again for (`beam.retries`).
The real job server, pool and killed workers: tests/test_runners.py and tests/test_hangs.py."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_fn_api_pb2
from apache_beam.runners.portability.fn_api_runner import worker_handlers

from medsimp.errors import StageFailed
from medsimp.params_schema import Beam
from pipelines.jobs import job_server
from pipelines.jobs.beam_io import pipeline_options, workers_of
from pipelines.jobs.pool import DEAD_WORKER, NO_WORKER, WorkerLost, worker_lost

PORTABLE = ["--runner=PortableRunner", "--job_endpoint=localhost:1", "--environment_type=EXTERNAL"]


def test_num_workers_is_the_portable_runners_sdk_worker_parallelism():
    options = pipeline_options(Beam(num_workers=3), PORTABLE)
    assert options.get_all_options()["sdk_worker_parallelism"] == "3"
    assert workers_of(options) == 3
    assert job_server.sdk_workers(options) == 3  # what medsimp's job server runs


def test_an_explicit_sdk_worker_parallelism_wins():
    for given in (["--sdk_worker_parallelism=5"], []):
        options = pipeline_options(
            Beam(num_workers=3, options=given), [*PORTABLE, "--sdk_worker_parallelism=4"]
        )
        assert job_server.sdk_workers(options) == 4


def test_the_local_runner_keeps_its_own_worker_count():
    options = pipeline_options(Beam(num_workers=3))
    assert workers_of(options) == 3
    assert "--sdk_worker_parallelism" not in " ".join(options.get_all_options(drop_default=True))


@pytest.mark.parametrize(("value", "workers"), [("2", 2), (2, 2), (2.0, 2), ("x", 1), (None, 1)])
def test_the_job_servers_worker_count(value, workers):
    options = PipelineOptions([])
    options.view_as(job_server.PortableOptions).sdk_worker_parallelism = value
    assert job_server.sdk_workers(options) == workers


def test_zero_workers_is_the_cpu_count():
    import os

    assert job_server.sdk_workers(PipelineOptions(["--sdk_worker_parallelism=0"])) == (os.cpu_count() or 1)


@pytest.mark.parametrize(
    ("exc", "lost"),
    [
        (WorkerLost("a Beam worker process was killed by SIGKILL"), True),
        (RuntimeError(f"Pipeline x failed in state FAILED: RuntimeError: {DEAD_WORKER}"), True),
        (RuntimeError("Pipeline x failed in state FAILED: RuntimeError: Channel closed prematurely."), True),
        (RuntimeError(f"Pipeline x failed in state FAILED: RuntimeError: {NO_WORKER}"), True),
        # a step's own error: a second run would raise it again
        (
            RuntimeError("Pipeline x failed in state FAILED: ValueError: bad row [while running 'Parse']"),
            False,
        ),
        # medsimp's own verdicts (a pool that stopped answering) are final
        (StageFailed("the external worker pool localhost:1 stopped answering"), False),
        (KeyError("x"), False),
    ],
)
def test_which_failures_are_a_dead_worker(exc, lost):
    assert worker_lost(exc) is lost


def _patched(monkeypatch, connect_seconds: float = job_server.WORKER_CONNECT_SECONDS) -> Any:
    """Beam's ControlConnection with the job server's patch (restored after the test)."""
    connection_cls = worker_handlers.ControlConnection
    for name in ("_read", "push"):
        monkeypatch.setattr(connection_cls, name, getattr(connection_cls, name))
    monkeypatch.setattr(connection_cls, "_medsimp_fails_owed", False, raising=False)
    job_server.fail_owed_instructions(connect_seconds)
    return connection_cls


def _owed(monkeypatch, answers) -> tuple[Any, Any]:
    """A control connection with one instruction sent, whose worker's stream yields `answers`."""
    connection = _patched(monkeypatch)()
    future = connection.push(beam_fn_api_pb2.InstructionRequest(instruction_id="bundle-1"))
    connection.set_input(answers())
    connection._read_thread.join(timeout=10)
    return future, connection


def test_a_worker_that_dies_mid_bundle_fails_the_bundle(monkeypatch):
    """Beam's reader of a worker's control channel ends with the stream's error, and the bundle
    it owes waits forever (on medsimp's job server: the bundle is answered as failed, as a worker
    answers a failed instruction, so the job fails and is retried)."""

    def dead():
        raise RuntimeError("Socket closed")  # what gRPC's stream raises when the worker is killed
        yield  # pragma: no cover

    future, connection = _owed(monkeypatch, dead)
    assert future.is_done()  # what the runner's wait for the bundle's output data checks
    assert future.get(timeout=5).error == DEAD_WORKER
    later = connection.push(beam_fn_api_pb2.InstructionRequest(instruction_id="bundle-2"))
    assert later.get(timeout=5).error == DEAD_WORKER  # sent after the close: fails too


def test_a_worker_that_never_connects_fails_what_was_sent_to_it(monkeypatch):
    """The pool started the worker, which died before it opened its control channel: Beam waits
    for it forever; the job server answers its instructions as failed after the deadline."""
    connection = _patched(monkeypatch, connect_seconds=0.2)()
    future = connection.push(beam_fn_api_pb2.InstructionRequest(instruction_id="register"))
    assert future.get(timeout=10).error == NO_WORKER
    later = connection.push(beam_fn_api_pb2.InstructionRequest(instruction_id="bundle-1"))
    assert later.get(timeout=5).error == NO_WORKER


def test_a_worker_that_connects_in_time_is_untouched(monkeypatch):
    connection = _patched(monkeypatch, connect_seconds=0.5)()
    future = connection.push(beam_fn_api_pb2.InstructionRequest(instruction_id="bundle-1"))
    release = threading.Event()

    def answers():
        release.wait(5)  # answered after the deadline passed: the worker had connected in time
        yield beam_fn_api_pb2.InstructionResponse(instruction_id="bundle-1")

    connection.set_input(answers())
    time.sleep(1.0)
    release.set()
    assert future.get(timeout=5).error == ""
    connection._read_thread.join(timeout=10)


def test_an_answered_instruction_is_untouched(monkeypatch):
    def answers():
        yield beam_fn_api_pb2.InstructionResponse(instruction_id="bundle-1")

    future, _ = _owed(monkeypatch, answers)
    assert future.get(timeout=5).instruction_id == "bundle-1"


def test_a_portable_job_may_run_longer_than_beams_job_server_timeout():
    """Beam's PortableRunner gives the job's state stream `--job_server_timeout` (300 s) as its
    deadline: a longer job failed with DEADLINE_EXCEEDED. medsimp passes a week unless given."""
    from pipelines.jobs.beam_io import JOB_STATE_SECONDS

    options = pipeline_options(Beam(), PORTABLE).get_all_options()
    assert options["job_server_timeout"] == JOB_STATE_SECONDS == 7 * 24 * 3600
    given = pipeline_options(Beam(), [*PORTABLE, "--job-server-timeout=60"]).get_all_options()
    assert given["job_server_timeout"] == 60
    assert pipeline_options(Beam()).get_all_options()["job_server_timeout"] == 300  # local: Beam's
