"""Streaming reader for MIMIC-III NOTEEVENTS and MIMIC-IV-Note discharge/radiology CSV files.

Plain Python (no Beam), reused by every job that reads MIMIC notes::

    for rec in iter_records("NOTEEVENTS.csv.gz", categories={"discharge summary"}):
        if isinstance(rec, Note): ...        # a kept note
        elif isinstance(rec, Reject): ...    # a broken row: rec.reason, rec.detail (no note text)
        else: ...                            # Filtered: a valid row not wanted (rec.reason)

How records are found (the TEXT field is quoted and full of newlines and commas):
a record starts at every line that looks like the start of a row of the detected
schema (MIMIC-III: ``ROW_ID,SUBJECT_ID,HADM_ID,CHARTDATE``; MIMIC-IV:
``note_id,subject_id``); between two such lines the standard CSV rule applies. A row
with a broken quote therefore costs only itself, and a reader can start at any byte
offset of an uncompressed file by skipping to the next such line: `plan_ranges` cuts a
file into byte ranges that several workers read in parallel and that together yield
exactly the records of a sequential read. Gzip streams are not seekable, so a ``.gz``
file is one range (offsets then count decompressed bytes).

Cost: a row whose category is not kept is classified from its leading fields alone
(its TEXT is not decoded), so filtered rows cost little; its quote count is still
checked, so a row with an unbalanced quote is rejected whatever its category. Rejects
carry a byte offset, field names and lengths, never note text.
"""
from __future__ import annotations

import contextlib
import csv
import gzip
import io
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, cast

CHUNK = 1 << 22  # bytes read at a time
MAX_RECORD_BYTES = 1 << 24  # a longer record is rejected (guards memory on garbage input)
csv.field_size_limit(max(csv.field_size_limit(), MAX_RECORD_BYTES))  # long notes are valid


@dataclass(frozen=True, slots=True)
class Note:
    """One kept note. `note_id` is ROW_ID (MIMIC-III) or note_id (MIMIC-IV)."""

    note_id: str
    subject_id: int
    hadm_id: int | None
    category: str
    description: str
    chartdate: str
    text: str
    locator: str


@dataclass(frozen=True, slots=True)
class Reject:
    """A row that could not be used; `detail` holds field names, lengths and offsets only."""

    source: str
    locator: str
    reason: str
    detail: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"source": self.source, "locator": self.locator, "reason": self.reason,
                "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Filtered:
    """A valid row that is not wanted: reason `category` or `iserror`."""

    reason: str


FILTERED_CATEGORY = Filtered("category")
FILTERED_ISERROR = Filtered("iserror")
Record = Note | Reject | Filtered

_FIELD = rb'(?:"[^"]*(?:""[^"]*)*"|[^,"\r\n]*)'


@dataclass(frozen=True)
class Schema:
    """A known note table layout."""

    name: str
    columns: tuple[str, ...]
    record_start: re.Pattern  # a newline before a row start; group 1: the raw category, if seen
    prefix: re.Pattern  # captures the fields before TEXT

    @property
    def text_index(self) -> int:
        return len(self.columns) - 1


MIMIC3 = Schema(
    "mimic3",
    ("ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CHARTTIME", "STORETIME", "CATEGORY",
     "DESCRIPTION", "CGID", "ISERROR", "TEXT"),
    re.compile(rb'\n(?="?\d+"?,"?\d+"?,"?[\d.]*"?,"?\d{4}-\d\d-\d\d'
               rb'(?:[^,\n]*,[^,\n]*,[^,\n]*,("[^"\n]*"|[^,"\n]*),)?)'),
    re.compile(rb",".join([rb"(" + _FIELD + rb")"] * 10) + rb","),
)
MIMIC4 = Schema(
    "mimic4",
    ("note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"),
    re.compile(rb'\n(?="?\d+-[A-Z]{2}-\d+"?,"?\d+"?,(?:[^,\n]*,("?[A-Z]{2}"?),)?)'),
    re.compile(rb",".join([rb"(" + _FIELD + rb")"] * 7) + rb","),
)
SCHEMAS = (MIMIC3, MIMIC4)
# MIMIC-IV note_type -> the MIMIC-III category it corresponds to.
MIMIC4_TYPES = {"DS": "Discharge summary", "AD": "Discharge summary",
                "RR": "Radiology", "AR": "Radiology"}


class NoteFileError(ValueError):
    """The file is not a note table this reader knows (bad header)."""


def normalise_category(value: str) -> str:
    """Category names compare stripped and lower-cased ("Physician " == "physician")."""
    return value.strip().lower()


def detect_schema(header: bytes) -> Schema:
    """The schema whose column names match the header line (quotes and case ignored)."""
    names = tuple(c.strip().upper() for c in next(csv.reader([header.decode("utf-8", "replace")]),
                                                   []))
    for schema in SCHEMAS:
        if names == tuple(c.upper() for c in schema.columns):
            return schema
    raise NoteFileError(f"unknown note table header with {len(names)} columns: "
                        f"{', '.join(names[:12])}")


def plan_ranges(path: str, size: int, parts: int) -> list[tuple[int, int | None]]:
    """Byte ranges for `parts` parallel readers (one range for gzip or tiny files)."""
    if path.endswith(".gz") or parts <= 1 or size < CHUNK:
        return [(0, None)]
    step = -(-size // parts)
    return [(i * step, None if i == parts - 1 else (i + 1) * step) for i in range(parts)]


def _unquote(value: bytes) -> bytes:
    if value[:1] == b'"':
        return value[1:-1].replace(b'""', b'"')
    return value


class _Reader:
    """Cuts one byte range of a note file into records and classifies them."""

    def __init__(self, path: str, categories: Iterable[str] | None, source: str,
                 opener: Callable[[str], BinaryIO]):
        self.path, self.opener = path, opener
        self.name = source or os.path.basename(path)
        self.categories = None if categories is None else {normalise_category(c) for c in categories}
        self._wanted: dict[bytes, bool] = {}

    def records(self, start: int, end: int | None) -> Iterator[Record]:
        with contextlib.ExitStack() as stack:
            fh = stack.enter_context(self.opener(self.path))
            if self.path.endswith(".gz"):
                fh = cast(BinaryIO, stack.enter_context(gzip.GzipFile(fileobj=fh, mode="rb")))
            header = fh.readline(1 << 16)
            schema = detect_schema(header)
            data_start = len(header)
            if start > data_start:
                fh.seek(start - 1)
                base, buf, cur = start - 1, b"", -1
            else:  # a virtual newline before the first row; the first row starts in sync
                base, buf, cur = data_start - 1, b"\n", 1
            yield from self._scan(fh, schema, base, buf, cur, end)

    def _scan(self, fh: BinaryIO, schema: Schema, base: int, buf: bytes, cur: int,
              end: int | None) -> Iterator[Record]:
        """Yield the records that start before `end`, from the current one (`cur`, the
        buffer index of a record start) or, when not in sync (`cur` = -1), from the first
        record start found. `base` is the file offset of buf[0]."""
        finditer = schema.record_start.finditer
        eof, pos, cat = False, max(cur, 0), None
        while True:
            for m in finditer(buf, pos):
                nxt = m.end()
                if cur >= 0:
                    yield self._classify(schema, buf, cur, nxt, base, cat)
                if end is not None and base + nxt >= end:
                    return
                cur, cat = nxt, m.group(1)
            pos = len(buf)
            if eof:
                if 0 <= cur < len(buf):
                    yield self._classify(schema, buf, cur, len(buf), base, cat)
                return
            if cur >= 0 and len(buf) - cur > MAX_RECORD_BYTES:
                yield Reject(self.name, f"{self.name}@{base + cur}", "record_too_large",
                             {"bytes": len(buf) - cur})
                cur = -1
            keep = cur if cur >= 0 else max(len(buf) - 256, 0)  # room for the lookahead
            base, buf, pos = base + keep, buf[keep:], 0
            cur = 0 if cur >= 0 else -1
            chunk = fh.read(CHUNK)
            eof = not chunk
            buf += chunk

    def _classify(self, schema: Schema, buf: bytes, a: int, b: int, base: int,
                  raw_category: bytes | None) -> Record:
        """Fast path for rows of unwanted categories: no copy, no decode."""
        if raw_category is not None and self.categories is not None:
            wanted = self._wanted.get(raw_category)
            if wanted is None:
                name = _unquote(raw_category).decode("utf-8", "replace")
                name = MIMIC4_TYPES.get(name, name) if schema is MIMIC4 else name
                wanted = self._wanted[raw_category] = normalise_category(name) in self.categories
            if not wanted:
                if buf.count(b'"', a, b) % 2:
                    return Reject(self.name, f"{self.name}@{base + a}", "unparseable",
                                  {"problem": "unbalanced quote", "bytes": b - a})
                return FILTERED_CATEGORY
        return self._record(schema, buf[a:b], base + a)

    def _record(self, schema: Schema, raw: bytes, offset: int) -> Record:
        locator = f"{self.name}@{offset}"
        if raw.count(b'"') % 2:
            return Reject(self.name, locator, "unparseable", {"problem": "unbalanced quote",
                                                               "bytes": len(raw)})
        head = schema.prefix.match(raw)
        if head is None:
            return Reject(self.name, locator, "unparseable", {"problem": "leading fields",
                                                               "bytes": len(raw)})
        if schema is MIMIC3:
            category = _unquote(head.group(7)).decode("utf-8", "replace")
            iserror = _unquote(head.group(10)).strip()
        else:
            category = MIMIC4_TYPES.get(_unquote(head.group(4)).decode("utf-8", "replace"),
                                        _unquote(head.group(4)).decode("utf-8", "replace"))
            iserror = b""
        if self.categories is not None and normalise_category(category) not in self.categories:
            return FILTERED_CATEGORY
        if iserror == b"1":
            return FILTERED_ISERROR
        return self._parse(schema, raw, offset, locator)

    def _parse(self, schema: Schema, raw: bytes, offset: int, locator: str) -> Record:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return self._bad_utf8(schema, raw, offset, locator, exc)
        try:
            rows = [r for r in csv.reader(io.StringIO(text, newline=""), strict=True) if r]
        except csv.Error as exc:
            return Reject(self.name, locator, "unparseable",
                          {"problem": str(exc).split(":")[0][:80], "bytes": len(raw)})
        if len(rows) != 1:
            return Reject(self.name, locator, "unparseable",
                          {"problem": f"{len(rows)} rows in one record", "bytes": len(raw)})
        row = rows[0]
        if len(row) != len(schema.columns):
            return Reject(self.name, locator, "wrong_field_count",
                          {"expected": len(schema.columns), "got": len(row)})
        return self._note(schema, row, locator)

    def _bad_utf8(self, schema: Schema, raw: bytes, offset: int, locator: str,
                  exc: UnicodeDecodeError) -> Reject:
        row = next(csv.reader(io.StringIO(raw.decode("utf-8", "surrogateescape"), newline="")), [])
        names = [schema.columns[i] if i < len(schema.columns) else f"field{i}"
                 for i, v in enumerate(row) if re.search("[\udc80-\udcff]", v)]
        return Reject(self.name, locator, "bad_utf8",
                      {"byte_offset": offset + exc.start, "fields": names})

    def _note(self, schema: Schema, row: list[str], locator: str) -> Record:
        text = row[schema.text_index]
        if not text.strip():
            return Reject(self.name, locator, "missing_text", {"field": schema.columns[-1]})
        try:
            subject = int(row[1])
            hadm = int(float(row[2])) if row[2].strip() else None
        except ValueError:
            bad = "SUBJECT_ID/HADM_ID" if schema is MIMIC3 else "subject_id/hadm_id"
            return Reject(self.name, locator, "bad_field",
                          {"fields": bad, "lengths": [len(row[1]), len(row[2])]})
        if schema is MIMIC3:
            return Note(row[0], subject, hadm, row[6].strip(), row[7].strip(), row[3],
                        text, locator)
        return Note(row[0], subject, hadm, MIMIC4_TYPES.get(row[3], row[3]), row[3],
                    row[5][:10], text, locator)


def iter_records(path: str, *, categories: Iterable[str] | None = ("Discharge summary",),
                 byte_range: tuple[int, int | None] = (0, None), source: str = "",
                 opener: Callable[[str], BinaryIO] | None = None) -> Iterator[Record]:
    """Yield every record of `path` (within `byte_range`) as Note, Reject or Filtered.

    `categories`: kept categories (case and surrounding spaces ignored; None keeps all).
    MIMIC-IV note types map to MIMIC-III names (DS/AD -> Discharge summary, RR/AR -> Radiology).
    `source`: the file name used in locators (default: the basename of `path`).
    `opener`: opens `path` for binary reading (default: `open(path, "rb")`; pass e.g.
    Beam's `FileSystems.open` for remote files). Raises NoteFileError on an unknown header.
    """
    reader = _Reader(path, categories, source, opener or (lambda p: open(p, "rb")))
    return reader.records(*byte_range)


def iter_notes(path: str, **kwargs) -> Iterator[Note | Reject]:
    """`iter_records` without the Filtered markers."""
    return (r for r in iter_records(path, **kwargs) if not isinstance(r, Filtered))
