"""`mypy` runs on the checkout as it is: calls across the four packages are typed, not Any."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROBE = "from alignment.overlap import overlap_r\n\noverlap_r(1, 2)\n"


@pytest.mark.slow
def test_a_wrong_call_across_packages_is_caught(tmp_path):
    probe = REPO / "medsimp" / f"_probe_{os.getpid()}.py"
    probe.write_text(PROBE, encoding="utf-8")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), str(probe)],
            cwd=REPO,
            env={**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "cache")},
            capture_output=True,
            text=True,
        )
    finally:
        probe.unlink()
    assert result.returncode == 1, result.stdout
    assert 'Argument 1 to "overlap_r" has incompatible type "int"; expected "str"' in result.stdout
