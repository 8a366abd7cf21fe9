"""Params `filter`."""

from __future__ import annotations

from typing import Literal

from medsimp.sections.base import Comparison, Fraction, Positive, Section


class Filter(Section):
    input: str = "out/align"
    output: str = "out/filter"
    threshold: Fraction = 0.5
    comparison: Comparison = "gt"
    rule: Literal["overlap", "overlap_or_aligner"] = "overlap"
    aligner_min: Fraction = 0.9
    drop_copies: Literal["none", "identical", "near_copy"] = "none"
    copy_overlap: Fraction = 0.9  # a near copy: each side's word set is this share of the other's
    num_shards: Positive = 1

    def aligner_floor(self) -> float | None:
        """The CRF probability that keeps a pair the overlap drops (rule overlap_or_aligner),
        None under the paper's rule."""
        return float(self.aligner_min) if self.rule == "overlap_or_aligner" else None
