"""Test session settings: offline hubs, a private medsimp cache."""

import os
import subprocess
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

# The longest modules start first (pytest-xdist hands out modules in this order, pyproject.toml):
# the fresh clone's `dvc repro` on one worker, the DAG from another folder and the Beam cluster
# run on the other while it takes the rest, instead of one of them starting last.
LONGEST_FIRST = ("test_fresh_clone.py", "test_any_folder.py", "test_runners.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


def run_ok(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run a command; fail the test with its tail of output when it does not exit 0."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} -> {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout
