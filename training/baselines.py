"""Baselines evaluated like DECLARE: copy-the-source and MedLane's Dictionary baseline (our
reading of Luo et al. Sec. 5.1's "simple term replacement approach", see `dictionary_baseline`)."""

from __future__ import annotations

import random


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
