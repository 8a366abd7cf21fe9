"""Rows of the common sentence table (docs/architecture.md) and its Arrow schema."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from medsimp.pipelines.multilingual_sentences import split_sentences

BASE_FIELDS = [
    pa.field("sentence_id", pa.string()),
    pa.field("source", pa.string()),
    pa.field("doc_id", pa.string()),
    pa.field("side", pa.string()),
    pa.field("language", pa.string()),
    pa.field("section", pa.string()),
    pa.field("sentence_index", pa.int32()),
    pa.field("char_start", pa.int32()),
    pa.field("char_end", pa.int32()),
    pa.field("text", pa.string()),
    pa.field("locator", pa.string()),
]


def sentence_schema(*extra: pa.Field) -> pa.Schema:
    """The common columns plus a source's extra columns."""
    return pa.schema(BASE_FIELDS + list(extra))


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
) -> list[dict]:
    """Split each (heading, text) section into sentences; index runs across sections."""
    rows: list[dict] = []
    for heading, text in sections:
        for sent in split_sentences(text, language):
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


def dead_letter(source: str, locator: str, reason: str, detail: str = "") -> dict:
    return {"source": source, "locator": locator, "reason": reason, "detail": detail}
