"""Lexical resources for DECLARE and the metrics: the abbreviation dictionary,
the common-word list and an offline English lemmatizer."""
from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path

COMMON_WORDS_N = 3000


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


@functools.lru_cache(maxsize=1)
def _lemma_table():
    from spacy.lookups import load_lookups

    return load_lookups("en", ["lemma_lookup"]).get_table("lemma_lookup")


def lemma(word: str) -> str:
    """Lowercased lookup lemma (spaCy's English lemma table; no POS needed, works offline)."""
    w = word.lower()
    return _lemma_table().get(w, w)


def build_common_words(n: int = COMMON_WORDS_N) -> list[str]:
    """The `n` most frequent English lemmas by wordfreq (alphabetic words, lookup lemmas)."""
    import wordfreq

    out: list[str] = []
    seen: set[str] = set()
    for word in wordfreq.top_n_list("en", n * 10):
        lem = lemma(word)
        if lem.isalpha() and lem not in seen:
            seen.add(lem)
            out.append(lem)
            if len(out) == n:
                break
    return out


def load_common_words(path: str | Path) -> set[str]:
    """The common-word list (one word per line, `#` comments allowed), lowercased."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"common-word list {p} not found (top-{COMMON_WORDS_N} wordfreq lemmas)")
    return {line.strip().lower() for line in p.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")}


def stopwords() -> set[str]:
    """NLTK's English stopwords (built offline by medsimp.resources)."""
    from nltk.corpus import stopwords as sw

    from medsimp.resources import ensure_nltk_data

    ensure_nltk_data()
    return set(sw.words("english"))
