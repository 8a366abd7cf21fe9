"""Lexical-overlap filter (MultiCochrane Section 4, after Kim et al. 2021).

r = |Lc ∩ Ls| / |Ls| over the sets of lemmas of the complex (c) and simple (s) sentence
(text lower-cased before lookup, punctuation and spaces left out). A pair is kept when r
exceeds the threshold (`comparison: gt`, the paper's "exceeds 0.5"); `comparison: ge` keeps
r >= threshold (the project's earlier rule).
Lemmas: `medsimp.text.lemmas.lemma_set` (spaCy's lookup lemmatizer; surface tokens for
languages without a lookup table, such as fa).
"""

from __future__ import annotations

from medsimp.text.lemmas import lemma_set


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
