"""Reading the line files a user names: `-` is standard input, errors are one line."""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import BinaryIO

from medsimp.errors import InputError

_STDIN_READ: dict[int, str] = {}  # id(sys.stdin) -> the flag that read it
MAX_BYTES = 256 << 20  # a line file larger than this is refused (reading it would take GBs)
CHUNK = 1 << 20
# How a shell names a process substitution `<(cmd)`: a pipe read once, here, into memory.
_FD_PATH = re.compile(r"^/(?:dev|proc/self)/fd/\d+$")


def _read_bounded(fh: BinaryIO, path: str, flag: str) -> bytes:
    parts, size = [], 0
    while chunk := fh.read(CHUNK):
        size += len(chunk)
        if size > MAX_BYTES:
            raise InputError(f"{flag} {path}: larger than {MAX_BYTES >> 20} MiB; refused")
        parts.append(chunk)
    return b"".join(parts)


def _read_path(path: str, flag: str) -> bytes:
    """A regular file or a process substitution's pipe; a device, a named FIFO (which would
    block until a writer comes), a socket or a folder is refused before it is opened."""
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{flag} {path}: is a folder, not a file")
    pipe = stat.S_ISFIFO(info.st_mode) and _FD_PATH.match(path)
    if not stat.S_ISREG(info.st_mode) and not pipe:
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
        raise InputError(f"{flag} {path}: {kind}, not a regular file (use `-` for standard input)")
    if not pipe and info.st_size > MAX_BYTES:
        raise InputError(f"{flag} {path}: larger than {MAX_BYTES >> 20} MiB; refused")
    with open(path, "rb") as fh:
        return _read_bounded(fh, path, flag)


def check_present(path: str, flag: str) -> None:
    """Refuse a named input that is not there before any work (the line `read_lines` gives for
    it later; `-`, standard input, is always there): a command that imports its work's libraries
    first refuses it without that start-up (issue 57 §4)."""
    if path == "-":
        return
    try:
        os.stat(path)
    except OSError as exc:
        raise InputError(f"{flag} {path}: {exc.strerror or type(exc).__name__}") from None


def read_lines(path: str, flag: str) -> list[str]:
    """The lines of a text file (universal newlines, as iterating a text file gives them; a BOM
    dropped), `-` = standard input (once per command), `<(cmd)` read once; a missing,
    unreadable, non-UTF-8, non-regular or over-`MAX_BYTES` file is one clear error."""
    try:
        if path == "-":
            if id(sys.stdin) in _STDIN_READ:
                raise InputError(f"{flag} -: standard input is already read by {_STDIN_READ[id(sys.stdin)]}")
            _STDIN_READ[id(sys.stdin)] = flag
            data = _read_bounded(sys.stdin.buffer, path, flag)
        else:
            data = _read_path(path, flag)
        text = data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
        return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []
    except (OSError, UnicodeDecodeError) as exc:
        reason = (
            f"byte {exc.start} is not UTF-8"
            if isinstance(exc, UnicodeDecodeError)
            else (exc.strerror or type(exc).__name__)
        )
        raise InputError(f"{flag} {path}: {reason}") from None
