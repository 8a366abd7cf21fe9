"""Lemmas from spaCy's lookup tables (spacy-lookups-data), read directly: no POS tagger,
works offline, and no spaCy import where only the English table is needed.

`lemmatize` (one English word) serves Algorithm 1, its common-word list and CWR;
`lemma_set` (a text in any language) serves the overlap filter and the annotator. Both read
the same tables. `lemma_set` keeps the table's lemma as it is ("first" -> "1"), as spaCy's
lookup lemmatizer does; `lemmatize` keeps an alphabetic word alphabetic (Algorithm 1's common
words have no digits).

Languages: spaCy's lookup lemmatizer with the spacy-lookups-data tables for en, es, fr (and
the other languages that have a lookup table). Persian (fa) has only rule tables that need a
POS tagger, which is not available offline, so fa (and any language without a lookup table)
uses lower-cased surface tokens.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path


@functools.lru_cache(maxsize=1)
def lemma_lookup() -> dict[str, str]:
    """spaCy's English lookup-lemmatizer table (spacy-lookups-data `en_lemma_lookup`), read
    directly: the same table `spacy.lookups.load_lookups("en", ["lemma_lookup"])` gives,
    without importing spaCy (seconds per Beam worker)."""
    import spacy_lookups_data

    path = Path(spacy_lookups_data.__file__).parent / "data" / "en_lemma_lookup.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def lemmatize(word: str) -> str:
    """Lower-case, then the lookup lemma (the word itself when unknown). An alphabetic word
    keeps itself when the table gives a non-alphabetic lemma (it maps "first" to "1")."""
    low = word.lower()
    lemma = lemma_lookup().get(low, low)
    return low if low.isalpha() and not lemma.isalpha() else lemma


@functools.lru_cache(maxsize=8)
def _nlp(lang: str):
    import spacy

    nlp = spacy.blank(lang)
    try:
        nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
        nlp.initialize()
    except (ValueError, KeyError, OSError):  # no lookup table for this language
        nlp = spacy.blank(lang)
    return nlp


def lemma_set(text: str, lang: str = "en") -> set[str]:
    """Lower-cased lemmas (surface forms when `lang` has no lookup table), no punctuation."""
    nlp = _nlp(lang)
    has_lemmas = "lemmatizer" in nlp.pipe_names
    return {
        (t.lemma_ if has_lemmas and t.lemma_ else t.text).lower()
        for t in nlp(text.lower())
        if not (t.is_punct or t.is_space)
    }
