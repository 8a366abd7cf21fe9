"""scripts/typecheck.py checks the installed layout: imports across the mapped folders
(medsimp.pipelines, medsimp.alignment, medsimp.training) are typed, not Any."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROBE = "from medsimp.alignment.overlap import overlap_r\n\noverlap_r(1, 2)\n"


def _typecheck_module():
    spec = importlib.util.spec_from_file_location("typecheck", REPO / "scripts" / "typecheck.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mypy(cwd: Path, target: str, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), target],
        cwd=cwd,
        env={**os.environ, "MYPY_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
    )


@pytest.mark.slow
def test_a_wrong_call_across_mapped_folders_is_caught(tmp_path):
    pkg = _typecheck_module().stage(tmp_path / "stage")
    (pkg / "_probe.py").write_text(PROBE, encoding="utf-8")
    result = _mypy(tmp_path / "stage", "medsimp/_probe.py", tmp_path / "cache")
    assert result.returncode == 1, result.stdout
    assert 'Argument 1 to "overlap_r" has incompatible type "int"; expected "str"' in result.stdout


def test_the_stage_links_the_checkout_without_copying(tmp_path):
    pkg = _typecheck_module().stage(tmp_path)
    for name in ("pipelines", "alignment", "training", "cli.py"):
        assert (pkg / name).is_symlink()
    assert (pkg / "alignment" / "overlap.py").resolve() == REPO / "alignment" / "overlap.py"
