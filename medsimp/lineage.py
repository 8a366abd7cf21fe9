"""Data lineage carried in every table's Parquet/Arrow schema metadata.

Every table a stage writes records which sources its rows derive from under the schema
metadata key `medsimp.lineage` (a JSON list of tags, sorted). Lineage is the union of the
inputs' lineage and passes through every stage. Guards (publish, LLM egress) read it from
the data itself, never from a flag: a table without lineage is treated as restricted.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable

KEY = b"medsimp.lineage"
# Tags for PhysioNet-credentialed sources. Anything starting with "mimic" is restricted.
MIMIC_III = "mimic-iii"
MIMIC_IV_NOTE = "mimic-iv-note"
MIMIC = "mimic"  # a MIMIC note table of either release (the notes and radiology jobs)
# MIMIC's de-identification placeholders, e.g. [**Hospital1 18**]: a second line of defence.
MIMIC_SHAPE = re.compile(r"\[\*\*[^\n]{0,200}?\*\*\]")


def normalise(tags: Iterable[str]) -> tuple[str, ...]:
    """Sorted, de-duplicated, lower-case tags."""
    return tuple(sorted({str(t).strip().lower() for t in tags if str(t).strip()}))


def metadata(tags: Iterable[str]) -> dict[bytes, bytes]:
    """Schema metadata entry for `tags` (merge it into a pyarrow schema's metadata)."""
    return {KEY: json.dumps(list(normalise(tags))).encode("utf-8")}


def with_lineage(schema, tags: Iterable[str]):
    """A pyarrow schema with `tags` added to its lineage metadata."""
    meta = dict(schema.metadata or {})
    meta.update(metadata(set(from_metadata(meta) or ()) | set(normalise(tags))))
    return schema.with_metadata(meta)


def from_metadata(meta: dict[bytes, bytes] | None) -> tuple[str, ...] | None:
    """The tags in a schema's metadata, or None when it has no (valid) lineage entry."""
    if not meta or KEY not in meta:
        return None
    try:
        value = json.loads(meta[KEY].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        return None
    return normalise(value)


def union(*lineages: Iterable[str] | None) -> tuple[str, ...] | None:
    """Lineage of data derived from all of `lineages`; None if any input's is unknown."""
    out: set[str] = set()
    for tags in lineages:
        if tags is None:
            return None
        out.update(tags)
    return normalise(out)


def is_restricted(tags: Iterable[str] | None) -> bool:
    """True for MIMIC-derived data, and for data whose lineage is unknown (None)."""
    if tags is None:
        return True
    return any(t.startswith("mimic") for t in normalise(tags))


def has_mimic_shapes(text: str) -> bool:
    """True if `text` contains a MIMIC de-identification placeholder."""
    return bool(MIMIC_SHAPE.search(text))


def read_lineage(path) -> tuple[str, ...] | None:
    """Lineage of a Parquet file, or the union over every `*.parquet` below a folder.

    None (unknown, so restricted) when no Parquet file is found or any file lacks lineage.
    """
    from pathlib import Path

    import pyarrow.parquet as pq

    root = Path(path)
    files = sorted(root.rglob("*.parquet")) if root.is_dir() else [root]
    if not files:
        return None
    found = []
    for file in files:
        try:
            found.append(from_metadata(pq.read_schema(file).metadata))
        except (OSError, ValueError):
            return None
    return union(*found)
