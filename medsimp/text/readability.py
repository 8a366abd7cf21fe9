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

The three counts are textstat 0.7.13's, computed here (`words`, `syllable_count`,
`polysyllable_count`; tests/test_syllables.py checks them against textstat): importing
textstat imports NLTK (about 1 s) and its English syllables parse NLTK's CMUdict reader
(0.7 s); here they come from `medsimp.resources.cmudict_syllables`, the same numbers
(first pronunciation's stressed phones) from a compact cached table. Words CMUdict lacks,
and other languages, are hyphenated with pyphen as textstat does.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from medsimp.resources import cached_table, cmudict_syllables, code_key, dist_version
from medsimp.text.words import tokenize

_WORD = re.compile(r"\w")
# textstat's `remove_punctuation(text, rm_apostrophe=False)`: apostrophes that do not start a
# contraction ending go, then every other non-word, non-space character but the apostrophe.
_NONCONTRACTION_APOSTROPHE = re.compile(r"\'(?![tsd]|ve|ll|re)")
_PUNCTUATION = re.compile(r"[^\w\s\']")
FIELDS = ("fkgl", "gunning_fog", "coleman_liau", "ari", "n_tokens")


def tokens(text: str) -> list[str]:
    """Word tokens (punctuation-only tokens dropped)."""
    return [t for t in tokenize(text) if _WORD.search(t)]


def words(text: str, lowercase: bool = False) -> list[str]:
    """textstat's `list_words`: the text without punctuation, split on whitespace. The word
    count W of the formulas as textstat (the reference the scores are checked against)
    counts it, so it stays textstat's rule rather than the toolkit's tokenizer (`tokens`):
    "don't" is 1 word here, 2 tokens there."""
    text = _PUNCTUATION.sub("", _NONCONTRACTION_APOSTROPHE.sub("", text))
    return (text.lower() if lowercase else text).split()


def _hyphenation_patterns(path: str) -> tuple[dict, int] | None:
    """pyphen's parsed patterns of one `hyph_*.dic` (`HyphDict.patterns`, `maxlen`) in plain
    values; None when a pattern holds a nonstandard hyphenation (not a plain int: not cached)."""
    from pyphen import HyphDict

    parsed = HyphDict(Path(path))
    if any(
        type(offset) is not int or any(type(v) is not int for v in values)
        for offset, values in parsed.patterns.values()
    ):
        return None
    return dict(parsed.patterns), parsed.maxlen


@functools.cache
def _pyphen(language: str) -> Any:
    """pyphen's hyphenator for `language` (as `Pyphen(lang=language)`), its patterns read from a
    `medsimp.resources.cached_table` rather than parsed from the dictionary file (0.07 s a
    process; tests/test_syllables.py checks the positions equal a fresh pyphen's)."""
    import pyphen

    path = pyphen.LANGUAGES[pyphen.language_fallback(language)]
    if path not in pyphen.hdcache:
        key = f"{dist_version('pyphen')}\0{path.name}\0{path.stat().st_size}\0".encode()
        found = cached_table(
            "pyphen", key + code_key(_hyphenation_patterns), lambda: _hyphenation_patterns(str(path))
        )
        if found is not None:
            hyph = pyphen.HyphDict.__new__(pyphen.HyphDict)
            hyph.patterns, hyph.maxlen, hyph.cache = found[0], found[1], {}
            pyphen.hdcache[path] = hyph
    return pyphen.Pyphen(lang=language)


@functools.lru_cache(maxsize=1 << 16)
def _word_syllables(word: str, language: str) -> int:
    """One lowercased word: CMUdict's count for English (textstat's `get_cmudict` serves the
    `en` root only), else pyphen's hyphenation points + 1."""
    if language.split("_")[0] == "en":
        count = cmudict_syllables().get(word)
        if count is not None:
            return count
    return len(_pyphen(language).positions(word)) + 1


def syllable_count(text: str, language: str) -> int:
    """textstat's `syllable_count` with `set_lang(language)`."""
    return sum(_word_syllables(w, language) for w in words(text, lowercase=True))


def polysyllable_count(text: str, language: str) -> int:
    """textstat's `polysyllabcount`: words of three or more syllables."""
    return sum(1 for w in words(text) if syllable_count(w, language) >= 3)


def _round(value) -> float:
    return round(float(value), 4)


def _fkgl(n_words: int, syllables: int, n_sentences: int) -> float:
    return _round(0.39 * n_words / n_sentences + 11.8 * syllables / n_words - 15.59)


def scores(text: str, language: str, syllable_languages: Iterable[str], n_sentences: int = 1) -> dict:
    """{fkgl, gunning_fog, coleman_liau, ari, n_tokens} of `text` holding `n_sentences` sentences."""
    n_tokens = len(tokens(text))
    out: dict[str, float | int | None] = {
        "fkgl": None,
        "gunning_fog": None,
        "coleman_liau": None,
        "ari": None,
        "n_tokens": n_tokens,
    }
    n_words = len(words(text))
    if n_words == 0 or n_sentences == 0:
        return out
    letters = sum(ch.isalpha() for ch in text)
    chars = sum(ch.isalnum() for ch in text)
    if language in set(syllable_languages):
        syllables, poly = syllable_count(text, language), polysyllable_count(text, language)
        out["fkgl"] = _fkgl(n_words, syllables, n_sentences)
        out["gunning_fog"] = _round(0.4 * (n_words / n_sentences + 100 * poly / n_words))
    out["coleman_liau"] = _round(
        0.0588 * 100 * letters / n_words - 0.296 * 100 * n_sentences / n_words - 15.8
    )
    out["ari"] = _round(4.71 * chars / n_words + 0.5 * n_words / n_sentences - 21.43)
    return out


def document_scores(sentences: list[str], language: str, syllable_languages: Iterable[str]) -> dict:
    """Scores of a document side (its sentences joined) plus `n_sentences`."""
    out = scores(" ".join(sentences), language, syllable_languages, len(sentences))
    out["n_sentences"] = len(sentences)
    return out


def text_scores(text: str, language: str = "en") -> dict:
    """Scores of free text (a model's output): sentences counted by the toolkit's splitter."""
    from medsimp.text.multilingual import split_sentences

    return document_scores([s.text for s in split_sentences(text, language)], language, [language])


# The readability formula each output language gets in `evaluate` (docs/metrics.md): the one
# established for that language, under its own name. A language without one (fa) gets none.
READING_FORMULA: dict[str, str] = {"en": "fkgl", "es": "fernandez_huerta", "fr": "kandel_moles"}


def reading_ease(name: str, n_words: int, syllables: int, n_sentences: int) -> float:
    """A Flesch reading-ease adaptation (0-100, higher = easier), as textstat 0.7.13 computes it:
    `kandel_moles` (French, Kandel & Moles 1958): 207 - 1.015 W/S - 73.6 Y/W (textstat's
    `flesch_reading_ease` with `set_lang("fr")`); `fernandez_huerta` (Spanish, Fernandez Huerta
    1959, with the published correction): 206.84 - 60 Y/W - 1.02 W/S (textstat's
    `fernandez_huerta`)."""
    per_sentence, per_word = n_words / n_sentences, syllables / n_words
    if name == "kandel_moles":
        return _round(207 - 1.015 * per_sentence - 73.6 * per_word)
    if name == "fernandez_huerta":
        return _round(206.84 - 60 * per_word - 1.02 * per_sentence)
    raise ValueError(f"unknown reading-ease formula {name!r}: kandel_moles or fernandez_huerta")


def line_counts(line: str, language: str) -> tuple[int, int, int]:
    """(words, syllables, sentences) of one output line: a blank line counts nothing, any other
    line is one sentence. These are the corpus formulas' sufficient statistics: summed over the
    lines they are the counts of the non-blank lines joined by spaces (`words` and
    `syllable_count` add up over whitespace-separated words), so the paired bootstrap resamples
    the same score the table prints."""
    if not line.strip():
        return 0, 0, 0
    return len(words(line)), syllable_count(line, language), 1


def corpus_counts(lines: Sequence[str], language: str) -> tuple[int, int, int]:
    """`line_counts` summed over a system output's lines."""
    counts = [line_counts(line, language) for line in lines]
    return (sum(c[0] for c in counts), sum(c[1] for c in counts), sum(c[2] for c in counts))


def formula_of_counts(name: str, n_words: int, syllables: int, n_sentences: int) -> float:
    """`fkgl` or a `reading_ease` formula of summed counts; 0.0 when there are no words."""
    if not n_words:
        return 0.0
    if name == "fkgl":
        return _fkgl(n_words, syllables, n_sentences)
    return reading_ease(name, n_words, syllables, n_sentences)


def corpus_reading_ease(name: str, lines: Sequence[str], language: str) -> float:
    """`reading_ease` of a system output with one sentence per line (as `corpus_fkgl`); 0.0
    when it has no words."""
    return formula_of_counts(name, *corpus_counts(lines, language))


def corpus_fkgl(lines: Sequence[str], language: str = "en") -> float:
    """FKGL of a system output with one sentence per line (evaluate's convention); 0.0 when
    it has no words. The FKGL of `document_scores` over the non-blank lines, without the
    scores it does not need."""
    return formula_of_counts("fkgl", *corpus_counts(lines, language))
