"""Reading and counting records, shared by the source jobs (cochrane, msd, plaba) and `link`:
whole-file checks of JSON Lines (`check_json_lines`), numbered records with their FormatError
dead letters (`read_records`, `ParseFn`) and counters declared on first use (`Counter`).
How a job is declared and run (its tables, stats.json, the summary): `pipelines.jobs.runtime`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from medsimp.errors import InputError
from medsimp.stats import dead_letter
from pipelines.sources.files import check_file, check_lines, iter_lines
from pipelines.sources.records import FormatError, Line, guarded


class Counter:
    """`Counter(ns).inc("kept")` without declaring every counter up front."""

    def __init__(self, namespace: str):
        self.namespace = namespace
        self._counters: dict[str, Any] = {}

    def inc(self, name: str, n: int = 1) -> None:
        if name not in self._counters:
            self._counters[name] = Metrics.counter(self.namespace, name)
        self._counters[name].inc(n)


def check_json_lines(path: str) -> None:
    """Whole-file faults (`check_file`), and a file in which no line is a JSON object (not
    JSON Lines at all) or one with a line over `MAX_LINE_BYTES` (`check_lines`): one line, exit 2."""
    check_file(path)
    check_lines(path)
    for _, text in iter_lines(path):
        if isinstance(text, str) and text.strip().startswith("{"):
            try:
                if isinstance(json.loads(text), dict):
                    return
            except (ValueError, RecursionError):
                continue
    raise InputError(f"{path}: not JSON Lines (no line is a JSON object)")


def read_records(path: str, parse: Callable[[Line], Any]) -> Iterator[tuple[str, Any]]:
    """(locator `file:line`, parse(line) or the FormatError standing for any exception of it)
    for each non-blank line (input_files.iter_lines: any newline convention, BOM, last line).

    A line that is not valid UTF-8 becomes a `bad_utf8` FormatError (never silently replaced).
    """
    name = FileSystems.split(path)[1]
    ordinal = 0
    for number, text in iter_lines(path):
        locator = f"{name}:{number}"
        if isinstance(text, UnicodeDecodeError):
            ordinal += 1
            yield locator, FormatError("bad_utf8", f"invalid byte at column {text.start}")
            continue
        if not text.strip():
            continue
        ordinal += 1
        yield locator, guarded(parse, Line(text.strip(), number, ordinal, locator))


@beam.typehints.with_output_types(Any)
class ParseFn(beam.DoFn):
    """Count parsed records; FormatErrors go to the `dead` output, records keyed by `key`."""

    def __init__(self, source: str, key: Callable[[Any], str]):
        self.source, self.key = source, key

    def setup(self):
        self.count = Counter(self.source)

    def process(self, item):
        locator, value = item
        self.count.inc("read")
        if isinstance(value, FormatError):
            self.count.inc("rejected")
            self.count.inc(f"rejected.{value.reason}")
            yield beam.pvalue.TaggedOutput(
                "dead", dead_letter(self.source, locator, value.reason, value.detail)
            )
        else:
            yield self.key(value), value
