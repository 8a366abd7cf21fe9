"""Whole-file input checks shared by every reader: each file fault is one line and exit 2.

Files open through Beam's FileSystems (local paths, gs://, s3://, ...); `.gz` and `.bz2`
are decompressed here so that a truncated or corrupt stream is an error, not a short read.
A fault (missing, a directory, no permission, empty, truncated or corrupt compression,
binary or UTF-16 content) raises `InputError` naming the file and the fault, never its
content. A valid file reads the same whatever its newline convention (LF, CRLF, CR) and
with or without a UTF-8 byte-order mark; a last line without a newline is a line.

API: `list_inputs(path)` (a file, or the files of a folder), `check_file(path)` (run it
before the pipeline), `check_lines(path)` (no line over `MAX_LINE_BYTES`, also before the
pipeline), `iter_lines(path)` (numbered lines, streaming), `read_text(path)`.
"""

from __future__ import annotations

import bz2
import gzip
import io
import os
import re
import stat
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO, cast

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from medsimp.errors import InputError
from medsimp.lineage import from_metadata, union

BOM = b"\xef\xbb\xbf"
CHUNK = 1 << 20
# A line longer than this (bytes, after decompression) ends `iter_lines` with an InputError naming
# the file and line: reading it whole would hold it in memory. Far above every record cap
# (`cochrane.MAX_RECORD_CHARS`), so a merely long record is still a dead letter.
MAX_LINE_BYTES = 64 << 20
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")


def list_files(pattern: str) -> list[str]:
    """Files matching a glob (`dir/*.parquet`, `dir/**.parquet`) on any Beam filesystem, sorted.
    A file name that is not UTF-8 (no record or Beam coder can carry it) is an InputError."""
    paths = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    for path in paths:
        try:
            path.encode("utf-8")
        except UnicodeEncodeError as exc:
            folder = FileSystems.split(pattern)[0].encode("utf-8", "backslashreplace").decode("utf-8")
            raise InputError(
                f"{folder}: a file name holds a byte that is not UTF-8 (at character {exc.start + 1}); rename it"
            ) from None
    return paths


def open_file(path: str):
    """`path` opened for binary reading through Beam's FileSystems, without decompression."""
    from apache_beam.io.filesystem import CompressionTypes

    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def parquet_lineage(path: str) -> tuple[str, ...] | None:
    """`medsimp.lineage.read_lineage` on any Beam filesystem: the union of the lineage of a
    Parquet file or of every `*.parquet` below a folder (None: unknown)."""
    files = [path] if path.endswith(".parquet") else list_files(FileSystems.join(path, "**.parquet"))
    if not files:
        return None
    found = []
    for file in files:
        try:
            with open_file(file) as fh:
                found.append(from_metadata(pq.read_schema(io.BytesIO(fh.read())).metadata))
        except (OSError, ValueError):
            return None
    return union(*found)


def list_inputs(path: str) -> list[str]:
    """[path] for a file; the sorted non-hidden files of a folder; InputError when neither."""
    children = list_files(FileSystems.join(path.rstrip("/"), "*"))
    if children:
        files = [p for p in children if not FileSystems.split(p)[1].startswith(".")]
        if not files:
            raise InputError(f"{path}: folder holds no input files")
        return files
    if not list_files(path):
        raise InputError(f"{path}: no such file or folder")
    return [path]


@contextmanager
def _open(path: str) -> Iterator[BinaryIO]:
    try:
        raw = open_file(path)
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({type(exc).__name__})") from None
    lower = path.lower()
    stream = cast(
        BinaryIO,
        gzip.GzipFile(fileobj=raw)
        if lower.endswith(".gz")
        else bz2.BZ2File(raw)
        if lower.endswith(".bz2")
        else raw,
    )
    try:
        yield stream
    finally:
        stream.close()
        raw.close()


def _chunks(path: str, fh: BinaryIO) -> Iterator[bytes]:
    """The decompressed bytes in chunks, the BOM removed; compression faults become InputError."""
    first = True
    while True:
        try:
            chunk = fh.read(max(CHUNK, 64) if first else CHUNK)  # the first read holds any BOM whole
        except EOFError:
            raise InputError(f"{path}: truncated compressed file (the stream ends early)") from None
        except (gzip.BadGzipFile, zlib.error, OSError, ValueError) as exc:
            raise InputError(f"{path}: corrupt compressed data ({type(exc).__name__})") from None
        if first:
            if chunk.startswith(_WIDE_BOMS):
                raise InputError(f"{path}: UTF-16/32 text; convert it to UTF-8")
            if b"\x00" in chunk:
                raise InputError(f"{path}: binary data (NUL bytes), not UTF-8 text")
            chunk = chunk[len(BOM) :] if chunk.startswith(BOM) else chunk
            first = False
        if not chunk:
            return
        yield chunk


def check_file(path: str) -> None:
    """Raise InputError for a whole-file fault. A compressed file is read to its end (a
    truncated stream shows only there); an uncompressed one only to its first chunk."""
    if "://" not in path:  # a local pipe or device: a job reads its input more than once
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = 0  # _open names the fault
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode):
            raise InputError(
                f"{path}: a pipe or device, not a file (a job reads its input more than once; "
                "save it to a file first)"
            )
    compressed = path.lower().endswith((".gz", ".bz2"))
    content = False
    with _open(path) as fh:
        for chunk in _chunks(path, fh):
            content = content or bool(chunk.strip())
            if content and not compressed:
                return
    if not content:
        raise InputError(f"{path}: empty file")


def check_lines(path: str) -> None:
    """InputError (naming the file and line) if a line of `path` is over `MAX_LINE_BYTES`. Reads
    the whole file without holding a line: run it before the pipeline, where the error is one
    line and exit 2 (inside a Beam worker it would be a crash)."""
    run, over = 0, False  # bytes since the last line break; a line over the limit seen
    with _open(path) as fh:
        for chunk in _chunks(path, fh):
            first = re.search(rb"[\r\n]", chunk)
            if first is None:
                run += len(chunk)
            else:
                over = run + first.start() > MAX_LINE_BYTES or (
                    len(chunk) > MAX_LINE_BYTES  # only when the limit is below the chunk size
                    and max(map(len, re.split(rb"[\r\n]", chunk))) > MAX_LINE_BYTES
                )
                run = len(chunk) - 1 - max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
            if over or run > MAX_LINE_BYTES:
                for _ in iter_lines(path):  # raises, numbering lines as the readers do
                    pass
                return


def iter_lines(path: str) -> Iterator[tuple[int, str | UnicodeDecodeError]]:
    """(1-based line number, text without its newline, or the UnicodeDecodeError of a line
    that is not UTF-8). The file's first line break sets the convention: a CR alone means
    CR-only lines; otherwise lines end at LF and a CR before it is dropped. A line over
    `MAX_LINE_BYTES` is an InputError naming the file and the line (never held whole)."""
    sep: bytes | None = None
    buf = bytearray()
    number = 0
    with _open(path) as fh:
        for chunk in _chunks(path, fh):
            buf += chunk
            tail = bytes(buf[-len(chunk) - 1 :])  # what is new, and a CR the last chunk ended in
            sep = sep or _separator(tail)
            if sep is not None and sep in tail:
                *lines, buf = buf.split(sep)
                for raw in lines:
                    number += 1
                    _check_line_length(path, number, raw)
                    yield number, _decode(raw, sep)
            _check_line_length(path, number + 1, buf)
    if sep is None:  # no decided line break: one line, maybe ending in a lone CR
        sep = b"\r" if buf.endswith(b"\r") else b"\n"
        *lines, buf = buf.split(sep)
        for raw in lines:
            number += 1
            yield number, _decode(raw, sep)
    if buf:
        yield number + 1, _decode(buf, sep)


def _check_line_length(path: str, number: int, raw: bytes | bytearray) -> None:
    if len(raw) - raw.endswith(b"\r") > MAX_LINE_BYTES:  # a CR before LF is not the line's
        raise InputError(
            f"{path}: line {number} is longer than {MAX_LINE_BYTES >> 20} MiB "
            "(pipelines.sources.files.MAX_LINE_BYTES); split the file into records"
        )


def _separator(buf: bytes) -> bytes | None:
    """b"\\r" or b"\\n" from the first line break in `buf`; None while undecided."""
    match = re.search(rb"[\r\n]", buf)
    if match is None or match.end() == len(buf) and match.group() == b"\r":
        return None
    if match.group() == b"\r" and buf[match.end() : match.end() + 1] != b"\n":
        return b"\r"
    return b"\n"


def _decode(raw: bytes | bytearray, sep: bytes) -> str | UnicodeDecodeError:
    if sep == b"\n" and raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc


def read_text(path: str) -> str:
    """The whole file as text (BOM removed); InputError when it is not UTF-8."""
    with _open(path) as fh:
        data = b"".join(_chunks(path, fh))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None
