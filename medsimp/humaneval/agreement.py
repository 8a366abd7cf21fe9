"""Inter-rater agreement: Krippendorff's alpha with MASI distance, and Randolph's kappa."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def alpha_masi(data: Iterable[tuple[str, str, Any]]) -> float | None:
    """Krippendorff's alpha over (rater, unit, set-valued answer) with MASI distance
    (Passonneau 2006), computed by nltk's AnnotationTask; None with fewer than two raters
    on any unit."""
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import masi_distance

    rows = sorted(data, key=lambda r: (r[1], r[0]))
    per_unit = Counter(unit for _, unit, _ in rows)
    if not rows or max(per_unit.values()) < 2:
        return None
    return float(AnnotationTask(data=rows, distance=masi_distance).alpha())


def randolph_kappa(units: Mapping[Any, Sequence[Any]], n_categories: int) -> float | None:
    """Randolph's (2005) free-marginal multirater kappa: (P_o - 1/q) / (1 - 1/q), where P_o
    averages, over units with >= 2 ratings, the share of agreeing rater pairs
    sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)) (Fleiss's observed agreement)."""
    if n_categories < 2:
        raise ValueError("Randolph's kappa needs at least two categories")
    shares = []
    for ratings in units.values():
        n = len(ratings)
        if n < 2:
            continue
        shares.append(sum(c * (c - 1) for c in Counter(ratings).values()) / (n * (n - 1)))
    if not shares:
        return None
    p_o = sum(shares) / len(shares)
    p_e = 1.0 / n_categories
    return (p_o - p_e) / (1.0 - p_e)
