"""Sentence boundaries left inside one split sentence: the splitter's outlier check, shared by
the data report (`medsimp.report.data`) and scripts/check_real_data.py.

A boundary is a full stop (or ! ?) after a word ending in three lower-case letters, a `%`, a
closing bracket or a decimal, an optional closing quote, then a capitalised word; abbreviations
("et al.", "e.g.", "vs.", "Fig.") are not boundaries. It counts only outside every bracket pair
the sentence closes: a sentence the authors wrote inside brackets ("(...; 2 deaths amongst 98
children. One additional death ...)") is theirs, so it is not the splitter's outlier; one after
a bracket the sentence never closes is.
"""

from __future__ import annotations

import re

BOUNDARY = re.compile(r"(?:[a-z]{3}|[%)\]]|\d\.\d+)[.!?][\"'\u201d]?\s+(?=[A-Z][a-z]+\b)")


def closed_bracket_spans(text: str) -> list[tuple[int, int]]:
    """[open, close] character offsets of the bracket pairs that text closes."""
    pairs, stack = [], []
    for i, ch in enumerate(text):
        if ch in "([{":
            stack.append(i)
        elif ch in ")]}" and stack:
            pairs.append((stack.pop(), i))
    return pairs


def internal_boundaries(text: str) -> int:
    """Sentence boundaries inside one sentence, outside the bracket pairs it closes."""
    pairs = closed_bracket_spans(text)
    return sum(not any(a < m.start() < b for a, b in pairs) for m in BOUNDARY.finditer(text, 1))
