"""A fresh clone after `dvc repro` on the embedded sample, with cold DVC and medsimp caches: git
stays clean (the clone reproduces its own committed lock), a comment in code no stage runs leaves
every stage up to date, and every runnable block of README.md and docs/*.md runs, in order.

One module, so one pytest-xdist worker builds the clone once (`--dist loadfile`, pyproject.toml).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_ok
from docs_blocks import all_blocks

pytestmark = pytest.mark.slow  # runs the whole DAG on the embedded sample (minutes)

RUNNABLE = [b for b in all_blocks() if b.runnable]


@pytest.fixture(scope="module")
def reproduced_clone(tmp_path_factory):
    """A fresh `git clone` of HEAD after `dvc repro` with cold DVC and medsimp caches, and its env."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    base = tmp_path_factory.mktemp("repro")
    clone = base / "clone"
    env = {
        **os.environ,
        "PYTHONPATH": str(clone),
        "MEDSIMP_CACHE": str(base / "cache"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    run_ok(["git", "clone", "--quiet", str(ROOT), str(clone)], base, env)
    run_ok([sys.executable, "-m", "dvc", "repro"], clone, env)
    return clone, env


def test_fresh_clone_repro_leaves_git_status_clean(reproduced_clone):
    clone, env = reproduced_clone  # cold DVC cache, cold medsimp cache
    status = run_ok(["git", "status", "--porcelain"], clone, env)
    assert status == "", status + run_ok(["git", "diff", "--unified=4", "dvc.lock"], clone, env)[:6000]


def test_a_comment_in_the_annotator_page_leaves_every_stage_up_to_date(reproduced_clone) -> None:
    """dvc.yaml's code deps are each stage's import closure (tests/test_dvc_deps.py): a change
    reruns the stages that run the changed code and no others."""
    clone, env = reproduced_clone
    page = clone / "medsimp" / "annotate" / "page.py"
    original = page.read_bytes()
    try:
        page.write_bytes(original + b"# a comment\n")
        stale = json.loads(run_ok(["dvc", "status", "--json"], clone, env) or "{}")
        beam = clone / "pipelines" / "jobs" / "beam_io.py"
        beam_text = beam.read_bytes()
        try:
            beam.write_bytes(beam_text + b"# a comment\n")
            moved = set(json.loads(run_ok(["dvc", "status", "--json"], clone, env) or "{}"))
        finally:
            beam.write_bytes(beam_text)
    finally:
        page.write_bytes(original)
    assert stale == {}
    # and a change that is code of the Beam jobs does rerun them, and not the training
    assert {"notes", "cochrane", "align"} <= moved
    assert not any(name.startswith("train@") for name in moved)


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
