"""Corpus statistics of a linked table in the style of Cao et al. (2020), Table 2.

Per side (expert = complex, layman = simple): sentences, vocabulary (distinct lowercased
word tokens), concept vocabulary (distinct CUIs), mean tokens and concepts per sentence, concept
mentions (`annotations`; not the paper's "#Annotation", which counts parallel annotations, see
`medsimp.corpora.msd.table2_statistics`) and mean sentence-level readability (the paper's "Avg.
Readability" is the mean of the `fkgl`, `gunning_fog` and `coleman_liau` rows); plus the
layman/expert ratio of every row.
"""

from __future__ import annotations

import glob
import os
import sys
from statistics import fmean
from typing import Any

from medsimp.atomic import canonical_json
from medsimp.errors import InputError

ROWS = (
    "sentences",
    "vocabulary",
    "concept_vocabulary",
    "tokens_per_sentence",
    "concepts_per_sentence",
    "annotations",
    "fkgl",
    "gunning_fog",
    "coleman_liau",
    "ari",
)
SIDES = (("complex", "expert"), ("simple", "layman"))


def load_rows(path: str) -> list[dict]:
    import pyarrow.parquet as pq

    files = sorted(glob.glob(os.path.join(path, "part-*.parquet")))
    if not files:
        raise FileNotFoundError(f"no linked table (part-*.parquet) in {path}: run `medsimp link` first")
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def languages(rows: list[dict]) -> list[str]:
    """The languages of the layman (simple) side, sorted."""
    return sorted({r["language"] for r in rows if r["side"] == "simple"})


def language_rows(rows: list[dict], language: str) -> list[dict]:
    """The layman sentences in `language` and their expert counterparts: the expert sentences
    in `language`, or, when the expert side is in another language (MultiCochrane: English
    abstracts, summaries in es/fr/fa), the expert sentences of the same documents."""
    simple = [r for r in rows if r["side"] == "simple" and r["language"] == language]
    complex_ = [r for r in rows if r["side"] == "complex" and r["language"] == language]
    if not complex_:
        docs = {r["doc_id"] for r in simple}
        complex_ = [r for r in rows if r["side"] == "complex" and r["doc_id"] in docs]
    return complex_ + simple


def side_stats(rows: list[dict]) -> dict[str, Any]:
    from medsimp.text.readability import tokens

    vocab: set[str] = set()
    cuis: set[str] = set()
    n_tokens = n_concepts = 0
    for r in rows:
        toks = [t.lower() for t in tokens(r["text"])]
        vocab.update(toks)
        n_tokens += len(toks)
        n_concepts += len(r["concepts"] or [])
        cuis.update(c["cui"] for c in r["concepts"] or [])
    out: dict[str, Any] = {
        "sentences": len(rows),
        "vocabulary": len(vocab),
        "concept_vocabulary": len(cuis),
        "tokens_per_sentence": round(n_tokens / len(rows), 4) if rows else None,
        "concepts_per_sentence": round(n_concepts / len(rows), 4) if rows else None,
        "annotations": n_concepts,
    }
    for name in ("fkgl", "gunning_fog", "coleman_liau", "ari"):
        values = [
            r["readability"][name] for r in rows if r["readability"] and r["readability"][name] is not None
        ]
        out[name] = round(fmean(values), 4) if values else None
    return out


def corpus_stats(rows: list[dict]) -> dict[str, Any]:
    """{"expert": {...}, "layman": {...}, "ratio": {...}} (ratio = layman / expert)."""
    table = {label: side_stats([r for r in rows if r["side"] == side]) for side, label in SIDES}
    table["ratio"] = {
        k: (
            round(table["layman"][k] / table["expert"][k], 4)
            if table["expert"][k] and table["layman"][k] is not None
            else None
        )
        for k in ROWS
    }
    return table


def print_table(title: str, table: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Table(title=title)
    for col in ("", "expert", "layman", "layman/expert"):
        out.add_column(col, justify="right" if col else "left")
    for key in ROWS:
        out.add_row(
            key,
            *("-" if table[c][key] is None else str(table[c][key]) for c in ("expert", "layman", "ratio")),
        )
    Console().print(out)


def show(table: str, language: str | None = None, as_json: bool = False) -> None:
    """`medsimp stats`: print the statistics of the linked table `table` (one table per
    language, never pooled; `language`: only that one) as tables, or canonical JSON."""
    rows = load_rows(table)
    langs = [language] if language else languages(rows)
    if language and language not in languages(rows):
        raise InputError(
            f"{table} has no layman sentences in {language!r} (it has {', '.join(languages(rows))})"
        )
    tables = {lang: corpus_stats(language_rows(rows, lang)) for lang in langs}
    if as_json:  # one language: its table; several: one table per language, never pooled
        sys.stdout.write(canonical_json(tables[langs[0]] if len(langs) == 1 else tables))
    else:
        for lang, one in tables.items():
            print_table(f"{table} ({lang})", one)
