"""The local runner's worker command: Beam's SDK worker without its start-up chatter.

`python -m pipelines.jobs.worker` runs `apache_beam.runners.worker.sdk_worker_main` for each
worker process of the local FnApiRunner (`beam_io.new_pipeline` hands it to FnApiRunner as its
`default_environment`). Beam's bigquery client logs through `logging.warning` at import time,
which would install a stderr handler on the root logger (an implicit `basicConfig`) and then
print "apitools not found", "Logging handler created" and "No semi_persistent_directory" on
every run; a NullHandler on the root logger prevents that. Worker log records still reach the
runner through Beam's logging service, where the CLI's logging configuration decides what is shown.

Beam's worker also prints the traceback of a failed bundle on its own stderr before sending it to
the runner in its response, where the stage fails with one line (and the traceback with `-v`).
Unless the command runs with `-v` (the CLI sets MEDSIMP_WORKER_STDERR=quiet otherwise, and
workers inherit the environment), the worker's Python-level stderr goes to os.devnull.

A worker dies with the command that started it: a watcher thread ends the process once its
parent is gone (a SIGKILLed `medsimp` cannot stop its workers, which would otherwise run on,
holding their models, until Beam's control channel times out). The launcher's pid comes in
MEDSIMP_LAUNCHER_PID (`beam_io.new_pipeline` sets it: pid and start time), so a parent that died before the worker
started is seen too; the runner starts workers through a shell, so the launcher is watched by
pid (psutil, which also tells a reused pid apart), not as the parent. The kernel's
PR_SET_PDEATHSIG is not used: it names the parent (the shell) and fires when the parent *thread*
that spawned the worker ends.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

from medsimp import siblings

# How often a worker checks that the command that started it is alive (seconds).
PARENT_POLL = 0.5


def _alive(process) -> bool:
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def watch_parent(
    launcher: int | None, poll: float = PARENT_POLL, started: float | None = None
) -> threading.Thread:
    """Start a daemon thread that ends this process (exit 1, no clean-up: the launcher that
    would read its results is gone) once `launcher` has died (psutil: a zombie counts as dead;
    `started`, the launcher's create time, tells a reused pid apart), or, with no launcher
    named, once this process's parent changes. The runner starts workers through a shell, so
    the launcher need not be the parent."""
    import psutil

    parent = os.getppid()
    try:
        process = psutil.Process(launcher) if launcher is not None else None
        if process is not None and started is not None and process.create_time() != started:
            raise psutil.NoSuchProcess(launcher)  # the pid is another process's now
    except psutil.Error:
        os._exit(1)  # the launcher died before this worker started

    def watch() -> None:
        while _alive(process) if process is not None else os.getppid() == parent:
            time.sleep(poll)
        os._exit(1)

    thread = threading.Thread(target=watch, name="medsimp-parent-watch", daemon=True)
    thread.start()
    return thread


def main(argv: list[str]) -> None:
    pid, _, started = os.environ.get("MEDSIMP_LAUNCHER_PID", "").partition(":")
    try:
        watch_parent(int(pid), started=float(started)) if pid else watch_parent(None)
    except ValueError:  # not ours: watch the parent
        watch_parent(None)
    clash = siblings.check()  # the same packages as the command that started it, or none
    if clash:
        print(f"medsimp worker: {clash}", file=sys.__stderr__)
        os._exit(2)
    logging.getLogger().addHandler(logging.NullHandler())
    if os.environ.get("MEDSIMP_WORKER_STDERR") == "quiet":
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the process's lifetime)
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(argv)


if __name__ == "__main__":
    main(sys.argv)
