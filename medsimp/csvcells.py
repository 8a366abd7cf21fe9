"""Spreadsheet cells safe from formula injection (OWASP "CSV Injection").

A cell starting with one of FORMULA_STARTS is read as a formula by Excel/LibreOffice. Exports
prefix such cells with a single quote; `cell_unescape` undoes it, so a CSV the project reads
back round-trips exactly.
"""

from __future__ import annotations

from typing import Any

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
