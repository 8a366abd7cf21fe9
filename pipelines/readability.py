"""Readability features: the published formulas over textstat's counts, language-aware.

textstat's own score functions re-count sentences with a regex that splits "0.55" and
"95% CI 0.42 to 0.71" into several sentences; our sentence count is known (1 for a
sentence, n for a document side), so the formulas are applied here to textstat's word
(`lexicon_count`), syllable (`syllable_count`, language-aware via `set_lang`) and
polysyllable counts:
  FKGL = 0.39 W/S + 11.8 Y/W - 15.59 (Kincaid et al. 1975)
  Gunning fog = 0.4 (W/S + 100 P/W), P = words of 3+ syllables (Gunning 1952)
  Coleman-Liau = 0.0588 L - 0.296 S100 - 15.8, L / S100 = letters (not digits) / sentences
  per 100 words (Coleman & Liau 1975)
  ARI = 4.71 C/W + 0.5 W/S - 21.43, C = letters and digits
Syllable-based scores (FKGL, fog) need textstat's support for the language (pyphen);
elsewhere (e.g. fa) they are null. `n_tokens` counts NLTK Treebank tokens holding a word
character.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence

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


def scores(text: str, language: str, syllable_languages: Iterable[str], n_sentences: int = 1) -> dict:
    """{fkgl, gunning_fog, coleman_liau, ari, n_tokens} of `text` holding `n_sentences` sentences."""
    import textstat

    from medsimp.resources import ensure_nltk_data

    ensure_nltk_data()  # textstat 0.7.13 reads NLTK's cmudict for English syllables
    n_tokens = len(tokens(text))
    out: dict[str, float | int | None] = {
        "fkgl": None,
        "gunning_fog": None,
        "coleman_liau": None,
        "ari": None,
        "n_tokens": n_tokens,
    }
    with _LOCK:
        textstat.set_lang(language if language in set(syllable_languages) else "en")
        words = textstat.lexicon_count(text)
        if words == 0 or n_sentences == 0:
            return out
        letters = sum(ch.isalpha() for ch in text)
        chars = sum(ch.isalnum() for ch in text)
        if language in set(syllable_languages):
            syllables, poly = textstat.syllable_count(text), textstat.polysyllabcount(text)
            out["fkgl"] = _round(0.39 * words / n_sentences + 11.8 * syllables / words - 15.59)
            out["gunning_fog"] = _round(0.4 * (words / n_sentences + 100 * poly / words))
    out["coleman_liau"] = _round(0.0588 * 100 * letters / words - 0.296 * 100 * n_sentences / words - 15.8)
    out["ari"] = _round(4.71 * chars / words + 0.5 * words / n_sentences - 21.43)
    return out


def document_scores(sentences: list[str], language: str, syllable_languages: Iterable[str]) -> dict:
    """Scores of a document side (its sentences joined) plus `n_sentences`."""
    out = scores(" ".join(sentences), language, syllable_languages, len(sentences))
    out["n_sentences"] = len(sentences)
    return out


def text_scores(text: str, language: str = "en") -> dict:
    """Scores of free text (a model's output): sentences counted by the toolkit's splitter."""
    from medsimp.pipelines.multilingual_sentences import split_sentences

    return document_scores([s.text for s in split_sentences(text, language)], language, [language])


def corpus_fkgl(lines: Sequence[str], language: str = "en") -> float:
    """FKGL of a system output with one sentence per line (evaluate's convention); 0.0 when
    it has no words."""
    kept = [line for line in lines if line.strip()]
    value = document_scores(kept, language, [language])["fkgl"] if kept else None
    return 0.0 if value is None else float(value)
