"""Reading the line files a user names: `-` is standard input, errors are one line."""

from __future__ import annotations

import sys
from pathlib import Path

from medsimp.errors import InputError

_STDIN_READ: dict[int, str] = {}  # id(sys.stdin) -> the flag that read it


def read_lines(path: str, flag: str) -> list[str]:
    """The lines of a text file (universal newlines, as iterating a text file gives them; a BOM
    dropped), `-` = standard input (once per command); a missing, unreadable or non-UTF-8 file
    is one clear error."""
    try:
        if path == "-":
            if id(sys.stdin) in _STDIN_READ:
                raise InputError(f"{flag} -: standard input is already read by {_STDIN_READ[id(sys.stdin)]}")
            _STDIN_READ[id(sys.stdin)] = flag
            data = sys.stdin.buffer.read()
        else:
            data = Path(path).read_bytes()
        text = data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
        return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []
    except (OSError, UnicodeDecodeError) as exc:
        reason = (
            f"byte {exc.start} is not UTF-8"
            if isinstance(exc, UnicodeDecodeError)
            else (exc.strerror or type(exc).__name__)
        )
        raise InputError(f"{flag} {path}: {reason}") from None
