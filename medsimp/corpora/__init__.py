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


def build_dataset(name: str, cfg: BaseModel, filter_params: BaseModel | None = None) -> BuiltDataset:
    """Run builder `name` on its typed params section (`build.NAME`); multicochrane also takes
    the params' `filter` section (its MC-CLEAN gold rows go through the overlap filter)."""
    if name not in BUILDERS:
        raise KeyError(f"unknown builder {name!r}; known: {', '.join(sorted(BUILDERS))}")
    module = importlib.import_module(BUILDERS[name])
    return module.build(cfg, filter_params) if name == "multicochrane" else module.build(cfg)
