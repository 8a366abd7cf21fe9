"""FKGL (Kincaid et al. 1975): the corpus Flesch-Kincaid grade of the outputs, one sentence per line."""

from __future__ import annotations

from collections.abc import Sequence

from medsimp.metrics.base import Metric


class FKGL(Metric):
    name = "fkgl"
    scale = "US grade: unbounded, lower = simpler"
    direction = "lower"
    needs = frozenset()
    label = "medsimp-readability=textstat-0.7.13-counts"
    tokenizer = "readability-words"
    order = 50

    def corpus(self, data, done=None):
        return {"fkgl": fkgl(data.hyps)}


def fkgl(sentences: Sequence[str]) -> float:
    """Corpus Flesch-Kincaid grade, one sentence per line: the toolkit's readability module."""
    from medsimp.text.readability import corpus_fkgl

    return corpus_fkgl(sentences)
