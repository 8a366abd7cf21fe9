"""Hugging Face dataset builders: one module per dataset, each with `build(cfg) -> BuiltDataset`.

`medsimp build NAME` runs `build` on the params section `build.NAME` and writes the
folder with `medsimp.builders.writer.write_builder`.
"""

from __future__ import annotations

import importlib
from typing import Any

from medsimp.builders.common import BuiltDataset

BUILDERS: dict[str, str] = {
    "multicochrane": "medsimp.builders.multicochrane",
    "medlane": "medsimp.builders.medlane",
    "msd": "medsimp.builders.msd",
    "plaba": "medsimp.builders.plaba",
    "radiology": "medsimp.builders.radiology",
}


def build_dataset(name: str, cfg: dict[str, Any]) -> BuiltDataset:
    """Run builder `name` on its params section."""
    if name not in BUILDERS:
        raise KeyError(f"unknown builder {name!r}; known: {', '.join(sorted(BUILDERS))}")
    return importlib.import_module(BUILDERS[name]).build(cfg)
