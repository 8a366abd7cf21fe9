"""Readability features with textstat, language-aware where textstat supports the language.

FKGL and Gunning fog count syllables, so they need textstat's language support (pyphen
dictionaries); for other languages (e.g. fa) they are null. Coleman-Liau and ARI use
letter and word counts only and are computed for every language. Token counts use NLTK's
Treebank-style tokenizer (no data files) and count tokens holding a word character.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from nltk.tokenize import NLTKWordTokenizer

_WORD = re.compile(r"\w")
_LOCK = threading.Lock()  # textstat keeps its language in module state
_TOKENIZER = NLTKWordTokenizer()
FIELDS = ("fkgl", "gunning_fog", "coleman_liau", "ari", "n_tokens")


def tokens(text: str) -> list[str]:
    """Word tokens (punctuation-only tokens dropped)."""
    return [t for t in _TOKENIZER.tokenize(text) if _WORD.search(t)]


def _round(value) -> float:
    return round(float(value), 4)


def scores(text: str, language: str, syllable_languages: Iterable[str]) -> dict:
    """{fkgl, gunning_fog, coleman_liau, ari, n_tokens} for one text."""
    import textstat

    from medsimp.resources import ensure_nltk_data

    ensure_nltk_data()  # textstat 0.7.13 reads NLTK's cmudict for English syllables
    n_tokens = len(tokens(text))
    out = {"fkgl": None, "gunning_fog": None, "coleman_liau": None, "ari": None, "n_tokens": n_tokens}
    if n_tokens == 0:
        return out
    with _LOCK:
        if language in set(syllable_languages):
            textstat.set_lang(language)
            out["fkgl"] = _round(textstat.flesch_kincaid_grade(text))
            out["gunning_fog"] = _round(textstat.gunning_fog(text))
        else:
            textstat.set_lang("en")
        out["coleman_liau"] = _round(textstat.coleman_liau_index(text))
        out["ari"] = _round(textstat.automated_readability_index(text))
    return out


def document_scores(sentences: list[str], language: str, syllable_languages: Iterable[str]) -> dict:
    """Scores of a document side (its sentences joined) plus `n_sentences`."""
    out = scores(" ".join(sentences), language, syllable_languages)
    out["n_sentences"] = len(sentences)
    return out
