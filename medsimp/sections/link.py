"""Params `link`."""

from __future__ import annotations

from typing import Literal

from medsimp.sections.base import Count, Fraction, Positive, Section


class Link(Section):
    num_shards: Positive = 1
    overlapping_criteria: Literal["score", "length"] = "score"
    threshold: Fraction = 0.7
    similarity_name: Literal["dice", "jaccard", "cosine", "overlap"] = "jaccard"
    window: Count = 5
    min_match_length: Count = 3
    reject_negation_flips: bool = True
    # QuickUMLS's own default (quickumls.constants.ACCEPTED_SEMTYPES), which Cao et al. ran
    accepted_semtypes: list[str] | None = [
        "T023",
        "T029",
        "T031",
        "T033",
        "T034",
        "T037",
        "T039",
        "T040",
        "T041",
        "T046",
        "T047",
        "T048",
        "T058",
        "T059",
        "T060",
        "T061",
        "T067",
        "T074",
        "T121",
        "T130",
        "T170",
        "T184",
        "T191",
        "T195",
        "T200",
        "T201",
        "T203",
    ]
