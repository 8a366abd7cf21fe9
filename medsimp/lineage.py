"""Data lineage carried in every table's Parquet/Arrow schema metadata.

Every table a stage writes records which sources its rows derive from under the schema
metadata key `medsimp.lineage` (a JSON list of tags, sorted). Lineage is the union of the
inputs' lineage and passes through every stage. Guards (publish, LLM egress) read it from
the data itself, never from a flag: a table without lineage is treated as restricted.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from medsimp.markers import marker_of

KEY = b"medsimp.lineage"
# Tags for PhysioNet-credentialed sources. Anything starting with "mimic" is restricted.
MIMIC_III = "mimic-iii"
MIMIC_IV_NOTE = "mimic-iv-note"
MIMIC = "mimic"  # a MIMIC note table whose release is not known
UNKNOWN = "unknown"  # recorded for outputs derived from data whose lineage is unknown
# Sources that may leave the machine: every other tag (a typo, a look-alike of "mimic") is
# restricted, so an edited lineage must name a public source exactly to pass.
PUBLIC = frozenset({"cochrane", "msd", "plaba"})
# MIMIC's de-identification placeholders, a second line of defence: MIMIC-III's
# [**Hospital1 18**] (spaces, markdown backslashes, full-width forms tolerated; across lines and
# up to 4,096 characters inside, issue 35 item 17: one spanning a newline or over 256 passed) and
# MIMIC-IV-Note's "___" standing alone. Searched after `_fold`.
MIMIC_SHAPE = re.compile(
    r"\[\s*\*\s*\*[\s\S]{0,4096}?\*\s*\*\s*\]"
    r"|(?:^|[\s(:/])___(?=$|[\s.,;:)/])"
)
# The same shapes in RE2 syntax (pyarrow.compute), for Parquet columns scanned in bulk.
MIMIC_SHAPE_RE2 = (  # RE2 is linear whatever the distance: no bound needed
    r"\[\s*\*\s*\*[\s\S]*?\*\s*\*\s*\]"
    r"|(?:^|[\s(:/])___(?:$|[\s.,;:)/])"
)
# Removed before matching: NUL (UTF-16 text stored as UTF-8), invisible format characters
# and markdown backslashes, each of which could split a placeholder.
INVISIBLE = "\x00\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\\"
INVISIBLE_RE2 = r"[\x{0}\x{ad}\x{200b}-\x{200f}\x{2060}\x{feff}\\]"
_DROP = str.maketrans("", "", INVISIBLE)


def _fold(text: str) -> str:
    """`text` with look-alike forms folded (NFKC, case) and INVISIBLE characters removed."""
    return unicodedata.normalize("NFKC", text.translate(_DROP)).casefold()


def normalise(tags: Iterable[str]) -> tuple[str, ...]:
    """Sorted, de-duplicated, folded tags (NFKC, lower case, no surrounding space)."""
    return tuple(sorted({_fold(str(t)).strip() for t in tags if str(t).strip()}))


def metadata(tags: Iterable[str]) -> dict[bytes, bytes]:
    """Schema metadata entry for `tags` (merge it into a pyarrow schema's metadata)."""
    return {KEY: json.dumps(list(normalise(tags))).encode("utf-8")}


def with_lineage(schema, tags: Iterable[str]):
    """A pyarrow schema with `tags` added to its lineage metadata."""
    meta = dict(schema.metadata or {})
    meta.update(metadata(set(from_metadata(meta) or ()) | set(normalise(tags))))
    return schema.with_metadata(meta)


def describe(tags: Iterable[str] | None) -> str:
    """Tags for a message: known ones by name, others only counted (a tag is user data)."""
    if tags is None:
        return "unknown"
    known = PUBLIC | {MIMIC, MIMIC_III, MIMIC_IV_NOTE, UNKNOWN}
    tags = normalise(tags)
    names = [t for t in tags if t in known]
    other = len(tags) - len(names)
    return ", ".join(names + ([f"{other} unlisted tag(s)"] if other else [])) or "none"


def marker_tags(tags: Iterable[str] | None) -> list[str]:
    """Tags to record for an output derived from `tags` (UNKNOWN when it is unknown)."""
    return list(normalise(tags)) if tags is not None else [UNKNOWN]


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
    """True for MIMIC-derived data (any `mimic*` tag), data whose lineage is unknown (None)
    or empty, and data with any tag outside PUBLIC."""
    tags = normalise(tags) if tags is not None else ()
    return not tags or any(t.startswith("mimic") or t not in PUBLIC for t in tags)


def has_mimic_shapes(text: str) -> bool:
    """True if `text` contains a MIMIC de-identification placeholder."""
    return bool(MIMIC_SHAPE.search(_fold(text)))


_NO_MARKER = ("<no marker lineage>",)


def marker_lineage(path) -> tuple[str, ...] | None:
    """Lineage recorded in the marker of the output folder holding `path` (the nearest
    `.medsimp-output` at or above it): tags, None (recorded as unknown), or _NO_MARKER."""
    here = Path(path).absolute()
    for folder in ([here] if here.is_dir() else []) + list(here.parents):
        marker = marker_of(folder)
        if marker is not None and not marker.get("writing"):  # a temp folder's: read past it
            if "lineage" not in marker:
                return _NO_MARKER
            value = marker["lineage"]
            ok = isinstance(value, list) and all(isinstance(t, str) for t in value)
            return normalise(value) if ok else None
    return _NO_MARKER


def read_lineage(path) -> tuple[str, ...] | None:
    """Lineage of a Parquet file, or the union over every `*.parquet` below a folder, joined
    with the lineage in the marker of the output folder holding it (all there is for JSONL
    or CSV outputs). None (unknown, so restricted) when neither is found or a table lacks it.
    """
    import pyarrow.parquet as pq

    root = Path(path)
    files = sorted(root.rglob("*.parquet")) if root.is_dir() else [root] if root.suffix == ".parquet" else []
    marked = marker_lineage(root)
    found = [] if marked is _NO_MARKER else [marked]
    if not files and not found:
        return None
    for file in files:
        try:
            found.append(from_metadata(pq.read_schema(file).metadata))
        except (OSError, ValueError):
            return None
    return union(*found)


def strings_have_mimic_shapes(array) -> bool:
    """True if a pyarrow string array (any string type) holds a MIMIC placeholder."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(array) == 0:
        return False
    array = array.cast(pa.large_string())
    array = pc.utf8_normalize(pc.replace_substring_regex(array, INVISIBLE_RE2, ""), "NFKC")
    return bool(pc.any(pc.match_substring_regex(array, MIMIC_SHAPE_RE2)).as_py())
