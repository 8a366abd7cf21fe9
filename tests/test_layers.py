"""The import-linter contract in pyproject.toml holds, run as documented: `lint-imports` in the
checkout, with no staging (the four packages are the checkout's own folders)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("medsimp", "pipelines", "alignment", "training")


def _lint(root: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(exe), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PATH": str(exe.parent), "PYTHONPATH": str(root), "HOME": str(root)},
        capture_output=True,
        text=True,
    )


def test_layers_contract_is_kept_on_the_checkout():
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "2 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    for name in PACKAGES:
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    errors = tmp_path / "medsimp" / "errors.py"
    errors.write_text(
        errors.read_text(encoding="utf-8") + "\nimport pipelines.text.selection\n", encoding="utf-8"
    )
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "medsimp.errors is not allowed to import pipelines.text" in result.stdout


def test_a_metrics_cycle_breaks_the_metrics_contract(tmp_path):
    """`base` importing `scoring` (the cycle issue 38 found) is reported, even inside a function."""
    for name in PACKAGES:
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    base = tmp_path / "medsimp" / "metrics" / "base.py"
    base.write_text(
        base.read_text(encoding="utf-8")
        + "\n\ndef _probe():\n    from medsimp.metrics.scoring import inputs\n\n    return inputs\n",
        encoding="utf-8",
    )
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "metrics: scoring on top, families in between, base at the bottom BROKEN" in result.stdout
