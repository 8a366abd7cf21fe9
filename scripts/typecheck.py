"""mypy on the installed layout: medsimp.pipelines, medsimp.alignment, medsimp.training.

The wheel maps the top-level folders `pipelines/`, `alignment/` and `training/` into the
`medsimp` namespace (setuptools package-dir), which mypy cannot follow from the checkout:
run there, every `medsimp.pipelines...` import would be untyped. This script links the
checkout into that layout in a temporary folder and type-checks it with the project's
mypy settings (pyproject.toml). Usage: python scripts/typecheck.py [mypy args]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAPPED = ("pipelines", "alignment", "training")


def stage(root: Path) -> Path:
    """Symlink the checkout under `root` as the installed package tree; returns root/medsimp."""
    pkg = root / "medsimp"
    pkg.mkdir(parents=True)
    for entry in sorted((REPO / "medsimp").iterdir()):
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for name in MAPPED:
        (pkg / name).symlink_to(REPO / name)
    return pkg


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="medsimp-typecheck-") as tmp:
        stage(Path(tmp))
        mypy = Path(sys.executable).with_name("mypy")
        cmd = [str(mypy), "--config-file", str(REPO / "pyproject.toml"), "medsimp", *argv]
        env = {**os.environ, "MYPY_CACHE_DIR": str(REPO / ".mypy_cache" / "installed-layout")}
        return subprocess.run(cmd, cwd=tmp, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
