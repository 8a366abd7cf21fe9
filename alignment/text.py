"""The aligners' lexical signatures, over the text toolkit: content tokens and numbers.

Word tokens are the multilingual genre's (`medsimp.text.multilingual.word_tokens`, lowercased
`\\w+` runs), stop words spaCy's English list (`medsimp.text.stopwords`). `sklearn` names the
list used before issue 30 (scikit-learn's `ENGLISH_STOP_WORDS`), kept because the CRF scored
0.08-0.22 points of pair F1 higher with it on PLABA dev (the Jaccard baseline 1.2 points
lower; docs/alignment.md): params `align.crf.stopwords`.
"""

from __future__ import annotations

import functools
import re
import typing

from medsimp.params_schema import StopwordList
from medsimp.text.multilingual import word_tokens
from medsimp.text.stopwords import stop_words

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
STOPWORD_LISTS = typing.get_args(StopwordList)  # the choices params `align.crf.stopwords` accepts


@functools.cache
def _stop_list(name: str) -> frozenset[str]:
    if name == "spacy":
        return stop_words("en")
    if name == "sklearn":
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        return frozenset(ENGLISH_STOP_WORDS)
    raise ValueError(f"unknown stop-word list {name!r} ({', '.join(STOPWORD_LISTS)})")


def content_tokens(text: str, stopwords: str = "spacy") -> set[str]:
    """Lowercased word tokens minus English stop words (a cheap lexical signature); `stopwords`
    names the list (`STOPWORD_LISTS`)."""
    stop = _stop_list(stopwords)
    return {t for t in word_tokens(text) if t not in stop}


def numbers(text: str) -> set[str]:
    """Numbers written in the text, with decimal commas normalised to points."""
    return {n.replace(",", ".") for n in _NUMBER.findall(text)}
