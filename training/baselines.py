"""Baselines evaluated like DECLARE: copy-the-source and MedLane's Dictionary baseline (our
reading of Luo et al. Sec. 5.1's "simple term replacement approach", see `dictionary_baseline`)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from medsimp.params_schema import Train
    from training.data import Splits


def copy_source(sources: list[list[str]]) -> list[str]:
    """Output the source unchanged."""
    return [" ".join(s) for s in sources]


def dictionary_baseline(
    sources: list[list[str]], dictionary: dict[str, list[str]], expansion: str = "random", seed: int = 13
) -> list[str]:
    """Replace every word that is a dictionary term (the words the rule locator flags) with one
    of its expansions. Luo et al. (Sec. 5.1) say only "a simple term replacement approach named
    Dictionary-based model" with the DECLARE dictionary; which expansion it takes is not said.
    Our reading (default): a random one, seeded per sentence so the output is reproducible; with
    `expansion="first"`, the first (medsimp's earlier behaviour)."""
    out = []
    for i, sentence in enumerate(sources):
        rng = random.Random(f"{seed}:{i}")
        words = [
            (rng.choice(dictionary[w]) if expansion == "random" else dictionary[w][0])
            if w in dictionary
            else w
            for w in sentence
        ]
        out.append(" ".join(words))
    return out


# The train stage's step for the baselines (`medsimp train --model dictionary|copy`; the same
# interface as `training.neural`): nothing to fit, no device, no checkpoint.


def prepare(cfg: Train) -> Train:
    """`cfg` unchanged: the baselines run anywhere."""
    return cfg


def fit_predict(
    model: str,
    cfg: Train,
    splits: Splits,
    dictionary: dict[str, list[str]],
    sources: dict[str, list[list[str]]],
    out: Path,
    stats: dict,
    **_: object,
) -> dict[str, list[str]]:
    """The baseline's predictions of each evaluation split (nothing is trained or saved)."""
    if model == "dictionary":
        return {
            name: dictionary_baseline(srcs, dictionary, cfg.dictionary_expansion, cfg.seed)
            for name, srcs in sources.items()
        }
    return {name: copy_source(srcs) for name, srcs in sources.items()}
