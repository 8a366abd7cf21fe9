"""What the benchmark scripts share: run one command and measure it as a process tree."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil


@dataclass
class Measured:
    wall_s: float
    cpu_s: float  # user + system of the command and every child it waited for
    peak_rss_mb: float  # resident memory summed over the live process tree, sampled every 0.1 s
    returncode: int
    stdout: str


def measure(
    cmd: list[str], cwd: str | Path | None = None, log: IO[bytes] | None = None, env: dict | None = None
) -> Measured:
    """Run `cmd`; stderr goes to `log` (or nowhere), stdout is returned unless `log` takes it."""
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=log if log is not None else subprocess.PIPE,
        stderr=log if log is not None else subprocess.DEVNULL,
        env=env,
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not done.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
            except psutil.Error:
                pass
            done.wait(0.1)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    watcher.join()
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    text = out.decode("utf-8", errors="replace") if out else ""
    return Measured(wall, cpu, peak / 2**20, proc.returncode, text)
