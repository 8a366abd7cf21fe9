"""SIGTERM during METEOR ends `evaluate` and its JVM within seconds (issue 35 item 13: SystemExit
raised inside pycocoevalcap's locked section left the lock held and the 1-2 GB JVM alive)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = [pytest.mark.java, pytest.mark.slow]


def test_sigterm_during_meteor_ends_the_command_and_its_jvm(tmp_path):
    lines = [f"the patient number {i} was given antibiotics for a chest infection ." for i in range(3000)]
    for name in ("hyp", "ref"):
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["evaluate", "files", "--hyp", "hyp.txt", "--ref", "ref.txt", "--select", "meteor"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "medsimp.cli", *argv],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    parent = psutil.Process(proc.pid)
    jvm = None
    deadline = time.time() + 120
    while time.time() < deadline and jvm is None:
        jvm = next((c for c in parent.children(recursive=True) if "java" in c.name()), None)
        time.sleep(0.2)
    assert jvm is not None, "METEOR's JVM never started"
    time.sleep(3)  # inside the scoring call (the JVM loads its tables for ~15 s)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("evaluate did not end within 20 s of SIGTERM")
    gone, _ = psutil.wait_procs([jvm], timeout=10)
    assert gone, "the METEOR JVM outlived the command"
    assert proc.returncode != 0
