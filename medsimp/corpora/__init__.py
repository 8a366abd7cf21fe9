"""Hugging Face dataset builders: one module per dataset, each with `build(cfg) -> BuiltDataset`.

`medsimp build NAME` runs `build` on the params section `build.NAME` and writes the
folder with `medsimp.corpora.writer.write_builder`.
"""

from __future__ import annotations

import importlib

from pydantic import BaseModel

from medsimp.corpora.common import BuiltDataset

BUILDERS: dict[str, str] = {
    "multicochrane": "medsimp.corpora.multicochrane",
    "medlane": "medsimp.corpora.medlane",
    "msd": "medsimp.corpora.msd",
    "plaba": "medsimp.corpora.plaba",
    "radiology": "medsimp.corpora.radiology",
}


def build_dataset(name: str, cfg: BaseModel) -> BuiltDataset:
    """Run builder `name` on its typed params section (`build.NAME`)."""
    if name not in BUILDERS:
        raise KeyError(f"unknown builder {name!r}; known: {', '.join(sorted(BUILDERS))}")
    return importlib.import_module(BUILDERS[name]).build(cfg)
