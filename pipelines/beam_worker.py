"""The local runner's worker processes, and a zygote that starts them warm.

`python -m medsimp.pipelines.beam_worker` is the command the local FnApiRunner runs for each
worker (medsimp.pipelines.beam_io): Beam's `sdk_worker_main` without its start-up chatter on
stderr ("apitools not found", "No semi_persistent_directory", "Logging handler created").
Beam's bigquery client logs through `logging.warning` at import time, which would install a
stderr handler (an implicit `basicConfig`); a NullHandler on the root logger prevents that.
Worker log records still reach the runner through Beam's logging service, where the CLI's
logging configuration decides what is shown.

Start-up. Importing Beam takes about 0.65 s, in the main process and again in every worker,
and the runner starts its workers only once the pipeline runs. So a command that will run
workers first enters `zygote()`: it binds a Unix socket and starts a process that imports the
worker's modules while the main process imports its own, then accepts on that socket. A worker
command that finds the socket (in $MEDSIMP_BEAM_ZYGOTE) sends its environment and waits; the
zygote forks a child, already warm, that runs the harness with that environment and reports
its exit status, which the command exits with. Without a zygote (or when none answers) the
command runs the harness itself. The zygote holds no gRPC channel or thread when it forks; it
leaves when the main process closes its stdin. Fork is POSIX: elsewhere workers start cold.

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
    """Whether a job with these params and `--beam-arg` flags starts local worker processes."""
    if any(str(a).split("=")[0] in _RUNNER_FLAGS for a in [*beam_args, *beam_params.get("options", [])]):
        return False
    _, workers, mode = local_mode(beam_params)
    return mode == "multi_processing" and workers > 1


def _quiet_import():
    logging.getLogger().addHandler(logging.NullHandler())
    from apache_beam.runners.worker import sdk_worker_main

    return sdk_worker_main


def _leave(code: int) -> None:
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@contextlib.contextmanager
def zygote(enabled: bool = True) -> Iterator[None]:
    """While inside, worker commands started from this process (which inherit its environment)
    are forked warm from a zygote. Does nothing when not `enabled`, without fork, or when a
    zygote is already set (a nested command)."""
    if not enabled or not hasattr(os, "fork") or os.environ.get(ZYGOTE_ENV):
        yield
        return
    import shutil
    import subprocess
    import tempfile

    folder = tempfile.mkdtemp(prefix="medsimp-beam-")
    address = os.path.join(folder, "zygote")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(address)
            listener.listen(64)  # workers that connect before the zygote is warm wait here
            proc = subprocess.Popen(
                [sys.executable, "-m", "medsimp.pipelines.beam_worker", "--zygote", str(listener.fileno())],
                stdin=subprocess.PIPE,
                pass_fds=[listener.fileno()],
            )
    except OSError:  # e.g. a temp path too long for a Unix socket: workers start cold
        shutil.rmtree(folder, ignore_errors=True)
        yield
        return
    os.environ[ZYGOTE_ENV] = address
    try:
        yield
    finally:
        os.environ.pop(ZYGOTE_ENV, None)
        assert proc.stdin is not None
        proc.stdin.close()  # the zygote leaves at end of input
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _serve(fd: int) -> None:
    """The zygote: import the worker's modules, then fork one warm worker per connection until
    stdin ends."""
    import selectors
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the workers and the main process
    sdk_worker_main = _quiet_import()  # Beam, pyarrow, gRPC: the rest of a job's imports is small
    listener = socket.socket(fileno=fd)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is not listener:  # stdin ended (or the main process wrote to it)
                _reap(block=True)  # so the workers' CPU time counts as the main process's
                _leave(0)
            conn, _ = listener.accept()
            try:
                request = json.loads(conn.makefile("rb").readline())
            except (OSError, ValueError):
                request = None
            if isinstance(request, dict) and os.fork() == 0:  # the child: a worker
                selector.close()
                listener.close()
                signal.signal(signal.SIGINT, signal.default_int_handler)
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)
                os.close(devnull)
                _work(sdk_worker_main, request, conn)
            conn.close()
            _reap(block=False)


def _reap(block: bool) -> None:
    """Collect ended workers (all of them when `block`)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, 0 if block else os.WNOHANG)[0]:
            pass


def _work(sdk_worker_main, request: dict, conn: socket.socket) -> None:
    """A forked worker: run the harness with the requesting command's environment and folder;
    tell the command "started", then the exit status."""
    code = 1
    try:
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        conn.sendall(b"started\n")
        sdk_worker_main.main([])
        code = 0
    except KeyboardInterrupt:  # Ctrl-C reaches every process; the main one says so
        code = 130
    except BaseException as exc:  # noqa: BLE001 - one line (no record text), and the status
        print(f"medsimp beam worker: the SDK harness failed ({type(exc).__name__})", file=sys.stderr)
    finally:
        with contextlib.suppress(OSError):
            conn.sendall(f"{code}\n".encode())
        _leave(code)


def _hand_over(address: str) -> int | None:
    """Ask the zygote at `address` to run this worker: its exit status, or None when no zygote
    took it (then this process runs the harness itself)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with sock:
        try:
            sock.connect(address)
            sock.sendall(json.dumps({"env": dict(os.environ), "cwd": os.getcwd()}).encode() + b"\n")
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
