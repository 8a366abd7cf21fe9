"""The marker of a medsimp output folder: `.medsimp-output`, JSON naming the command that
wrote the folder, the tool, and the lineage of its data (docs/architecture.md, "Outputs and
ownership"). Written by `medsimp.atomic.atomic_dir`; read here by everything else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MARKER = ".medsimp-output"


def marker_of(folder: str | Path) -> dict[str, Any] | None:
    """The marker of an output folder (None when absent or unreadable)."""
    try:
        data = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
