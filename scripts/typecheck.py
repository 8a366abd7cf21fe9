"""mypy on the installed layout: medsimp.pipelines, medsimp.alignment, medsimp.training.

The wheel maps the top-level folders `pipelines/`, `alignment/` and `training/` into the
`medsimp` namespace (setuptools package-dir), which mypy cannot follow from the checkout:
run there, every `medsimp.pipelines...` import would be untyped. This script links the
checkout into that layout in a temporary folder and type-checks it with the project's
mypy settings (pyproject.toml). Usage: python scripts/typecheck.py [mypy args]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAPPED = ("pipelines", "alignment", "training")


def stage(root: Path, copy: bool = False) -> Path:
    """The checkout under `root` as the installed package tree (symlinks, or copies when `copy`:
    for a test that edits the staged files); returns root/medsimp."""
    pkg = root / "medsimp"
    pkg.mkdir(parents=True)
    place = _copy if copy else lambda src, dst: dst.symlink_to(src)
    for entry in sorted((REPO / "medsimp").iterdir()):
        if entry.name != "__pycache__":
            place(entry, pkg / entry.name)
    for name in MAPPED:
        place(REPO / name, pkg / name)
    return pkg


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copy2(src, dst)


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="medsimp-typecheck-") as tmp:
        stage(Path(tmp))
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), "medsimp", *argv]
        env = {**os.environ, "MYPY_CACHE_DIR": str(REPO / ".mypy_cache" / "installed-layout")}
        return subprocess.run(cmd, cwd=tmp, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
