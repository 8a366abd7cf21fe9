"""Hugging Face dataset builders: one module per dataset, each with `build(cfg) -> BuiltDataset`.

`medsimp build NAME` runs `build` on the params section `build.NAME` and writes the
folder with `medsimp.corpora.writer.write_builder`.
"""

from __future__ import annotations

import importlib

from pydantic import BaseModel

from medsimp.corpora.common import BuiltDataset

# Each builder is the module `medsimp.corpora.<name>`, imported by name only when it runs, so a
# build@ stage's code is its own builder's (`medsimp build`'s `code_modules`, read by
# medsimp.cli.dvc_deps and the card's code hash): a comment in plaba.py reruns build@plaba only.
BUILDERS = ("multicochrane", "medlane", "msd", "plaba", "radiology")


def builder_module(name: str) -> str:
    """The module of builder `name`."""
    return f"{__name__}.{name}"


def build_dataset(name: str, cfg: BaseModel, filter_params: BaseModel | None = None) -> BuiltDataset:
    """Run builder `name` on its typed params section (`build.NAME`); multicochrane also takes
    the params' `filter` section (its MC-CLEAN gold rows go through the overlap filter)."""
    if name not in BUILDERS:
        raise KeyError(f"unknown builder {name!r}; known: {', '.join(sorted(BUILDERS))}")
    module = importlib.import_module(builder_module(name))
    return module.build(cfg, filter_params) if name == "multicochrane" else module.build(cfg)
