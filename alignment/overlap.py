"""Lexical-overlap filter (MultiCochrane Section 4, after Kim et al. 2021).

r = |Lc ∩ Ls| / |Ls| over the sets of lemmas of the complex (c) and simple (s) sentence
(text lower-cased before lookup, punctuation and spaces left out). A pair is kept when r
exceeds the threshold (`comparison: gt`, the paper's "exceeds 0.5"); `comparison: ge` keeps
r >= threshold (the project's earlier rule).
Lemmas: `medsimp.text.lemmas.lemma_set` (spaCy's lookup lemmatizer; surface tokens for
languages without a lookup table, such as fa).
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any

from medsimp.params_schema import Comparison
from medsimp.text.copies import DROPS, row_copy_kind
from medsimp.text.lemmas import lemma_set


def overlap_r(complex_text: str, simple_text: str, lang: str = "en") -> float:
    """r = |Lc ∩ Ls| / |Ls| (0.0 when the simple side has no tokens)."""
    ls = lemma_set(simple_text, lang)
    if not ls:
        return 0.0
    return len(lemma_set(complex_text, lang) & ls) / len(ls)


COMPARISONS = typing.get_args(Comparison)  # params `filter.comparison`


def passes(r: float, threshold: float, comparison: str = "gt") -> bool:
    """Whether overlap `r` passes: r > threshold (gt, the paper) or r >= threshold (ge)."""
    if comparison == "gt":
        return r > threshold
    if comparison == "ge":
        return r >= threshold
    raise ValueError(f"filter.comparison must be one of {COMPARISONS}, got {comparison!r}")


def filter_row(
    row: dict,
    threshold: float,
    comparison: str = "gt",
    aligner_min: float | None = None,
    drop_copies: str = "none",
    copy_overlap: float = 0.9,
) -> dict:
    """Add `overlap_r` and `keep` to an aligned-pair row.

    English pairs are scored on (complex_text, simple_text); a bridged pair inherits the
    decision of its English pair, (complex_text, pivot_text), since lemmas of two
    languages cannot be compared. `aligner_min` (filter.rule `overlap_or_aligner`, ours; None is
    the paper's rule): a pair the overlap drops is kept when its CRF probability (`crf_score`;
    a bridged pair's is its English pairs') is at least `aligner_min`. `drop_copies`
    (filter.drop_copies; "none" is the paper's rule): a pair that is a copy of the kinds
    `DROPS[drop_copies]` names (`copy_kind` of its English pair) is not kept, whatever r.
    The returned row's `copy` key (not a column of the table) says which kind of copy it is.
    """
    simple = row["simple_text"] if row["language"] == "en" or not row.get("pivot_ids") else row["pivot_text"]
    r = overlap_r(row["complex_text"], simple, "en")
    keep = passes(r, threshold, comparison)
    if not keep and aligner_min is not None and row.get("crf_score") is not None:
        keep = float(row["crf_score"]) >= aligner_min
    kind = row_copy_kind(row, copy_overlap)
    if kind in DROPS[drop_copies]:
        keep = False
    return {**row, "overlap_r": r, "keep": keep, "copy": kind}


# The CRF marginal probability from which the aligner holds a pair more likely aligned than not.
ALIGNER_SURE = 0.5


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def drop_cost(decisions: Iterable[tuple[bool, float | None]]) -> dict[str, Any]:
    """What the filter costs, from each pair's (keep, CRF score): how many pairs it drops, how
    many of those the aligner held aligned (score >= ALIGNER_SURE), and the median score of the
    dropped and of the kept pairs (None without scores; bridged pairs carry their English
    pair's CRF score)."""
    pairs = dropped = 0
    scores: dict[bool, list[float]] = {True: [], False: []}
    for keep, score in decisions:
        pairs += 1
        dropped += not keep
        if score is not None:
            scores[bool(keep)].append(float(score))
    return {
        "pairs": pairs,
        "dropped": dropped,
        "dropped_aligner_sure": sum(x >= ALIGNER_SURE for x in scores[False]),
        "dropped_scored": len(scores[False]),
        "median_score_dropped": _median(scores[False]),
        "median_score_kept": _median(scores[True]),
    }


def describe_cost(cost: dict[str, Any], verb: str = "drops") -> str:
    """One sentence of `drop_cost`'s numbers (for the card and the data report). `verb`
    "drops" where the pairs were filtered out; "has" where they are still there, flagged
    `keep: false` (a data report of a config's every split)."""
    n, drop = cost["pairs"], cost["dropped"]
    if verb == "drops":
        line = f"drops {drop} of {n} pairs ({100 * drop / n if n else 0:.1f}%)"
    else:
        line = f"{verb} {drop} of {n} pairs with keep false ({100 * drop / n if n else 0:.1f}%)"
    if cost["dropped_scored"]:
        sure = cost["dropped_aligner_sure"]
        line += (
            f"; the aligner held {sure} of them ({100 * sure / cost['dropped_scored']:.1f}%) aligned "
            f"(CRF probability >= {ALIGNER_SURE}); median CRF probability "
            f"{cost['median_score_dropped']:.3f} of the dropped pairs"
        )
        if cost["median_score_kept"] is not None:
            line += f", {cost['median_score_kept']:.3f} of the kept"
    return line
