"""A fresh clone reproduces its own committed lock: `git clone` + `dvc repro` leaves git clean."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow  # runs the whole DAG on the embedded sample (minutes)


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} -> {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_fresh_clone_repro_leaves_git_status_clean(tmp_path):
    clone = tmp_path / "clone"
    _run(["git", "clone", "--quiet", str(ROOT), str(clone)], tmp_path, dict(os.environ))
    env = {
        **os.environ,
        "PYTHONPATH": str(clone),
        "MEDSIMP_CACHE": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
        "DVC_NO_ANALYTICS": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    _run([sys.executable, "-m", "dvc", "repro"], clone, env)  # cold DVC cache, cold medsimp cache
    assert _run(["git", "status", "--porcelain"], clone, env) == ""
