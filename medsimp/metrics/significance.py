"""Paired significance for any metric with per-sentence statistics, in sacrebleu's manner.

`paired_bootstrap` follows sacrebleu 2's `_paired_bs_test` (Koehn 2004; Moses'
`bootstrap-hypothesis-difference-significance.pl`) step by step: one `default_rng(seed).choice`
of `samples` x n sentence indices shared by every metric, each resample's corpus score from its
summed statistics (`Metric.from_stats`), the observed |B - A| against the mean-centred resampled
|B - A|, p = (1 + #{> observed}) / (samples + 1). For sacrebleu's BLEU the p-value equals
`sacrebleu.compat`'s `PairedTest` (tests/test_metrics.py), except that two systems with the same score get
p = 1 (sacrebleu: 1 / (samples + 1)). Beside it: the signed difference B - A,
the 2.5 / 97.5 percentiles of the resampled signed differences, and the two-sided Wilcoxon
signed-rank p-value of the sentence scores (PLABA's test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medsimp.metrics.base import Metric, NotComputable


@dataclass
class SystemStats:
    """One system's per-sentence statistics for one metric, and its sentence scores."""

    stats: np.ndarray  # (n, k) sufficient statistics
    sentences: np.ndarray  # (n,) sentence scores (`Metric.sentence`)


def collect(metric: Metric, data) -> SystemStats:
    """The statistics of `metric` on `data`. NotComputable, naming the first sentence, when a
    sentence score is undefined (e.g. SARI on a sentence whose references are all empty): the
    paired test needs every sentence, so the metric is left out of it, with that reason."""
    values = []
    for i in range(len(data)):
        try:
            value = metric.sentence(data, i)
        except NotComputable as exc:
            raise NotComputable(f"sentence {i + 1}: {exc}") from None
        if value is None:
            raise NotComputable(f"sentence {i + 1}: its {metric.name} score is undefined")
        values.append(value)
    stats = metric.stats(data)
    return SystemStats(stats, np.array(values, dtype=float))


def paired_bootstrap(
    metrics: dict[str, tuple[Metric, SystemStats, SystemStats]], samples: int = 1000, seed: int = 12345
) -> dict[str, dict[str, float]]:
    """{metric: {delta, p_value, ci_low, ci_high, wilcoxon_p}} of B against A for each metric."""
    out: dict[str, dict[str, float]] = {}
    if not metrics:
        return out
    n = len(next(iter(metrics.values()))[1].stats)
    idxs = np.random.default_rng(seed).choice(n, size=(samples, n), replace=True)
    for name, (metric, a, b) in metrics.items():
        score_a = metric.from_stats(a.stats.sum(0), n)
        score_b = metric.from_stats(b.stats.sum(0), n)
        scores_a = np.array([metric.from_stats(s.sum(0), n) for s in a.stats[idxs]])
        scores_b = np.array([metric.from_stats(s.sum(0), n) for s in b.stats[idxs]])
        sample_diffs = np.abs(scores_b - scores_a)
        centred = sample_diffs - sample_diffs.mean()
        observed = abs(score_b - score_a)
        # sacrebleu gives two identical systems 1 / (samples + 1); a zero difference is p = 1 here
        p = 1.0 if observed == 0 else (int(np.sum(centred > observed)) + 1) / (samples + 1)
        signed = scores_b - scores_a
        out[name] = {
            "delta": round(float(score_b - score_a), 6),
            "p_value": _significant(p),
            "ci_low": round(float(np.percentile(signed, 2.5)), 6),
            "ci_high": round(float(np.percentile(signed, 97.5)), 6),
            "wilcoxon_p": wilcoxon_p(a.sentences, b.sentences),
        }
    return out


def wilcoxon_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired scores (scipy, zero differences dropped);
    1.0 when every pair is tied."""
    from scipy.stats import wilcoxon

    if np.all(a == b):
        return 1.0
    return _significant(float(wilcoxon(b, a).pvalue))


def _significant(p: float) -> float:
    """A p-value to 6 significant digits (not 6 decimals: a small p never becomes 0.0 in the JSON)."""
    return float(f"{p:.6g}")


def format_p(p: float, samples: int | None = None) -> str:
    """A p-value as printed: `< 0.001` below 0.001 (never `0`), else 3 significant digits."""
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3g}"
