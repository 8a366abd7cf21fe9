"""Every runnable block of README.md and docs/*.md runs, in order, against the sample after `dvc repro`."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from docs_blocks import all_blocks

pytestmark = pytest.mark.slow  # needs the reproduced sample (shared with test_repro_clean)

RUNNABLE = [b for b in all_blocks() if b.runnable]


@pytest.fixture(scope="module")
def workdir(reproduced_clone, tmp_path_factory):
    """A copy of the reproduced clone, so blocks can write without touching the clean-status check."""
    clone, env = reproduced_clone
    copy = tmp_path_factory.mktemp("docs") / "repo"
    shutil.copytree(clone, copy, symlinks=True)
    return copy, {**env, "PYTHONPATH": str(copy)}


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_runnable_block_runs(block, workdir):
    cwd, env = workdir
    if block.lang == "python":
        cmd = [sys.executable, "-c", block.text]
    else:
        cmd = ["bash", "-euo", "pipefail", "-c", block.text]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, (
        f"{block.where} -> {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    )
