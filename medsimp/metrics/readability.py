"""Readability of the outputs, one formula per output language (docs/metrics.md).

`fkgl`: the corpus Flesch-Kincaid grade (Kincaid et al. 1975), one sentence per line, English
only (its coefficients were fitted on English; for other languages it is null with a note).
`kandel_moles` (French, Kandel & Moles 1958) and `fernandez_huerta` (Spanish, Fernandez Huerta
1959): the established Flesch reading-ease adaptations, listed only for their language.
Farsi has none here: only `fkgl`, null with a note.

Each is a formula of counts summed over the lines (words, syllables, non-blank lines), so its
per-sentence statistics are those counts and the paired bootstrap resamples the corpus score the
table prints (issue 54: it resampled the mean of sentence scores, another difference: Fernandez
Huerta -0.59 where the table showed -2.88).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from medsimp.metrics.base import Metric, NotComputable, output_language
from medsimp.text.readability import (
    READING_FORMULA,
    corpus_fkgl,
    corpus_reading_ease,
    formula_of_counts,
    line_counts,
)


class _CountFormula(Metric):
    """A readability formula of summed line counts (`medsimp.text.readability.line_counts`)."""

    def stats(self, data):
        return np.array([line_counts(h, self._language()) for h in data.hyps], dtype=float)

    def from_stats(self, summed, n):
        n_words, syllables, n_sentences = (int(v) for v in summed)
        return formula_of_counts(self.name, n_words, syllables, n_sentences)

    def _language(self) -> str:
        return self.languages[0] if self.languages else "en"


class FKGL(_CountFormula):
    name = "fkgl"
    scale = "US grade: unbounded, lower = simpler"
    direction = "lower"
    needs = frozenset()
    label = "medsimp-readability=textstat-0.7.13-counts"
    tokenizer = "readability-words"
    order = 50

    def corpus(self, data, done=None):
        lang = output_language(data)
        if lang != "en":
            other = READING_FORMULA.get(lang)
            instead = (
                f"{lang} outputs get `{other}`"
                if other
                else f"no readability formula is established for {lang}"
            )
            raise NotComputable(
                f"FKGL is an English formula (Kincaid et al. 1975) and the outputs are {lang}: {instead}"
            )
        return {"fkgl": fkgl(data.hyps)}


class _ReadingEase(_CountFormula):
    """A language's Flesch reading-ease adaptation over textstat 0.7.13's word and syllable counts
    (pyphen hyphenation for the language), one sentence per line."""

    scale = "reading ease: ~0-100, higher = easier"
    direction = "higher"
    needs = frozenset()
    tokenizer = "readability-words"

    def corpus(self, data, done=None):
        assert self.languages is not None
        return {self.name: corpus_reading_ease(self.name, data.hyps, self.languages[0])}


class KandelMoles(_ReadingEase):
    """French: Kandel & Moles (1958), 207 - 1.015 W/S - 73.6 Y/W (textstat's French Flesch)."""

    name = "kandel_moles"
    label = "medsimp-kandel-moles-1958=textstat-0.7.13-fr"
    languages = ("fr",)
    order = 51


class FernandezHuerta(_ReadingEase):
    """Spanish: Fernandez Huerta (1959), 206.84 - 60 Y/W - 1.02 W/S (textstat's `fernandez_huerta`)."""

    name = "fernandez_huerta"
    label = "medsimp-fernandez-huerta-1959=textstat-0.7.13-es"
    languages = ("es",)
    order = 52


def fkgl(sentences: Sequence[str]) -> float:
    """Corpus Flesch-Kincaid grade, one sentence per line: the toolkit's readability module."""
    return corpus_fkgl(sentences)
