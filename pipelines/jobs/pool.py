"""A Beam job's services and workers: the portable job service and external worker pool checked
before the job (`check_endpoints`) and watched while it runs (`wait_watching_pool`), the local
runner's worker processes watched and stopped (`watch_workers`, `stop_workers`), and their
failures said in one line (`service_error`, `write_error`); which failures are a dead worker, which
the launcher retries (`worker_lost`, `WorkerLost`)."""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psutil
from apache_beam.options.pipeline_options import PipelineOptions, PortableOptions, StandardOptions

from medsimp.errors import StageFailed, UsageError

ENDPOINT_SECONDS = 30

# What medsimp's job server (pipelines.jobs.job_server) fails a bundle with when its SDK worker's
# control channel closed before answering; Beam's data plane says "Channel closed prematurely."
# when a worker's data channel closes the same way. Either, in a portable job's error, is a
# dead worker (or a dead pool, which `services_answer` tells apart), never a step's own error.
DEAD_WORKER = "an SDK worker's control channel closed before it answered (the worker died)"
# ... and what it fails them with when the worker it asked the pool for never opened its control
# channel (it died, or could not start, before it connected)
NO_WORKER = "an SDK worker never opened its control channel (it died or could not start)"
_WORKER_GONE = (DEAD_WORKER, NO_WORKER, "Channel closed prematurely")


class WorkerLost(StageFailed):
    """A local worker process died under the job (killed, out of memory, crashed)."""


def worker_lost(exc: BaseException) -> bool:
    """Whether a failed job failed because an SDK worker died: a local worker process
    (`WorkerLost`, from `watch_workers`) or a portable job's worker (the job's error says so).
    A step that raised is not: running it again would raise again."""
    if isinstance(exc, WorkerLost):
        return True
    if isinstance(exc, StageFailed) or not isinstance(exc, RuntimeError):
        return False  # medsimp's own failures (a pool that stopped answering) are final
    text = str(exc)
    return any(sign in text for sign in _WORKER_GONE)


# How long `services_answer` waits for each service before a retry: a pool that is gone, not
# one worker, fails the job for good instead of being retried.
RETRY_PROBE_SECONDS = 5.0


def services_answer(endpoints: list[tuple[str, str]]) -> bool:
    """Whether every service of a portable job (job endpoint, external worker pool) still accepts
    a connection within RETRY_PROBE_SECONDS."""
    return all(_answers(address, RETRY_PROBE_SECONDS) for _, address in endpoints)


def endpoints_of(options: PipelineOptions) -> list[tuple[str, str]]:
    """(what, host:port) of the services a PortableRunner job connects to: the job endpoint
    (unless Beam embeds it) and an EXTERNAL worker pool, found where Beam's ExternalEnvironment
    looks: `--environment_config` as an address or as JSON `{"url": ...}`, else
    `--environment_options=external_service_address=...`.

    Only the PortableRunner's services are probed. A Flink or Spark runner's worker pool address
    is what its task managers dial (often a sidecar at localhost:50000 on each of them), which the
    launcher cannot reach, so probing it from here would refuse good jobs."""
    from apache_beam.transforms.environments import looks_like_json

    portable = options.view_as(PortableOptions)
    if options.view_as(StandardOptions).runner not in ("PortableRunner", "portable"):
        return []
    found = []
    if portable.job_endpoint and portable.job_endpoint != "embed":
        found.append(("job endpoint", portable.job_endpoint))
    if (portable.environment_type or "").upper() == "EXTERNAL":
        config = portable.environment_config or ""
        if looks_like_json(config):
            try:
                address = json.loads(config).get("url")
            except (ValueError, AttributeError):
                address = None  # Beam itself refuses it when the job starts
        else:
            address = config or portable.lookup_environment_option("external_service_address")
        if isinstance(address, str) and address:
            found.append(("external worker pool", address))
    return found


def check_endpoints(endpoints: list[tuple[str, str]]) -> None:
    """One line (exit 2) when a portable job's job endpoint or external worker pool does not
    accept a connection within ENDPOINT_SECONDS, before the job is submitted."""

    for what, address in endpoints:
        if not _answers(address):
            raise UsageError(
                f"the {what} {address} did not answer within {ENDPOINT_SECONDS} s: start it, or fix "
                "--job_endpoint / --environment_config"
            )


# How often a running portable job checks that its external worker pool still accepts
# connections, and how long the launcher waits for the job to end once it has asked the job
# service to cancel it (Beam's cancel may fail, or leave the job waiting).
POOL_POLL_SECONDS = 2.0
POOL_GRACE_SECONDS = 10.0


def wait_watching_pool(result: Any, endpoints: list[tuple[str, str]], runner: str) -> None:
    """`result.wait_until_finish()`, bounded for a portable job on an EXTERNAL worker pool.

    Without a bound, a pool that dies after the job was submitted but before its worker reached
    the job server leaves the job waiting forever. So a thread checks every POOL_POLL_SECONDS that
    the pool accepts a connection; when it has not for ENDPOINT_SECONDS, medsimp asks the job
    service to cancel the job and stops waiting after POOL_GRACE_SECONDS more, with one line
    (`StageFailed`). A job that finishes successfully is a success even if its pool went away."""
    pools = [address for what, address in endpoints if what == "external worker pool"]
    if not pools:
        result.wait_until_finish()
        return
    gone: list[str] = []
    errors: list[BaseException] = []
    finished = threading.Event()

    def wait() -> None:
        try:
            result.wait_until_finish()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread below
            errors.append(exc)
        finally:
            finished.set()

    def watch() -> None:
        while not finished.wait(POOL_POLL_SECONDS):
            for address in pools:
                if not _answers(address) and not finished.is_set():
                    gone.append(address)
                    threading.Thread(
                        target=_cancel, args=(result,), name="medsimp-cancel", daemon=True
                    ).start()
                    return

    for target, name in ((wait, "medsimp-wait"), (watch, "medsimp-watch-pool")):
        threading.Thread(target=target, name=name, daemon=True).start()
    gone_at = None
    while not finished.wait(1.0):
        if gone and gone_at is None:
            gone_at = time.monotonic()
        if gone_at is not None and time.monotonic() - gone_at > POOL_GRACE_SECONDS:
            break  # the cancel did not end the job: stop waiting for it
    if finished.is_set() and not errors:
        return
    if gone:
        raise _pool_gone(runner, gone[0])
    raise errors[0]


def _answers(address: str, seconds: float | None = None) -> bool:
    """Whether a gRPC server at `address` accepts a connection within `seconds` (by default
    ENDPOINT_SECONDS, read at the call)."""
    import grpc

    channel = grpc.insecure_channel(address)
    try:
        grpc.channel_ready_future(channel).result(timeout=ENDPOINT_SECONDS if seconds is None else seconds)
        return True
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()


def _cancel(result: Any) -> None:
    try:
        result.cancel()
    except Exception:  # noqa: BLE001 - the job service may be gone too; the launcher stops anyway
        pass


def _pool_gone(runner: str, address: str) -> Exception:
    return StageFailed(
        f"the Beam job failed on the {runner}: the external worker pool {address} stopped answering "
        f"(no connection for {ENDPOINT_SECONDS} s); medsimp asked the job service to cancel the job "
        "and published nothing"
    )


def service_error(exc: BaseException) -> Exception | None:
    """A `StageFailed` in one line for a portable job whose job service or workers stopped
    answering (a gRPC error or timeout), None for any other failure."""
    import grpc

    chain: BaseException | None = exc
    while chain is not None:
        if isinstance(chain, grpc.RpcError | grpc.FutureTimeoutError):
            code = chain.code().name if isinstance(chain, grpc.Call) else "timeout"
            return StageFailed(
                f"the Beam job service or its workers stopped answering ({code}); nothing is published "
                "(check the job server's and the worker pool's logs)"
            )
        chain = chain.__cause__ or chain.__context__
    return None


# Faults of the place a job writes to, which the user fixes (exit 2), not bugs of the job.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
_WORKER_OSERROR = re.compile(
    r"\b(?:OSError|IOError): \[Errno (\d+)\][^\[\n]*(?:\[while running '([^'\n]+)'\])?"
)


def write_error(exc: BaseException) -> Exception | None:
    """A `UsageError` for a job that failed because its output's filesystem refused a write
    (full disk, quota, file size limit, read-only), which a worker reports as text in a
    RuntimeError; None for any other failure."""

    code, step = None, ""
    chain: BaseException | None = exc
    while chain is not None and code is None:
        if isinstance(chain, OSError) and chain.errno in _WRITE_ERRNOS:
            code = chain.errno
        chain = chain.__cause__ or chain.__context__
    if code is None:
        for match in _WORKER_OSERROR.finditer(str(exc)):
            if int(match.group(1)) in _WRITE_ERRNOS:
                code, step = int(match.group(1)), match.group(2) or ""
                break
    if code is None:
        return None
    where = f" (in step {step})" if step else ""
    return UsageError(
        f"the job could not write its output: {os.strerror(code)} [{errno.errorcode[code]}]{where}; "
        "free space or pick another --output"
    )


# How a local worker process's command line names its main module (ours, or Beam's own).
_WORKER_MAINS = ("pipelines.jobs.worker", "apache_beam.runners.worker.sdk_worker_main")


def _worker_processes() -> list:
    """The local runner's SDK worker processes below this one (the `sh -c` and its Python)."""

    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if any(main in part for part in proc.cmdline() for main in _WORKER_MAINS):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def stop_workers(timeout: float = 10.0) -> None:
    """Kill the local runner's worker processes and wait for Beam's threads that watch them."""

    procs = _worker_processes()
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(procs, timeout=timeout)
    for thread in threading.enumerate():
        if thread.name == "run_worker" and thread is not threading.current_thread():
            thread.join(timeout)


def _worker_death(message: str) -> str:
    """ "killed by SIGKILL" from Beam's "Worker subprocess exited with return code 137" (the
    worker runs under `sh -c`, which reports a signal as 128 + N)."""
    code = message.rsplit(" ", 1)[-1]
    if not code.lstrip("-").isdigit():
        return "exited"
    number = int(code)
    signum = -number if number < 0 else number - 128 if number > 128 else 0
    if signum:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return f"was killed by {name}" + (" (out of memory?)" if signum == signal.SIGKILL else "")
    return f"exited with status {number}"


@contextmanager
def watch_workers() -> Iterator[None]:
    """Fail the run, in one line, when a local worker process dies (an OOM kill, a crash:
    `WorkerLost`, which the launcher may retry), and let SIGTERM and Ctrl-C end it.

    Beam's FnApiRunner notices a dead worker only in the thread that started it, which raises
    and ends while the main thread waits for the worker's results forever; and on any exception
    its clean-up joins the threads of the live workers, which never end (so SIGTERM hung too).
    Here the dead worker's thread wakes the main thread (SIGUSR1); that, SIGTERM and SIGINT first
    kill every worker (so Beam's clean-up finds them gone), then raise: `WorkerLost`, or what
    the previous handler raises (the CLI's SystemExit(143), KeyboardInterrupt). Thread errors
    and Beam's error logs after that are echoes of the stop and are not shown. Signals reach
    only the main thread: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    died: list[str] = []
    main_ident = threading.main_thread().ident
    old_hook = threading.excepthook
    lock, stopping = threading.Lock(), threading.Event()
    logging_disabled = logging.root.manager.disable

    def hook(args) -> None:
        if (
            args.thread is not None
            and args.thread.name == "run_worker"
            and isinstance(args.exc_value, RuntimeError)
        ):
            with lock:  # one wake-up, and none once the run is being stopped
                if not died and not stopping.is_set() and main_ident is not None:
                    died.append(_worker_death(str(args.exc_value)))
                    signal.pthread_kill(main_ident, signal.SIGUSR1)
            return
        if died or stopping.is_set() or type(args.exc_value).__module__.startswith("grpc"):
            return  # a dead worker's echoes: its connections fail in Beam's threads
        old_hook(args)

    def stop() -> None:
        with lock:
            stopping.set()
        logging.disable(logging.CRITICAL)  # Beam logs its teardown of the workers as errors
        stop_workers()

    def on_death(signum, frame) -> None:
        if died:
            stop()
            raise WorkerLost(f"a Beam worker process {died[0]}; the stage stopped and wrote no output")

    def stop_then(previous):
        def handler(signum, frame) -> None:
            stop()
            if callable(previous):
                previous(signum, frame)
            else:  # SIG_DFL: die of the signal, as without this handler
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        return handler

    handlers = {signal.SIGUSR1: on_death}
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)
        if previous not in (signal.SIG_IGN, None):
            handlers[signum] = stop_then(previous)
    old_handlers = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    threading.excepthook = hook
    try:
        yield
    except BaseException:
        stop()
        raise
    finally:
        with lock:
            stopping.set()
        threading.excepthook = old_hook
        for signum, handler in old_handlers.items():
            signal.signal(signum, handler)
        logging.disable(logging_disabled)
