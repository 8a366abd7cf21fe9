"""Baselines evaluated like DECLARE: copy-the-source and the paper's Dictionary baseline."""

from __future__ import annotations


def copy_source(sources: list[list[str]]) -> list[str]:
    """Output the source unchanged."""
    return [" ".join(s) for s in sources]


def dictionary_baseline(sources: list[list[str]], dictionary: dict[str, list[str]]) -> list[str]:
    """Replace every word that is a dictionary term with its first expansion."""
    return [" ".join(dictionary[w][0] if w in dictionary else w for w in s) for s in sources]
