"""A foreign `alignment`/`training`/`pipelines` earlier on the path stops medsimp with one line
naming it, before any of its code runs (issue 38 item 6)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _medsimp(args: list[str], cwd: Path, pythonpath: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    return subprocess.run(
        [sys.executable, "-c", "import sys; from medsimp.cli import main; sys.exit(main())", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("name", ["alignment", "training", "pipelines"])
def test_a_decoy_package_earlier_on_the_path_stops_with_one_line(tmp_path, name):
    decoy = tmp_path / "decoy" / name
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise SystemExit('decoy code ran')\n", encoding="utf-8")
    proc = _medsimp(["align", "--help"], tmp_path, f"{decoy.parent}{os.pathsep}{ROOT}")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"`{name}`" in lines[0] and str(decoy) in lines[0], proc.stderr
    assert "decoy code ran" not in proc.stderr


def test_a_package_of_that_name_in_the_current_folder_stops_a_notebook_style_run(tmp_path):
    (tmp_path / "training").mkdir()  # a user's own package beside their notebook
    (tmp_path / "training" / "__init__.py").write_text("", encoding="utf-8")
    proc = _medsimp(["notes", "--help"], tmp_path, str(ROOT))  # `python -c`: the current folder first
    assert proc.returncode == 2 and str(tmp_path / "training") in proc.stderr, proc.stderr


def test_medsimp_own_packages_pass(tmp_path):
    proc = _medsimp(["--version"], tmp_path, str(ROOT))
    assert proc.returncode == 0 and proc.stdout.startswith("medsimp "), proc.stderr
