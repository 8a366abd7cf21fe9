"""Test session settings: offline hubs, a private medsimp cache."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import medsimp  # noqa: F401  (first: pins CPU-independent torch kernels, medsimp.numerics)

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["DVC_NO_ANALYTICS"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# medsimp's ownership records (medsimp.ownership) go to a private folder, not ~/.local/state
os.environ.setdefault("MEDSIMP_STATE_DIR", tempfile.mkdtemp(prefix="medsimp-state-"))

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
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


def run_ok(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run a command; fail the test with its tail of output when it does not exit 0."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} -> {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout
