"""Beam workers die with the command that started them (issue 35 item 14: a SIGKILLed stage left
its workers running, ~400 MB for minutes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def test_a_worker_ends_when_its_parent_is_killed():  # no launcher named: the parent is watched
    grandchild = (
        "import os, time; from pipelines.jobs.worker import watch_parent; "
        "watch_parent(None, poll=0.1); time.sleep(120)"
    )
    child = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', {grandchild!r}]); "
        "print(p.pid, flush=True); time.sleep(120)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, env=env)
    worker = int(proc.stdout.readline())
    try:
        time.sleep(1.0)  # the worker runs while its parent lives
        assert not _gone(worker, 0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _gone(worker, 5.0), "the worker outlived its killed parent"
    finally:
        proc.kill()
        if not _gone(worker, 0):
            os.kill(worker, signal.SIGKILL)


def test_a_worker_whose_launcher_died_before_it_started_ends_at_once():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = (
        "import time; from pipelines.jobs.worker import watch_parent; watch_parent(999999999); time.sleep(30)"
    )
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=60, check=False)
    assert proc.returncode == 1 and time.monotonic() - start < 20  # not the 30 s sleep


def test_a_reused_pid_is_not_the_launcher():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # this test's own pid, but not its start time: another process now holds the launcher's pid
    code = (
        "import time; from pipelines.jobs.worker import watch_parent; "
        f"watch_parent({os.getpid()}, started=1.0); time.sleep(30)"
    )
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=60, check=False)
    assert proc.returncode == 1 and time.monotonic() - start < 20


@pytest.mark.slow
def test_a_sigkilled_beam_stage_leaves_no_worker_running(tmp_path):
    notes = tmp_path / "NOTEEVENTS.csv"
    medsimp = [sys.executable, "-m", "medsimp.cli"]
    subprocess.run([*medsimp, "synth", "notes", "--rows", "400000", "--output", str(notes)], check=True)
    stage = subprocess.Popen(
        [
            *medsimp,
            "--set",
            "beam.num_workers=2",
            "notes",
            "--input",
            str(notes),
            "--output",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(workers) < 2 and stage.poll() is None:
        workers = [
            p.pid
            for p in psutil.Process(stage.pid).children(recursive=True)  # the runner starts them via a shell
            if "pipelines.jobs.worker" in p.cmdline()  # the Python worker, not the shell around it
        ]
        time.sleep(0.2)
    assert len(workers) == 2, "the stage started no workers (or ended first)"
    stage.send_signal(signal.SIGKILL)
    stage.wait()
    assert all(_gone(pid, 5.0) for pid in workers), "a worker outlived its SIGKILLed stage"
