"""A Cochrane review's identity, and the reviews known benchmarks hold out.

One normaliser (`review_key`) decides whether two ids name the same review, wherever a decision
is taken by review: self-training's pool, the builder's splits, its leakage check and its
gold matching, the calibration's reviews. DOIs are case-insensitive and are written with or
without a URL prefix (`https://doi.org/`, `doi:`) and a `.pubN` version suffix; a Cochrane
review's CD (or MR) number identifies it across versions. So `cd000255`,
`10.1002/14651858.CD000255.PUB3` and `https://doi.org/10.1002/14651858.cd000255` are one
review, `CD000255`.

The benchmark lists live here, so the builder and the aligner hold out the same reviews.
"""

from __future__ import annotations

import re

__all__ = ["DEV_REVIEWS", "MC_CLEAN_TEST_REVIEWS", "review_key"]

_URL = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_VERSION = re.compile(r"\.pub\d+$", re.IGNORECASE)
# a Cochrane review number, not inside a longer word (`abcd12` is not one)
_NUMBER = re.compile(r"(?<![A-Za-z0-9])(CD|MR)(\d+)(?![0-9])", re.IGNORECASE)


def review_key(identifier: str) -> str:
    """The key two ids of one review share: the upper-case CD (or MR) number when the id holds
    one (`10.1002/14651858.CD000255.pub3` -> `CD000255`), else the upper-case DOI without URL
    prefix or `.pubN` suffix, else the stripped id upper-cased."""
    text = _VERSION.sub("", _URL.sub("", identifier.strip()))
    m = _NUMBER.search(text)
    return (m.group(1) + m.group(2)).upper() if m else text.upper()


# The CD numbers of MultiCochrane's MC-CLEAN English test pairs (en-test-with-doi.json, 22
# reviews): the released test set every paper reports on. Never trained on, not even unlabelled;
# the builder puts them in `test` in every language.
MC_CLEAN_TEST_REVIEWS = frozenset(
    {
        "CD000255", "CD003172", "CD003583", "CD003825", "CD003868", "CD003909", "CD006199",
        "CD007784", "CD009170", "CD009325", "CD009391", "CD009569", "CD009580", "CD009735",
        "CD010266", "CD010366", "CD010467", "CD010479", "CD011364", "CD011375", "CD011953",
        "CD012503",
    }
)  # fmt: skip


# The 10 hand-aligned Devaraj et al. validation reviews the aligner's calibration is fitted on
# (scripts/aligner_designs.py COCHRANE_DEV): development gold, kept out of self-training's pool;
# the builder puts them in `validation`.
DEV_REVIEWS = frozenset(
    {
        "CD003300", "CD005543", "CD006414", "CD006647", "CD006949", "CD008462", "CD009286",
        "CD010456", "CD010871", "CD012236",
    }
)  # fmt: skip
