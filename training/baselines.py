"""Baselines evaluated like DECLARE: copy-the-source and the paper's Dictionary baseline."""

from __future__ import annotations

import random


def copy_source(sources: list[list[str]]) -> list[str]:
    """Output the source unchanged."""
    return [" ".join(s) for s in sources]


def dictionary_baseline(
    sources: list[list[str]], dictionary: dict[str, list[str]], expansion: str = "random", seed: int = 13
) -> list[str]:
    """Replace every word that is a dictionary term (the words the rule locator flags) with one
    of its expansions: a random one (MedLane's Dictionary baseline; seeded per sentence, so the
    output is reproducible) or, with `expansion="first"`, the first (medsimp's earlier behaviour)."""
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
