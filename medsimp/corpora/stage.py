"""`medsimp build NAME` as one stage function: the builder `medsimp.corpora.<NAME>` run on its
params section `build.NAME`, and its Hugging Face dataset folder written with the card's
provenance (`medsimp.corpora.card`) by `medsimp.corpora.writer.write_builder`. The command
(`medsimp.cli.commands.build`) parses its flags, calls `build` and prints the epilogue."""

from __future__ import annotations

import sqlite3
import tempfile
from typing import Any

from medsimp.config import params_hash, resolve_path
from medsimp.corpora import BUILDERS, build_dataset
from medsimp.corpora.card import card_provenance, input_lineage
from medsimp.corpora.common import BuildError
from medsimp.corpora.writer import write_builder
from medsimp.errors import InputError, UsageError
from medsimp.params_schema import Params


def build(name: str, out: str | None, params: Params, base: str = ".") -> dict[str, Any]:
    """Build the dataset `name` into the folder `out` (None: builders/<name>); `params`: the
    whole params (the card records the upstream stages' sections), `base`: the params file's
    folder. -> the stats written (`write_builder`)."""
    if name not in BUILDERS:
        raise UsageError(f"unknown builder {name!r}; known: {', '.join(sorted(BUILDERS))}")
    cfg = getattr(params.build, name)  # the typed section build.<name>
    # its text values are input paths: relative to the params file's folder (the hash and the
    # card keep them as written)
    located = cfg.model_copy(update={k: resolve_path(v, base) for k, v in cfg if isinstance(v, str) and v})
    try:
        dataset = build_dataset(name, located, params.filter)
        with dataset:  # a streamed dataset's scratch files go when it is written
            dataset.lineage = input_lineage(located.model_dump(), dataset.mimic_derived, name)
            # the card records what determines the data (builders/README.md): the inputs' content,
            # the upstream params, the aligner and the code's revision (stable for one commit)
            provenance = {
                "stage": f"build@{name}",
                "command": f"medsimp build {name}",
                "params_section": f"build.{name}",
                "params_hash": params_hash(cfg),
                **card_provenance(name, params, base, cfg, located, dataset.aligner_scores),
            }
            return write_builder(dataset, out or f"builders/{name}", provenance)
    except BuildError as exc:
        raise InputError(str(exc)) from None
    except sqlite3.Error as exc:  # a builder's scratch database (its index is built while writing)
        raise UsageError(
            f"scratch database in {tempfile.gettempdir()}: {exc} (set TMPDIR to a folder with room)"
        ) from None
