"""Rows of the common sentence table (docs/architecture.md; its schema is `medsimp.schemas`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from medsimp.text.multilingual import split_sentences


def sentence_id(source: str, doc_id: str, side: str, language: str, index: int) -> str:
    return f"{source}:{doc_id}:{side}:{language}:{index}"


def document_rows(
    source: str,
    doc_id: str,
    side: str,
    language: str,
    sections: Iterable[tuple[str, str]],
    locator: str,
    extra: Mapping[str, Any] | None = None,
    start_index: int = 0,
    splitter: str = "pysbd",
) -> list[dict]:
    """Split each (heading, text) section into sentences (`split_sentences`' `splitter`); index
    runs across sections."""
    rows: list[dict] = []
    for heading, text in sections:
        for sent in split_sentences(text, language, splitter):
            index = start_index + len(rows)
            rows.append(
                {
                    "sentence_id": sentence_id(source, doc_id, side, language, index),
                    "source": source,
                    "doc_id": doc_id,
                    "side": side,
                    "language": language,
                    "section": heading,
                    "sentence_index": index,
                    "char_start": sent.start,
                    "char_end": sent.end,
                    "text": sent.text,
                    "locator": locator,
                    **(extra or {}),
                }
            )
    return rows


def locator_key(locator: str) -> tuple[str, int, str]:
    """Sort key for `file:line` locators: line numbers in numeric order."""
    head, _, tail = locator.rpartition(":")
    return (head, int(tail), "") if tail.isdigit() else (locator, -1, "")
