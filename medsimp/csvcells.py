"""Spreadsheet cells safe from formula injection (OWASP "CSV Injection").

A cell starting with one of FORMULA_STARTS is read as a formula by Excel/LibreOffice. Exports
prefix such cells with a single quote; `cell_unescape` undoes it, so a CSV the project reads
back round-trips exactly.
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from medsimp.errors import InputError

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell_escape(value: Any) -> Any:
    """`value` safe for a spreadsheet cell (strings only; reversible by `cell_unescape`)."""
    if (
        isinstance(value, str)
        and value
        and (
            value[0] in FORMULA_STARTS
            or (value[0] == "'" and len(value) > 1 and value[1] in (*FORMULA_STARTS, "'"))
        )
    ):
        return "'" + value
    return value


def cell_unescape(value: Any) -> Any:
    """The original of a `cell_escape`d value."""
    if isinstance(value, str) and len(value) > 1 and value[0] == "'" and value[1] in (*FORMULA_STARTS, "'"):
        return value[1:]
    return value


@contextlib.contextmanager
def csv_errors(path: str | Path) -> Iterator[None]:
    """Turn the csv module's errors while reading `path` (a cell over `csv.field_size_limit()`,
    131,072 characters; a NUL byte) into one line naming the file (InputError, exit 2)."""
    try:
        yield
    except csv.Error as exc:
        raise InputError(f"{path}: not a CSV file medsimp can read ({exc})") from None
