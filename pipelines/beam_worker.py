"""The local runner's worker processes, and a zygote that starts them warm.

`python -m medsimp.pipelines.beam_worker` is the command the local FnApiRunner runs for each
worker (medsimp.pipelines.beam_io): Beam's `sdk_worker_main` without its start-up chatter on
stderr ("apitools not found", "No semi_persistent_directory", "Logging handler created").
Beam's bigquery client logs through `logging.warning` at import time, which would install a
stderr handler (an implicit `basicConfig`); a NullHandler on the root logger prevents that.
Worker log records still reach the runner through Beam's logging service, where the CLI's
logging configuration decides what is shown.

Start-up. Importing Beam takes about 0.65 s, in the main process and again in every worker,
and the runner starts its workers only once the pipeline runs. So a Beam command that will run
local workers first enters `zygote()` (medsimp.cli_args.warm_beam_workers): it binds a Unix
socket and starts a process that imports the worker's modules while the main process imports
its own, then accepts on that socket. A worker command that finds the socket (in
$MEDSIMP_BEAM_ZYGOTE) sends its environment, folder and standard streams and waits; the zygote
forks a child, already warm, that runs the harness with them and reports its exit status, which
the command exits with. Without a zygote (or when none takes the request) the command runs the harness itself.
The zygote has opened no gRPC channel or server when it forks (the threads that numpy's
OpenBLAS and pyarrow's jemalloc start at import are fork-safe); the main process ends it when
the command is done, and it ends itself (removing its socket) if the main process dies. Fork
is POSIX: elsewhere workers start cold.

Once the harness returns (the runner closed its control stream: every bundle, teardown and log
record is done), a worker leaves through `os._exit`: the runner closes its workers one after
the other, waiting for each process to end, and the interpreter's own teardown (idle thread
pools, gRPC) took about 0.2 s per worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence

ZYGOTE_ENV = "MEDSIMP_BEAM_ZYGOTE"
LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner")
QUIET_RUNNER = "FnApiRunner"  # the runner whose worker command is this module (beam_io)
# --beam-arg flags that may change where workers run: with any of them, no zygote.
_RUNNER_FLAGS = ("--runner", "--direct_running_mode", "--direct_num_workers", "--environment_type")


def local_mode(beam_params: Mapping) -> tuple[str, int, str]:
    """(runner, worker count, running mode) that the `beam` params section asks for; the
    mode is "" for a runner other than the local one."""
    runner = beam_params.get("runner", LOCAL_RUNNERS[0])
    if runner not in LOCAL_RUNNERS:
        return runner, 0, ""
    workers = int(beam_params.get("num_workers", 2))
    mode = beam_params.get("running_mode") or ("multi_processing" if workers > 1 else "in_memory")
    return runner, workers, mode


def runs_worker_processes(beam_params: Mapping, beam_args: Sequence[str]) -> bool:
    """Whether a job with these params and `--beam-arg` flags starts worker processes through
    this module (the local FnApiRunner on more than one process)."""
    if any(str(a).split("=")[0] in _RUNNER_FLAGS for a in [*beam_args, *beam_params.get("options", [])]):
        return False
    runner, workers, mode = local_mode(beam_params)
    return runner == QUIET_RUNNER and mode == "multi_processing" and workers > 1


def _quiet_import():
    logging.getLogger().addHandler(logging.NullHandler())
    from apache_beam.runners.worker import sdk_worker_main

    return sdk_worker_main


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()


def _leave(code: int) -> None:
    logging.shutdown()
    _flush()
    os._exit(code)


@contextlib.contextmanager
def zygote(beam_params: Mapping | None = None, beam_args: Sequence[str] = ()) -> Iterator[None]:
    """While inside, worker commands started from this process (which inherit its environment)
    are forked warm from a zygote, when a job with these `beam` params and `--beam-arg` flags
    runs local worker processes. Does nothing otherwise, without fork, or when a zygote is
    already set (a nested command)."""
    if (
        not runs_worker_processes(beam_params or {}, beam_args)
        or not hasattr(os, "fork")
        or os.environ.get(ZYGOTE_ENV)
    ):
        yield
        return
    import shutil
    import subprocess
    import tempfile

    folder = ""
    try:
        folder = tempfile.mkdtemp(prefix="medsimp-beam-")
        address = os.path.join(folder, "zygote")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(address)
            listener.listen(64)  # workers that connect before the zygote is warm wait here
            proc = subprocess.Popen(
                [sys.executable, "-m", "medsimp.pipelines.beam_worker", "--zygote", str(listener.fileno())],
                stdin=subprocess.PIPE,
                pass_fds=[listener.fileno()],
            )
    except OSError:  # e.g. no temp folder, or its path too long for a socket: workers start cold
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        yield
        return
    os.environ[ZYGOTE_ENV] = address
    try:
        yield
    finally:
        os.environ.pop(ZYGOTE_ENV, None)
        proc.terminate()  # at once, even mid-import (its workers have ended with the pipeline)
        proc.wait()
        assert proc.stdin is not None
        proc.stdin.close()
        shutil.rmtree(folder, ignore_errors=True)


def _serve(fd: int) -> None:
    """The zygote: import the worker's modules, then fork one warm worker per connection until
    the main process ends it (or its stdin ends: the main process died)."""
    import selectors
    import signal

    # Ctrl-C reaches the workers and the main process; the workers get back what the command had.
    inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)
    sdk_worker_main = _quiet_import()  # Beam, pyarrow, gRPC: the rest of a job's imports is small
    # Reap each worker as it ends: its CPU time then counts as the main process's.
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    listener = socket.socket(fileno=fd)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is not listener:  # stdin ended: the main process died
                import shutil

                shutil.rmtree(os.path.dirname(listener.getsockname()), ignore_errors=True)
                _leave(0)
            conn, _ = listener.accept()
            request, stdio = _receive(conn)
            if request is not None and os.fork() == 0:  # the child: a worker
                selector.close()
                listener.close()
                signal.signal(signal.SIGINT, inherited)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for target, fd in enumerate(stdio):  # the command's stdin, stdout, stderr
                    os.dup2(fd, target)
                    os.close(fd)
                _work(sdk_worker_main, request, conn)
            for fd in stdio:
                os.close(fd)
            conn.close()


def _receive(conn: socket.socket) -> tuple[dict | None, list[int]]:
    """A worker command's request (environment and folder) and its stdin, stdout and stderr."""
    stdio: list[int] = []
    try:
        conn.settimeout(10)  # a connection that sends nothing must not hold up the others
        first, stdio, _, _ = socket.recv_fds(conn, 1, 3)
        request = json.loads(first + conn.makefile("rb").readline())
        conn.settimeout(None)
    except (OSError, ValueError):
        return None, stdio
    if len(stdio) != 3 or not isinstance(request, dict):
        return None, stdio
    return request, stdio


def _reap() -> None:
    """Collect the workers that have ended."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _work(sdk_worker_main, request: dict, conn: socket.socket) -> None:
    """A forked worker: take the requesting command's environment and folder, tell it "started",
    run the harness and report the exit status. A worker that cannot set up leaves without
    "started", and the command runs the harness itself."""
    try:
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        conn.sendall(b"started\n")
    except (OSError, KeyError, TypeError, ValueError):
        _leave(1)
    code = 1
    try:
        sdk_worker_main.main([])
        code = 0
    except KeyboardInterrupt:  # Ctrl-C reaches every process; the main one says so
        code = 130
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException as exc:  # noqa: BLE001 - one line (no record text), and the status
        print(f"medsimp beam worker: the SDK harness failed ({type(exc).__name__})", file=sys.stderr)
    finally:
        _flush()  # the worker's output comes before the command's exit
        with contextlib.suppress(OSError):
            conn.sendall(f"{code}\n".encode())
        _leave(code)


def _hand_over(address: str) -> int | None:
    """Ask the zygote at `address` to run this worker: its exit status, or None when no zygote
    took it (then this process runs the harness itself)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with sock:
        if sock.fileno() <= 2:  # a standard stream is closed: nothing to hand over
            return None
        try:
            sock.connect(address)
            request = json.dumps({"env": dict(os.environ), "cwd": os.getcwd()}).encode() + b"\n"
            socket.send_fds(sock, [request[:1]], [0, 1, 2])  # the worker's stdin, stdout, stderr
            sock.sendall(request[1:])
            replies = sock.makefile("rb")
            if replies.readline() != b"started\n":
                return None
        except OSError:
            return None
        status = replies.readline().strip()
    return int(status) if status.isdigit() else 1


def main(argv: list[str]) -> None:
    if argv[1:2] == ["--zygote"]:
        _serve(int(argv[2]))
    address = os.environ.pop(ZYGOTE_ENV, "")
    if address:
        try:
            code = _hand_over(address)
        except KeyboardInterrupt:
            code = 130
        if code is not None:
            _leave(code)
    _quiet_import().main(argv)
    _leave(0)


if __name__ == "__main__":
    main(sys.argv)
