"""Small text helpers shared by the aligners: tokens, numbers, a rule sentence splitter."""

from __future__ import annotations

import functools
import re

_TOKEN = re.compile(r"\w+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


@functools.lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # light import (spaCy's is not)

    return frozenset(ENGLISH_STOP_WORDS)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return _TOKEN.findall(text.lower())


def content_tokens(text: str) -> set[str]:
    """Lower-cased word tokens minus English stop words (a cheap lexical signature)."""
    stop = _stopwords()
    return {t for t in tokens(text) if t not in stop}


def numbers(text: str) -> set[str]:
    """Numbers written in the text, with decimal commas normalised to points."""
    return {n.replace(",", ".") for n in _NUMBER.findall(text)}


@functools.lru_cache(maxsize=1)
def _sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def split_sentences(text: str) -> list[str]:
    """Split a passage into sentences with spaCy's rule-based sentencizer."""
    text = text.strip()
    if not text:
        return []
    return [s.text.strip() for s in _sentencizer()(text).sents if s.text.strip()]
