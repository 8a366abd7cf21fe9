"""Streaming reader for MIMIC-III NOTEEVENTS and MIMIC-IV-Note discharge/radiology CSV files.

Plain Python (no Beam), reused by every job that reads MIMIC notes::

    check_file("NOTEEVENTS.csv.gz")          # header and whole-file faults: NoteFileError
    for rec in iter_records("NOTEEVENTS.csv.gz", categories={"discharge summary"}):
        if isinstance(rec, Note): ...        # a kept note
        elif isinstance(rec, Reject): ...    # a bad row: rec.reason, rec.detail (no note text)
        else: ...                            # Filtered: a valid row not wanted (rec.reason)

Record boundaries follow the CSV grammar (RFC 4180): a row ends at a newline outside
quotes, so a quoted TEXT with newlines, commas, doubled quotes or a line that looks like
the start of a row stays one note. The file's newline convention (LF, CRLF or CR, taken
from the header line) is also applied to TEXT, which is given back with LF newlines; a
UTF-8 BOM is skipped. Only a row that breaks the grammar (a stray quote, a quote never
closed) is resynchronised heuristically: it ends at the next line that looks like the start
of a row of the detected schema, so it costs only itself.

Every field is checked: ids are digits within the int64 range of the output columns
(`id_out_of_range` otherwise), dates have the ISO shape, TEXT is non-blank UTF-8. A row
longer than MAX_RECORD_BYTES is skipped by the grammar without being held in memory
(`record_too_large`); a TEXT longer than `max_text_chars` is `text_too_long`. Any other failure inside one row becomes a `Reject` with reason
`internal_error`. Rejects carry the file name, a byte offset, field names and lengths, and
the raw row as data (`raw`), never text in `reason`/`detail`; NoteFileError messages name
the file and the problem, never content.

`plan_ranges` cuts an uncompressed file at record starts found by one sequential grammar
scan, so readers of the ranges yield exactly the records of a sequential read. Gzip streams
are not seekable: a ``.gz`` file is one range (offsets then count decompressed bytes).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, cast

CHUNK = 1 << 22  # bytes read at a time
MAX_RECORD_BYTES = 1 << 24  # a longer row is rejected (guards memory on garbage input)
MAX_HEADER_BYTES = 1 << 16
INT64_MAX = (1 << 63) - 1
BOM = b"\xef\xbb\xbf"


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
    """A row that could not be used; `detail` holds field names, lengths and offsets only;
    `raw` the row's bytes (None when too large to hold), kept as data for the dead letters."""

    source: str
    locator: str
    reason: str
    detail: dict = field(default_factory=dict)
    raw: bytes | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict:
        """The dead-letter record (the raw row as base64, under the output's MIMIC lineage)."""
        raw = None if self.raw is None else base64.b64encode(self.raw).decode("ascii")
        return {
            "source": self.source,
            "locator": self.locator,
            "reason": self.reason,
            "detail": self.detail,
            "raw_base64": raw,
        }


@dataclass(frozen=True, slots=True)
class Filtered:
    """A valid row that is not wanted: reason `category` or `iserror`; `rows` consecutive
    rows of that reason when `iter_records(runs=True)` gives them as one."""

    reason: str
    rows: int = 1


@dataclass(frozen=True, slots=True)
class _Refused:
    """`rows` consecutive well-formed rows whose category `wanted` refused (`cuts(runs=True)`)."""

    rows: int


FILTERED_CATEGORY = Filtered("category")
FILTERED_ISERROR = Filtered("iserror")
Record = Note | Reject | Filtered

_FIELD = rb'("[^"]*(?:""[^"]*)*"|[^,"\r\n]*)'
_UNQUOTED_END = re.compile(rb'[,"\r\n]')
_DIGITS = re.compile(r"\d+")
_DECIMAL_ID = re.compile(r"(\d+)(?:\.0*)?")
_DATE = re.compile(r"\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?)?")
_NOTE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


@dataclass(frozen=True)
class Schema:
    """A known note table layout."""

    name: str
    columns: tuple[str, ...]
    row_start: re.Pattern  # a newline followed by a line that looks like a row (resync only)
    category_index: int

    @property
    def text_index(self) -> int:
        return len(self.columns) - 1

    @property
    def record(self) -> re.Pattern:
        """One whole row with exactly this schema's field count (the fast path)."""
        return _record_pattern(len(self.columns))


def _record_pattern(n: int) -> re.Pattern:
    return re.compile(b",".join([_FIELD] * n) + rb"(\r\n|\n|\r|\Z)")


MIMIC3 = Schema(
    "mimic3",
    (
        "ROW_ID",
        "SUBJECT_ID",
        "HADM_ID",
        "CHARTDATE",
        "CHARTTIME",
        "STORETIME",
        "CATEGORY",
        "DESCRIPTION",
        "CGID",
        "ISERROR",
        "TEXT",
    ),
    re.compile(rb'(?:\r\n|\r|\n)(?="?\d+"?,"?\d+"?,"?[\d.]*"?,"?\d{4}-\d\d-\d\d)'),
    6,
)
MIMIC4 = Schema(
    "mimic4",
    ("note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"),
    re.compile(rb'(?:\r\n|\r|\n)(?="?\d+-[A-Z]{2}-\d+"?,"?\d+"?,)'),
    3,
)
SCHEMAS = (MIMIC3, MIMIC4)
_RECORDS = {s.name: s.record for s in SCHEMAS}
# Runs of whole rows of a schema (blank lines between them allowed, as the scan skips them),
# each ended by a newline and followed by a byte within the match window (so that neither a
# CRLF nor a row is cut by the window's end): `_Reader.first_row_start`.
_BULK = {
    s.name: re.compile(
        rb"(?:[\r\n]*+"
        + b",".join([_FIELD.replace(b"(", b"(?:", 1)] * len(s.columns))
        + rb"(?:\r\n|\n|\r(?!\n))(?=[\s\S]))*"
    )
    for s in SCHEMAS
}
# MIMIC-IV note_type -> the MIMIC-III category it corresponds to.
MIMIC4_TYPES = {"DS": "Discharge summary", "AD": "Discharge summary", "RR": "Radiology", "AR": "Radiology"}
EXPECTED_HEADERS = " or ".join(f"{s.name} ({','.join(s.columns)})" for s in SCHEMAS)


class NoteFileError(ValueError):
    """The file as a whole cannot be read as a note table (the message names no content)."""


def normalise_category(value: str) -> str:
    """Category names compare stripped and lower-cased ("Physician " == "physician")."""
    return value.strip().lower()


def _unquote(value: bytes) -> bytes:
    if value[:1] == b'"':
        return value[1:-1].replace(b'""', b'"')
    return value


def detect_schema(header: bytes, name: str = "input") -> Schema:
    """The schema whose column names match the header line (quotes and case ignored)."""
    m = _record_pattern(header.count(b",") + 1).fullmatch(header + b"\n")
    names = (
        ()
        if m is None
        else tuple(
            _unquote(m.group(i + 1)).decode("utf-8", "replace").strip().upper()
            for i in range(header.count(b",") + 1)
        )
    )
    for schema in SCHEMAS:
        if names == tuple(c.upper() for c in schema.columns):
            return schema
    raise NoteFileError(f"{name}: the first line is not a note table header; expected {EXPECTED_HEADERS}")


@dataclass(frozen=True)
class Layout:
    """What `read_layout` learns from a file's start."""

    schema: Schema
    data_start: int  # byte offset of the first row (after BOM and header)
    newline: bytes  # the header's line ending: b"\n", b"\r\n" or b"\r"


def _open_stream(
    path: str, opener: Callable[[str], BinaryIO], stack: contextlib.ExitStack, name: str
) -> BinaryIO:
    try:
        fh = stack.enter_context(opener(path))
    except IsADirectoryError:
        raise NoteFileError(f"{name}: is a directory, not a note file") from None
    except PermissionError:
        raise NoteFileError(f"{name}: permission denied") from None
    except FileNotFoundError:
        raise NoteFileError(f"{name}: no such file") from None
    except OSError as exc:
        raise NoteFileError(f"{name}: cannot open ({type(exc).__name__})") from None
    if path.endswith(".gz"):
        fh = cast(BinaryIO, stack.enter_context(gzip.GzipFile(fileobj=fh, mode="rb")))
    return fh


def _read(fh: BinaryIO, size: int, name: str, offset: int) -> bytes:
    """fh.read with decompression and I/O faults as one-line NoteFileErrors."""
    try:
        return fh.read(size)
    except EOFError:
        raise NoteFileError(
            f"{name}: compressed stream ends early (truncated .gz) after {offset} decompressed bytes"
        ) from None
    except (gzip.BadGzipFile, zlib.error):
        raise NoteFileError(f"{name}: corrupt or not gzip data near decompressed byte {offset}") from None
    except IsADirectoryError:
        raise NoteFileError(f"{name}: is a directory, not a note file") from None
    except OSError as exc:
        raise NoteFileError(f"{name}: read error ({type(exc).__name__}) at byte {offset}") from None


def _layout(start: bytes, name: str) -> Layout:
    if not start:
        raise NoteFileError(f"{name}: empty file (expected a header line: {EXPECTED_HEADERS})")
    bom = len(BOM) if start.startswith(BOM) else 0
    m = re.compile(rb"\r\n|\r|\n").search(start, bom)
    if m is None and len(start) >= MAX_HEADER_BYTES:
        raise NoteFileError(
            f"{name}: no header line in the first {MAX_HEADER_BYTES} bytes; expected {EXPECTED_HEADERS}"
        )
    header = start[bom : m.start() if m else len(start)]
    schema = detect_schema(header, name)
    if m is not None and m.group() == b"\r" and m.end() == len(start) and len(start) >= MAX_HEADER_BYTES:
        raise NoteFileError(f"{name}: header line ending cut by the read limit")
    newline = m.group() if m else b"\n"
    return Layout(schema, m.end() if m else len(start), newline)


def check_file(path: str, *, source: str = "", opener: Callable[[str], BinaryIO] | None = None) -> Layout:
    """Read a file's header up front: NoteFileError (one line, no content) for a directory,
    no permission, an empty file, bad gzip, or a first line that is not a known header."""
    name = source or os.path.basename(path) or path
    if os.path.isdir(path):
        raise NoteFileError(f"{name}: is a directory, not a note file")
    with contextlib.ExitStack() as stack:
        fh = _open_stream(path, opener or (lambda p: open(p, "rb")), stack, name)
        return _layout(_read(fh, MAX_HEADER_BYTES, name, 0), name)


class _Cursor:
    """Grammar state of the row being read: positions are indexes into the buffer."""

    __slots__ = ("start", "pos", "field_start", "quoted", "spans", "end", "problem")

    def __init__(self, start: int):
        self.start = self.pos = self.field_start = start
        self.quoted = False
        self.spans: list[tuple[int, int]] = []
        self.end = -1
        self.problem = ""

    def shift(self, by: int) -> None:
        self.start -= by
        self.pos -= by
        self.field_start -= by
        self.spans = [(a - by, b - by) for a, b in self.spans]


def _advance(buf: bytes, c: _Cursor, eof: bool) -> str:
    """Run the CSV grammar from the cursor: 'end' (c.end set), 'more' (need bytes) or 'bad'
    (c.problem, c.pos at the fault)."""
    n = len(buf)
    while True:
        if c.quoted:
            q = buf.find(b'"', c.pos)
            if q < 0:
                c.pos = n
                if eof:
                    c.problem = "quote never closed"
                    return "bad"
                return "more"
            if q + 1 >= n and not eof:
                c.pos = q
                return "more"
            if q + 1 < n and buf[q + 1] == 0x22:
                c.pos = q + 2
                continue
            c.quoted, c.pos = False, q + 1
            if c.pos < n and buf[c.pos] not in b",\r\n":
                c.problem = f"text after the closing quote of field {len(c.spans) + 1}"
                return "bad"
        else:
            if c.pos == c.field_start and c.pos < n and buf[c.pos] == 0x22:
                c.quoted, c.pos = True, c.pos + 1
                continue
            m = _UNQUOTED_END.search(buf, c.pos)
            c.pos = m.start() if m else n
            if m and buf[c.pos] == 0x22:
                c.problem = f"quote inside unquoted field {len(c.spans) + 1}"
                return "bad"
        if c.pos >= n:
            if not eof:
                return "more"
            c.spans.append((c.field_start, n))
            c.end = n
            return "end"
        ch = buf[c.pos]
        if ch == 0x2C:  # ","
            c.spans.append((c.field_start, c.pos))
            c.pos += 1
            c.field_start = c.pos
            continue
        if ch == 0x0D and c.pos + 1 >= n and not eof:
            return "more"  # a CR at the buffer's end may be half of CRLF
        c.spans.append((c.field_start, c.pos))
        c.end = c.pos + (2 if ch == 0x0D and c.pos + 1 < n and buf[c.pos + 1] == 0x0A else 1)
        return "end"


@dataclass(frozen=True, slots=True)
class _Cut:
    """One row as cut from the file: `spans` of its fields (minus `shift`: relative to `raw`), or a fault."""

    offset: int
    raw: bytes | None
    spans: tuple[tuple[int, int], ...] = ()
    problem: str = ""
    size: int = 0
    shift: int = 0

    def column(self, i: int) -> bytes:
        """Field i as written (quotes included)."""
        a, b = self.spans[i]
        return (self.raw or b"")[a - self.shift : b - self.shift]

    def start(self, i: int) -> int:
        """Where field i starts in `raw`."""
        return self.spans[i][0] - self.shift


def _too_large(offset: int) -> _Cut:
    """A row over MAX_RECORD_BYTES. Its size is given as the limit plus one: how much of it had
    been read when it was found depends on the buffering (and so on the byte ranges)."""
    return _Cut(offset, None, problem="too large", size=MAX_RECORD_BYTES + 1)


def _cut(
    offset: int, buf: bytes, a: int, b: int, spans: tuple = (), problem: str = "", shift: int = 0
) -> _Cut:
    """The row buf[a:b], or a too-large marker."""
    if b - a > MAX_RECORD_BYTES:
        return _too_large(offset)
    return _Cut(offset, buf[a:b], spans, problem, b - a, shift)


class _Reader:
    """Cuts one byte range of a note file into rows and classifies them."""

    def __init__(
        self,
        path: str,
        categories: Iterable[str] | None,
        source: str,
        opener: Callable[[str], BinaryIO],
        max_text_chars: int | None = None,
    ):
        self.path, self.opener, self.max_text_chars = path, opener, max_text_chars
        self.name = source or os.path.basename(path)
        self.categories = None if categories is None else {normalise_category(c) for c in categories}
        self._wanted: dict[bytes, bool] = {}  # category field as written -> kept

    def cuts(
        self,
        start: int,
        end: int | None,
        wanted: Callable[[Schema, bytes], bool] | None = None,
        runs: bool = False,
    ) -> Iterator[tuple[Layout, _Cut | int | _Refused]]:
        """Rows starting in [start, end) (start must be a row start or 0). With `wanted`, a
        well-formed row (the right field count, within MAX_RECORD_BYTES) whose category
        field (as written) `wanted` refuses is only its offset: no bytes are copied; with
        `runs` too, consecutive such rows are one `_Refused` (their number, no offsets)."""
        with contextlib.ExitStack() as stack:
            fh = _open_stream(self.path, self.opener, stack, self.name)
            head = _read(fh, MAX_HEADER_BYTES, self.name, 0)
            layout = _layout(head, self.name)
            if start > layout.data_start:
                fh.seek(start)
                base, buf = start, b""
            else:
                base, buf = layout.data_start, head[layout.data_start :]
            for cut in self._scan(fh, layout.schema, base, buf, end, wanted, runs):
                yield layout, cut

    def _scan(
        self,
        fh: BinaryIO,
        schema: Schema,
        base: int,
        buf: bytes,
        end: int | None,
        wanted: Callable[[Schema, bytes], bool] | None,
        runs: bool = False,
    ) -> Iterator[_Cut | int | _Refused]:
        """`base` is the file offset of buf[0], which is a row start."""
        record, fields = _RECORDS[schema.name], len(schema.columns) + 1
        category = schema.category_index + 1
        eof, c, skipping, resync = False, None, False, -1
        pos = 0  # next row start in buf
        while True:
            while True:  # rows complete in this buffer
                if end is not None and base + pos >= end:
                    return
                if resync >= 0:  # after a grammar fault: the next row-like line
                    m = schema.row_start.search(buf, resync)
                    if m is None and not eof:
                        break
                    stop = m.end() if m else len(buf)
                    if not skipping:
                        yield _cut(base + pos, buf, pos, stop, problem=c.problem if c is not None else "")
                    pos, resync, c, skipping = stop, -1, None, False
                    continue
                if pos >= len(buf):
                    break
                if c is None:
                    if buf[pos] in b"\r\n":  # a blank line is not a row
                        if buf[pos] == 0x0D and pos + 1 == len(buf) and not eof:
                            break  # a CR that may be half of CRLF
                        pos += 2 if buf[pos : pos + 2] == b"\r\n" else 1
                        continue
                    m = record.match(buf, pos)
                    if m is not None and (m.end() < len(buf) or eof):
                        if (
                            wanted is not None
                            and m.end() - pos <= MAX_RECORD_BYTES
                            and not wanted(schema, m.group(category))
                        ):
                            if runs:  # the rows after it that `wanted` refuses too, counted here
                                rows, pos = 1, m.end()
                                while pos < len(buf) and (end is None or base + pos < end):
                                    m = record.match(buf, pos)
                                    if (
                                        m is None
                                        or (m.end() == len(buf) and not eof)
                                        or m.end() - pos > MAX_RECORD_BYTES
                                        or wanted(schema, m.group(category))
                                    ):
                                        break
                                    rows, pos = rows + 1, m.end()
                                yield _Refused(rows)
                                continue
                            yield base + pos
                        else:
                            yield _cut(
                                base + pos, buf, pos, m.end(), m.regs[1:fields], shift=pos
                            )  # CPython: all spans at once
                        pos = m.end()
                        continue
                    c = _Cursor(pos)
                state = _advance(buf, c, eof)
                if state == "more":
                    break
                if state == "bad":  # a skipped row's start may be cut away already (pos < 0)
                    resync = max(pos + 1, 0)
                    continue
                if not skipping:
                    yield _cut(base + pos, buf, pos, c.end, tuple((a - pos, b - pos) for a, b in c.spans))
                pos, c, skipping = c.end, None, False
            if eof:
                return
            if c is not None and not skipping and len(buf) - pos > MAX_RECORD_BYTES:
                yield _too_large(base + pos)
                skipping = True
            # drop what is done; a skipped row keeps only its grammar state (or resync lookahead)
            keep = pos
            if skipping:
                keep = max(len(buf) - 256, pos) if resync >= 0 or c is None else max(c.pos, pos)
            if c is not None:
                c.shift(keep)
            if resync >= 0:
                resync = max(resync - keep, 0)
            base, buf, pos = base + keep, buf[keep:], pos - keep
            chunk = _read(fh, CHUNK, self.name, base + len(buf))
            eof = not chunk
            buf += chunk

    def first_row_start(self, target: int, known: int = 0) -> int | None:
        """The first row start at or after `target` that the grammar scan from the file's
        start finds (None: no row starts there), given `known`, a row start (or 0) before it.
        Runs of well-formed rows are passed over in bulk (`_BULK`, one regex call for up to
        `CHUNK` bytes): after a row the scan is back at a row start, in the state it has there;
        the grammar scan (`cuts`) takes over from the last such row end, for the rows at the
        target and for whatever the bulk pattern does not pass (a blank line at a buffer's end,
        a malformed or a larger row)."""
        with contextlib.ExitStack() as stack:
            fh = _open_stream(self.path, self.opener, stack, self.name)
            head = _read(fh, MAX_HEADER_BYTES, self.name, 0)
            layout = _layout(head, self.name)
            bulk = _BULK[layout.schema.name]
            if known > layout.data_start:
                fh.seek(known)
                base, buf = known, b""
            else:
                base, buf = layout.data_start, head[layout.data_start :]
            pos, eof = 0, False
            while base + pos < target:
                window = min(len(buf), pos + CHUNK, target - base)
                m = bulk.match(buf, pos, window)
                if m is not None and m.end() > pos:
                    pos = m.end()
                    continue
                if eof or window - pos >= min(CHUNK, target - base - pos):
                    break  # not a run of whole rows within reach: the grammar scan's turn
                base, buf, pos = base + pos, buf[pos:], 0
                chunk = _read(fh, CHUNK, self.name, base + len(buf))
                eof = not chunk
                buf += chunk
            known = base + pos
        for _, cut in self.cuts(known, None, wanted=lambda schema, category: False):
            offset = cut if isinstance(cut, int) else cast(_Cut, cut).offset
            if offset >= target:
                return offset
        return None

    def records(self, start: int, end: int | None, runs: bool = False) -> Iterator[Record]:
        wanted = None if self.categories is None else self._wants
        for layout, cut in self.cuts(start, end, wanted, runs):
            if isinstance(cut, int):  # most rows: a category not asked for
                yield FILTERED_CATEGORY
                continue
            if isinstance(cut, _Refused):
                yield Filtered("category", cut.rows)
                continue
            try:
                yield self._classify(layout, cut)
            except Exception as exc:  # noqa: BLE001 - one row costs one row
                yield Reject(
                    self.name,
                    f"{self.name}@{cut.offset}",
                    "internal_error",
                    {"error": type(exc).__name__},
                    cut.raw,
                )

    def _classify(self, layout: Layout, cut: _Cut) -> Record:
        schema, locator = layout.schema, f"{self.name}@{cut.offset}"
        if cut.raw is None:
            return Reject(
                self.name,
                locator,
                "record_too_large",
                {"bytes_at_least": cut.size, "limit": MAX_RECORD_BYTES},
            )
        if cut.problem:
            return Reject(
                self.name, locator, "unparseable", {"problem": cut.problem, "bytes": cut.size}, cut.raw
            )
        if len(cut.spans) != len(schema.columns):
            return Reject(
                self.name,
                locator,
                "wrong_field_count",
                {"expected": len(schema.columns), "got": len(cut.spans)},
                cut.raw,
            )
        category = self._category(schema, _unquote(cut.column(schema.category_index)))
        if self.categories is not None and normalise_category(category) not in self.categories:
            return FILTERED_CATEGORY
        if schema is MIMIC3 and _unquote(cut.column(9)).strip() == b"1":
            return FILTERED_ISERROR
        raw_fields = [_unquote(cut.column(i)) for i in range(len(cut.spans))]
        return self._note(layout, cut, raw_fields, category, locator)

    def _wants(self, schema: Schema, written: bytes) -> bool:
        """Whether a category field as written (quotes included) is one of `categories`
        (remembered for fields of up to 64 bytes: real categories are short)."""
        kept = self._wanted.get(written)
        if kept is None:
            kept = normalise_category(self._category(schema, _unquote(written))) in cast(set, self.categories)
            if len(written) <= 64:
                self._wanted[written] = kept
        return kept

    def _category(self, schema: Schema, raw: bytes) -> str:
        name = raw.decode("utf-8", "replace")
        return MIMIC4_TYPES.get(name, name) if schema is MIMIC4 else name

    def _note(
        self, layout: Layout, cut: _Cut, raw_fields: list[bytes], category: str, locator: str
    ) -> Record:
        schema = layout.schema
        fields = []
        for i, value in enumerate(raw_fields):
            try:
                fields.append(value.decode("utf-8"))
            except UnicodeDecodeError as exc:
                return Reject(
                    self.name,
                    locator,
                    "bad_utf8",
                    {
                        "byte_offset": cut.offset + cut.start(i) + _quoted(cut, i) + exc.start,
                        "fields": [schema.columns[i]],
                    },
                    cut.raw,
                )
        text = fields[schema.text_index]
        if layout.newline != b"\n":
            text = text.replace(layout.newline.decode(), "\n")
        if not text.strip():
            return Reject(self.name, locator, "missing_text", {"field": schema.columns[-1]}, cut.raw)
        if self.max_text_chars is not None and len(text) > self.max_text_chars:
            return Reject(
                self.name,
                locator,
                "text_too_long",
                {"field": schema.columns[-1], "chars": len(text), "limit": self.max_text_chars},
                cut.raw,
            )
        problem = _check_fields(schema, fields)
        if problem is not None:
            reason, column = problem
            i = schema.columns.index(column)
            return Reject(self.name, locator, reason, {"field": column, "length": len(fields[i])}, cut.raw)
        subject = int(fields[1])
        hadm_match = _DECIMAL_ID.fullmatch(fields[2].strip())  # checked by the field rules above
        hadm = int(hadm_match.group(1)) if hadm_match and fields[2].strip() else None
        if schema is MIMIC3:
            return Note(
                fields[0].strip(),
                subject,
                hadm,
                fields[6].strip(),
                fields[7].strip(),
                fields[3].strip(),
                text,
                locator,
            )
        return Note(
            fields[0].strip(), subject, hadm, category, fields[3], fields[5].strip()[:10], text, locator
        )


def _quoted(cut: _Cut, i: int) -> int:
    """1 when field i is quoted (its content starts one byte later)."""
    return int(cut.column(i)[:1] == b'"')


def _check_fields(schema: Schema, fields: list[str]) -> tuple[str, str] | None:
    """(reason, column) of the first bad id or date field, or None."""
    cols = schema.columns
    checks = [(cols[1], fields[1].strip(), False), (cols[2], fields[2].strip(), True)]
    if schema is MIMIC3:
        checks.insert(0, (cols[0], fields[0].strip(), False))
        if not _DATE.fullmatch(fields[3].strip()):
            return "bad_field", cols[3]
    else:
        if not _NOTE_ID.fullmatch(fields[0].strip()):
            return "bad_field", cols[0]
        if not _DATE.fullmatch(fields[5].strip()):
            return "bad_field", cols[5]
    for column, value, optional in checks:
        if optional and not value:
            continue
        m = (_DECIMAL_ID if column == cols[2] else _DIGITS).fullmatch(value)
        if m is None:
            return "bad_field", column
        digits = m.group(1) if m.groups() else m.group()
        if len(digits.lstrip("0")) > 19 or int(digits) > INT64_MAX:
            return "id_out_of_range", column
    return None


def plan_ranges(
    path: str, size: int, parts: int, opener: Callable[[str], BinaryIO] | None = None
) -> list[tuple[int, int | None]]:
    """Byte ranges for `parts` parallel readers, cut at row starts found by a sequential
    grammar scan (one range for gzip or tiny files): each cut is the first row start at or
    after a multiple of size / parts (`_Reader.first_row_start`)."""
    if path.endswith(".gz") or parts <= 1 or size < CHUNK:
        return [(0, None)]
    reader = _Reader(path, None, "", opener or (lambda p: open(p, "rb")))
    step = -(-size // parts)
    starts = [0]
    for target in (i * step for i in range(1, parts)):
        start = reader.first_row_start(target, starts[-1])
        if start is None:
            break
        if start > starts[-1]:
            starts.append(start)
    return [(a, b) for a, b in zip(starts, [*starts[1:], None])]


def iter_records(
    path: str,
    *,
    categories: Iterable[str] | None = ("Discharge summary",),
    byte_range: tuple[int, int | None] = (0, None),
    source: str = "",
    opener: Callable[[str], BinaryIO] | None = None,
    max_text_chars: int | None = None,
    runs: bool = False,
) -> Iterator[Record]:
    """Yield every record of `path` (within `byte_range`, which `plan_ranges` makes) as Note,
    Reject or Filtered.

    `categories`: kept categories (case and surrounding spaces ignored; None keeps all).
    MIMIC-IV note types map to MIMIC-III names (DS/AD -> Discharge summary, RR/AR -> Radiology).
    `source`: the file name used in locators (default: the basename of `path`).
    `opener`: opens `path` for binary reading (default: `open(path, "rb")`; pass e.g.
    Beam's `FileSystems.open` for remote files). `max_text_chars`: a longer TEXT is rejected
    (`text_too_long`), which bounds the work per note downstream. `runs`: consecutive rows
    filtered by category (most rows of a note table) come as one Filtered whose `rows` counts
    them, counted without a Python step per row. Raises NoteFileError on a whole-file fault.
    """
    reader = _Reader(path, categories, source, opener or (lambda p: open(p, "rb")), max_text_chars)
    return reader.records(*byte_range, runs=runs)


def iter_notes(path: str, **kwargs) -> Iterator[Note | Reject]:
    """`iter_records` without the Filtered markers."""
    return (r for r in iter_records(path, **kwargs) if not isinstance(r, Filtered))
