"""The import-linter contract in pyproject.toml holds: layers point down only.

`lint-imports` reads the installed layout (medsimp/pipelines, medsimp/alignment,
medsimp/training), so the test stages that layout from the checkout, as the wheel has it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _stage(root: Path) -> Path:
    spec = importlib.util.spec_from_file_location("typecheck", REPO / "scripts" / "typecheck.py")
    assert spec and spec.loader
    typecheck = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(typecheck)
    typecheck.stage(root, copy=True)
    return root


def _lint(root: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(exe), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )


def test_layers_contract_is_kept(tmp_path):
    result = _lint(_stage(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:]
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    root = _stage(tmp_path)
    errors = root / "medsimp" / "errors.py"
    errors.write_text(
        errors.read_text(encoding="utf-8") + "\nimport medsimp.pipelines.selection\n", encoding="utf-8"
    )
    result = _lint(root)
    assert result.returncode != 0
    assert "medsimp.errors is not allowed to import medsimp.pipelines" in result.stdout
