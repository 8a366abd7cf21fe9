"""Lexical resources for DECLARE and the metrics: the abbreviation dictionary,
the common-word list and an offline English lemmatizer (the last two shared
with the notes selection in `pipelines.text.selection`). Stop words are the toolkit's
(`medsimp.text.stopwords`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from medsimp.text.lemmas import lemmatize


def load_dictionary(paths: Sequence[str | Path]) -> dict[str, list[str]]:
    """Merge `abbreviation -> [expansions]` JSON files (keys lowercased, order kept, no duplicates).

    Missing files are an error: a silently empty dictionary would make DECLARE a copy model.
    """
    merged: dict[str, list[str]] = {}
    for path in paths:
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"abbreviation dictionary {p} not found")
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{p}: expected a JSON object abbreviation -> list of expansions")
        for key, values in data.items():
            values = [values] if isinstance(values, str) else list(values)
            slot = merged.setdefault(key.lower().strip(), [])
            for v in values:
                v = " ".join(str(v).lower().split())
                if v and v not in slot:
                    slot.append(v)
    return {k: v for k, v in sorted(merged.items()) if v}


def lemma(word: str) -> str:
    """Lowercased lookup lemma (spaCy's English lemma table; no POS needed, works offline)."""
    return lemmatize(word)


def load_common_words(path: str | Path) -> set[str]:
    """The common-word list (EF's top 3000 when given; the packaged stand-in otherwise), lowercased."""
    from pipelines.text.selection import load_common_words as load

    if not Path(path).exists():
        raise FileNotFoundError(f"common-word list {path} not found")
    return load(path)
