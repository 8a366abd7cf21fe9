"""Which language a set of lines is written in, so that a score is never computed with another
language's formula (issue 35 item 2: Persian outputs got an English FKGL of 9.37 under the
default `--lang en`).

py3langid (Lui & Baldwin's langid.py, its naive Bayes model shipped inside the wheel; 97
languages; deterministic) classifies the distinct lines joined, as one text, with normalised
probabilities. A verdict needs enough letters to mean something (`MIN_LETTERS`) and a
probability of at least `MIN_PROBABILITY`; otherwise the language is left undecided and nothing
is refused on its account.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

MIN_LETTERS = 200  # fewer letters than this (a few words) decide nothing
MIN_PROBABILITY = 0.95
MAX_CHARS = 200_000  # a prefix this long decides as well as the whole text


@dataclass(frozen=True)
class Detected:
    lang: str | None  # ISO 639-1 code, or None when undecided
    probability: float
    letters: int


@functools.cache
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)


def detect(lines: Iterable[str | None]) -> Detected:
    """The language of `lines` taken together (see the module doc)."""
    text, size, seen = [], 0, set()
    for line in lines:
        if line and line not in seen:  # each distinct line once: repeats skew the counts (a constant output)
            seen.add(line)
            text.append(line)
            size += len(line) + 1
            if size >= MAX_CHARS:
                break
    joined = "\n".join(text)[:MAX_CHARS]
    letters = sum(ch.isalpha() for ch in joined)
    if letters < MIN_LETTERS:
        return Detected(None, 0.0, letters)
    lang, probability = _identifier().classify(joined)
    probability = float(probability)
    return Detected(str(lang) if probability >= MIN_PROBABILITY else None, probability, letters)
