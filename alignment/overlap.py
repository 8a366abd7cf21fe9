"""Lexical-overlap filter (MultiCochrane Section 4, after Kim et al. 2021).

r = |Lc ∩ Ls| / |Ls| over the sets of lemmas of the complex (c) and simple (s) sentence
(text lower-cased before lookup, punctuation and spaces left out). A pair is kept when r
exceeds the threshold (`comparison: gt`, the paper's "exceeds 0.5"); `comparison: ge` keeps
r >= threshold (the project's earlier rule).
Lemmas come from spaCy's lookup lemmatizer with the spacy-lookups-data tables for
en, es, fr (and the other languages that have a lookup table). Persian (fa) has only
rule tables that need a POS tagger, which is not available offline, so fa (and any
language without a lookup table) uses lower-cased surface tokens.
"""

from __future__ import annotations

import functools


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


def overlap_r(complex_text: str, simple_text: str, lang: str = "en") -> float:
    """r = |Lc ∩ Ls| / |Ls| (0.0 when the simple side has no tokens)."""
    ls = lemma_set(simple_text, lang)
    if not ls:
        return 0.0
    return len(lemma_set(complex_text, lang) & ls) / len(ls)


COMPARISONS = ("gt", "ge")


def passes(r: float, threshold: float, comparison: str = "gt") -> bool:
    """Whether overlap `r` passes: r > threshold (gt, the paper) or r >= threshold (ge)."""
    if comparison == "gt":
        return r > threshold
    if comparison == "ge":
        return r >= threshold
    raise ValueError(f"filter.comparison must be one of {COMPARISONS}, got {comparison!r}")


def filter_row(row: dict, threshold: float, comparison: str = "gt") -> dict:
    """Add `overlap_r` and `keep` to an aligned-pair row.

    English pairs are scored on (complex_text, simple_text); a bridged pair inherits the
    decision of its English pair, (complex_text, pivot_text), since lemmas of two
    languages cannot be compared.
    """
    simple = row["simple_text"] if row["language"] == "en" or not row.get("pivot_ids") else row["pivot_text"]
    r = overlap_r(row["complex_text"], simple, "en")
    return {**row, "overlap_r": r, "keep": passes(r, threshold, comparison)}
