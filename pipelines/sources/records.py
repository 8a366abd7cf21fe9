"""Per-record guards shared by the source readers: one bad record costs one record.

`FormatError(reason, detail)` is a record that cannot be used: it becomes a dead letter.
`loads` is strict JSON (duplicate keys, NaN, nesting deeper than `MAX_DEPTH`, lone
surrogates and over-long numbers are reasons, not exceptions); `members` walks the
members of a large JSON object one by one so that one bad member costs only itself;
`guarded` turns any exception of a parser into a FormatError. Details name fields,
positions and lengths, never record text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

MAX_DEPTH = 64
INT32_MAX = 2**31 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")
_DECODER = json.JSONDecoder()
# A JSON string, or one bracket: enough to find where a (syntactically sane) value ends.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_SCALAR_END = re.compile(r"[,}\]\s]")


class Line(NamedTuple):
    """One non-blank line of a line-per-record file: `number` is the physical line,
    `ordinal` the 1-based position among non-blank lines (blank lines shift nothing)."""

    text: str
    number: int
    ordinal: int
    locator: str


class FormatError(ValueError):
    """A record that cannot be used; `reason` is a short stable code for dead letters."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for index, (key, _) in enumerate(pairs, start=1):
            if key in seen:
                raise FormatError("duplicate_key", f"an object repeats a key (member {index})")
            seen.add(key)
    return out


def _constant(name: str):
    raise FormatError("bad_json", f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise FormatError("bad_json", "a number is out of the float range")
    return value


def loads(text: str) -> Any:
    """Strict JSON: FormatError `bad_json`, `duplicate_key`, `too_deep` or `lone_surrogate`."""
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
        raise FormatError("bad_json", f"{exc.msg} at {where}") from None
    except RecursionError:
        raise FormatError("too_deep", f"nesting deeper than {MAX_DEPTH}") from None
    except ValueError as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError("bad_json", "a number has too many digits") from None
    check_value(value)
    return value


def check_value(value: Any) -> None:
    """FormatError `too_deep` past MAX_DEPTH, `lone_surrogate` in any string or key."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise FormatError("lone_surrogate", "a string holds an unpaired UTF-16 surrogate")
        elif isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise FormatError("too_deep", f"nesting deeper than {MAX_DEPTH}")
            if isinstance(item, dict):
                stack.extend((k, depth) for k in item)
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)


def check_text(value: str, field: str) -> str:
    """A string field as stored: no unpaired surrogate (Arrow cannot write one)."""
    if _SURROGATE.search(value):
        raise FormatError("lone_surrogate", f"{field} holds an unpaired UTF-16 surrogate")
    return value


def int_field(value: Any, field: str, reason: str, low: int = 0, high: int = INT32_MAX) -> int:
    """An integer (not a bool) within [low, high], else FormatError(reason)."""
    if type(value) is not int or not low <= value <= high:
        raise FormatError(reason, f"{field} must be an integer in [{low}, {high}]")
    return value


def value_end(text: str, start: int) -> int:
    """Index after the JSON value that starts at `start` (strings and brackets balanced)."""
    if text[start : start + 1] not in ("{", "["):
        if text[start : start + 1] == '"':
            match = _TOKEN.match(text, start)
            if match is None:
                raise FormatError("bad_json", f"unterminated string at offset {start}")
            return match.end()
        match = _SCALAR_END.search(text, start)
        return match.start() if match else len(text)
    depth = 0
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        if token in ("{", "["):
            depth += 1
        elif token in ("}", "]"):
            depth -= 1
            if depth == 0:
                return match.end()
    raise FormatError("bad_json", f"unclosed bracket opened at offset {start}")


def _ws(text: str, pos: int) -> int:
    """The index of the first character at or after `pos` that is not JSON whitespace."""
    while pos < len(text) and text[pos] in " \t\n\r":
        pos += 1
    return pos


def members(text: str, start: int = 0) -> Iterator[tuple[str, int, int]]:
    """(key, value start, value end) for each member of the JSON object at `start`, without
    parsing the values (parse each with `loads(text[s:e])`). Raises FormatError `bad_json`
    when the object itself is malformed (keys, colons, commas, brackets)."""
    pos = _ws(text, start)
    if text[pos : pos + 1] != "{":
        raise FormatError("bad_json", f"expected an object at offset {pos}")
    pos = _ws(text, pos + 1)
    if text[pos : pos + 1] == "}":
        return
    while True:
        if text[pos : pos + 1] != '"':
            raise FormatError("bad_json", f"expected a key at offset {pos}")
        try:
            key, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError:
            raise FormatError("bad_json", f"bad key at offset {pos}") from None
        pos = _ws(text, pos)
        if text[pos : pos + 1] != ":":
            raise FormatError("bad_json", f"expected ':' at offset {pos}")
        begin = _ws(text, pos + 1)
        end = value_end(text, begin)
        if end == begin:
            raise FormatError("bad_json", f"expected a value at offset {begin}")
        yield key, begin, end
        pos = _ws(text, end)
        if text[pos : pos + 1] == "}":
            return
        if text[pos : pos + 1] != ",":
            raise FormatError("bad_json", f"expected ',' or '}}' at offset {pos}")
        pos = _ws(text, pos + 1)


def guarded(parse: Callable[..., Any], *args: Any) -> Any:
    """parse(*args), or the FormatError that stands for any exception it raised."""
    try:
        return parse(*args)
    except FormatError as exc:
        return exc
    except RecursionError:
        return FormatError("too_deep", f"nesting deeper than {MAX_DEPTH}")
    except Exception as exc:  # noqa: BLE001 - one bad record costs one record
        return FormatError("unreadable_record", type(exc).__name__)
