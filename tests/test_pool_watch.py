"""`pool.wait_watching_pool`: a portable job on an EXTERNAL worker pool that stops accepting
connections ends in bounded time with one line, whatever Beam's cancel does; a job that finishes
is a success even if its pool went away. A fake job result stands in for Beam's (the real
cluster cases are in tests/test_runners.py, slow)."""

from __future__ import annotations

import threading
import time

import pytest
from loopback import free_port

from medsimp.errors import StageFailed
from pipelines.jobs import pool
from pipelines.jobs.pool import endpoints_of


class FakeResult:
    """Beam's PortableRunner result, as far as the launcher uses it."""

    def __init__(self, ends_after: float | None = None, cancel_ends_it: bool = True, cancel_raises=False):
        self.ended = threading.Event()
        self.ends_after, self.cancel_ends_it, self.cancel_raises = ends_after, cancel_ends_it, cancel_raises
        self.cancelled = threading.Event()

    def wait_until_finish(self):
        if self.ends_after is not None and self.ended.wait(self.ends_after) is False:
            return "DONE"  # finished by itself
        self.ended.wait()
        raise RuntimeError("Pipeline job-1 failed in state CANCELLED: ")

    def cancel(self):
        self.cancelled.set()
        if self.cancel_raises:
            raise RuntimeError("UNIMPLEMENTED")
        if self.cancel_ends_it:
            self.ended.set()


@pytest.fixture(autouse=True)
def fast(monkeypatch):
    monkeypatch.setattr(pool, "POOL_POLL_SECONDS", 0.05)
    monkeypatch.setattr(pool, "ENDPOINT_SECONDS", 0.3)
    monkeypatch.setattr(pool, "POOL_GRACE_SECONDS", 1.0)


def _dead_pool() -> list[tuple[str, str]]:
    return [("job endpoint", "localhost:1"), ("external worker pool", f"localhost:{free_port()}")]


def test_a_pool_that_stops_answering_cancels_the_job_in_one_line():
    result = FakeResult()
    started = time.monotonic()
    with pytest.raises(StageFailed, match="external worker pool localhost:[0-9]+ stopped answering"):
        pool.wait_watching_pool(result, _dead_pool(), "PortableRunner")
    assert result.cancelled.is_set() and time.monotonic() - started < 5


@pytest.mark.slow  # over ~2 s: not in the fast loop
@pytest.mark.parametrize("cancel_raises", [True, False], ids=["cancel-fails", "cancel-ignored"])
def test_the_wait_is_bounded_when_the_cancel_does_not_end_the_job(cancel_raises):
    """Beam's local job server only marks a job cancelled; a cancel RPC can fail: either way the
    launcher stops waiting POOL_GRACE_SECONDS after asking."""
    result = FakeResult(cancel_ends_it=False, cancel_raises=cancel_raises)
    started = time.monotonic()
    with pytest.raises(StageFailed, match="stopped answering"):
        pool.wait_watching_pool(result, _dead_pool(), "PortableRunner")
    assert result.cancelled.is_set() and 1.0 < time.monotonic() - started < 6


def test_a_job_that_finishes_is_a_success_even_if_its_pool_went_away():
    result = FakeResult(ends_after=0.8, cancel_ends_it=False)  # Beam ignores a cancel of a finished job
    pool.wait_watching_pool(result, _dead_pool(), "PortableRunner")
    assert result.cancelled.is_set()  # the pool was seen gone while the job ran, and the job still counts


def test_a_live_pool_is_never_reported_gone():
    from concurrent import futures

    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("localhost:0")
    server.start()
    try:
        result = FakeResult(ends_after=1.0)
        pool.wait_watching_pool(result, [("external worker pool", f"localhost:{port}")], "PortableRunner")
        assert not result.cancelled.is_set()
    finally:
        server.stop(0)


def test_a_job_error_without_a_pool_problem_is_raised_as_it_is():
    class Failing(FakeResult):
        def wait_until_finish(self):
            raise RuntimeError("Pipeline job-1 failed in state FAILED: boom")

    with pytest.raises(RuntimeError, match="state FAILED"):
        pool.wait_watching_pool(Failing(), _dead_pool(), "PortableRunner")  # fails before a probe ends


@pytest.mark.parametrize(
    ("args", "pool"),
    [
        (["--environment_config=localhost:50000"], "localhost:50000"),
        (['--environment_config={"url": "localhost:50001", "params": {}}'], "localhost:50001"),
        (["--environment_options=external_service_address=localhost:50002"], "localhost:50002"),
        ([], None),  # no address: Beam refuses the job itself
    ],
)
def test_the_external_pool_is_found_wherever_beam_reads_it(args, pool):
    """`--environment_config` as an address or as Beam's JSON, or `--environment_options`'s
    external_service_address: the pool the launcher checks is the one Beam's workers use."""
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(
        ["--runner=PortableRunner", "--job_endpoint=localhost:8099", "--environment_type=EXTERNAL", *args]
    )
    expected = [("job endpoint", "localhost:8099")] + ([("external worker pool", pool)] if pool else [])
    assert endpoints_of(options) == expected


def test_a_flink_or_spark_pool_is_not_probed_from_the_launcher():
    """Their task managers dial the pool (often a sidecar at localhost on each of them)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    for runner in ("FlinkRunner", "SparkRunner"):
        options = PipelineOptions(
            [f"--runner={runner}", "--environment_type=EXTERNAL", "--environment_config=localhost:50000"]
        )
        assert endpoints_of(options) == []
