"""Shared plumbing of the source jobs (cochrane, msd, plaba) and `link`.

A job builds its PCollections, hands them to `write_tables`, runs, and `finish` turns
Beam counters into a reconciled `stats.json` (plus an optional `--metrics` copy).
Counter names may contain one dot (`rejected.bad_json`): they become nested maps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from medsimp.atomic import canonical_json
from medsimp.errors import InputError, StageFailed
from medsimp.lineage import with_lineage
from medsimp.stats import check_reconciles, dead_letter, finish_stage, output_stats
from pipelines.jobs.beam_io import counters
from pipelines.jobs.sorted_io import WriteSorted, fill_empty_shards, glob_escape
from pipelines.jobs.store import write_file
from pipelines.sources.files import check_file, check_lines, iter_lines
from pipelines.sources.records import FormatError, Line, guarded
from pipelines.sources.rows import locator_key

DEAD_LETTER = "dead_letter"


@dataclass(frozen=True)
class Table:
    """One output table: sub-directory ("" = the output dir), schema (None -> jsonl), keys, and
    `counter`, the job's counter that must equal the rows written (None: not checked)."""

    name: str
    schema: pa.Schema | None
    shard_key: Callable[[dict], str]
    sort_key: Callable[[dict], Any]
    counter: str | None = None


def dead_letter_table() -> Table:
    return Table(
        DEAD_LETTER,
        None,
        lambda r: r["locator"],
        lambda r: (locator_key(r["locator"]), r["reason"], r["detail"]),
        counter="rejected",
    )


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


def stamp(tables: Mapping[str, Table], tags: Iterable[str] | None) -> dict[str, Table]:
    """The tables with `tags` as the lineage of every Parquet schema (None: unknown lineage,
    left unstamped, which every guard treats as MIMIC-derived)."""
    if tags is None:
        return dict(tables)
    return {
        name: replace(t, schema=with_lineage(t.schema, tags)) if t.schema is not None else t
        for name, t in tables.items()
    }


def write_tables(
    pcolls: Mapping[str, Any], tables: Mapping[str, Table], out_dir: str, num_shards: int
) -> None:
    """Attach a sorted, sharded writer for every table."""
    for name, table in tables.items():
        fmt = "parquet" if table.schema is not None else "jsonl"
        shards = num_shards if fmt == "parquet" else 1
        _ = pcolls[name] | f"Write_{name}" >> WriteSorted(
            _table_dir(out_dir, table),
            prefix="part",
            num_shards=shards,
            shard_key=table.shard_key,
            sort_key=table.sort_key,
            schema=table.schema,
            fmt=fmt,
        )


def _table_dir(out_dir: str, table: Table) -> str:
    return FileSystems.join(out_dir, table.name) if table.name else out_dir


def prepare_dirs(out_dir: str, tables: Mapping[str, Table]) -> None:
    for table in tables.values():
        if table.name:
            FileSystems.mkdirs(_table_dir(out_dir, table))


def written_rows(folder: str, parquet: bool) -> int:
    """Rows in a table's shard files as written (Parquet footers, JSONL lines)."""
    suffix = ".parquet" if parquet else ".jsonl"
    pattern = FileSystems.join(glob_escape(folder), f"part-*{suffix}")
    rows = 0
    for match in FileSystems.match([pattern]):
        for meta in match.metadata_list:
            with FileSystems.open(meta.path) as handle:
                if parquet:
                    rows += pq.ParquetFile(handle).metadata.num_rows
                else:
                    rows += sum(1 for line in handle if line.strip())
    return rows


def counted(flat: Mapping[str, int], counter: str) -> int:
    """A counter's value; `name.*` sums the counters `name.<part>` (per-side counts)."""
    if counter.endswith(".*"):
        return sum(v for k, v in flat.items() if k.startswith(counter[:-1]))
    return flat.get(counter, 0)


def check_written(flat: Mapping[str, int], written: Mapping[str, int], tables: Mapping[str, Table]) -> None:
    """The rows written equal the counters that name them (`check_rows`)."""
    for table in tables.values():
        if table.counter is not None:
            check_rows(
                table.name or "the output", written[table.name], table.counter, counted(flat, table.counter)
            )


def check_rows(table: str, written: int, counter: str, counted: int) -> None:
    """Fail the job (nothing is published) when the rows written differ from the rows counted:
    a runner whose workers wrote somewhere else (another current folder) must not publish
    empty tables with stats that say they are full."""
    if written != counted:
        raise StageFailed(
            f"{written} rows written to {table} but the job counted {counted} ({counter}): rows were "
            "lost between the workers and the output (workers that cannot see the output path?); "
            "nothing is published"
        )


def committed_counters(result, namespace: str) -> dict[str, int]:
    """`counters`, for the jobs whose stats need them (notes, radiology): a runner without
    committed counters is one line, and nothing is published."""
    flat = counters(result, namespace)
    if flat is None:
        raise StageFailed(
            "the runner reported no committed Beam counters, which this job's stats need; "
            "run it on a runner that reports them (FnApiRunner, PortableRunner, Flink, Spark, Dataflow)"
        )
    return flat


def stats_from_outputs(written: Mapping[str, int], out_dir: str, tables: Mapping[str, Table]) -> dict:
    """stats.json of a runner without committed counters: each table's rows as its counter (or
    `<table>_rows`), and the dead letters by reason, read back from what was written."""
    stats: dict[str, Any] = {"counted_from": "outputs"}
    for table in tables.values():
        name = table.counter if table.counter and not table.counter.endswith(".*") else None
        stats[name or f"{table.name or 'output'}_rows"] = written[table.name]
        if table.name == DEAD_LETTER:
            reasons: dict[str, int] = {}
            for _, record in read_jsonl_rows(_table_dir(out_dir, table)):
                reasons[record["reason"]] = reasons.get(record["reason"], 0) + 1
            if reasons:
                stats[f"{table.counter}_by"] = dict(sorted(reasons.items()))
    return stats


def read_jsonl_rows(folder: str) -> Iterator[tuple[str, dict]]:
    pattern = FileSystems.join(glob_escape(folder), "part-*.jsonl")
    for match in FileSystems.match([pattern]):
        for meta in sorted(match.metadata_list, key=lambda m: m.path):
            with FileSystems.open(meta.path) as handle:
                for line in handle:
                    if line.strip():
                        yield meta.path, json.loads(line)


def nest(flat: Mapping[str, int]) -> dict[str, Any]:
    """{"rejected.bad_json": 2} -> {"rejected_reasons": {"bad_json": 2}} beside plain counts."""
    out: dict[str, Any] = {}
    for key in sorted(flat):
        if "." in key:
            head, tail = key.split(".", 1)
            out.setdefault(f"{head}_by", {})[tail] = flat[key]
        else:
            out[key] = flat[key]
    return out


def finish(
    result,
    namespace: str,
    out_dir: str,
    tables: Mapping[str, Table],
    num_shards: int,
    metrics_file: str | None,
    extra: Mapping[str, Any] | None = None,
    reconcile: tuple[str, list[str]] = ("read", ["kept", "filtered", "rejected"]),
    zero: tuple[str, ...] = (),
    notes: Iterable[str] = (),
    headline: Sequence[str] = ("read", "kept", "filtered", "rejected"),
) -> dict:
    """Fill empty shards, reconcile counters and write stats.json (+ metrics copy); the
    summary says `notes` (and any dead letters) in plain words."""
    for table in tables.values():
        fmt = "parquet" if table.schema is not None else "jsonl"
        fill_empty_shards(
            _table_dir(out_dir, table), "part", num_shards if fmt == "parquet" else 1, table.schema, fmt
        )
    written = {
        table.name: written_rows(_table_dir(out_dir, table), table.schema is not None)
        for table in tables.values()
    }
    flat = counters(result, namespace)
    if flat == {} and any(written.values()):  # rows written, no counter at all: none reported
        flat = None
    if flat is None:  # the runner gives no committed counters: count what was written
        stats = stats_from_outputs(written, out_dir, tables)
        notes = [
            *notes,
            "the runner reported no committed counters: stats.json counts the rows written "
            "(counted_from: outputs)",
        ]
    else:
        for key in [reconcile[0], *reconcile[1], *zero]:
            flat.setdefault(key, 0)
        check_written(flat, written, tables)
        stats = nest(flat)
        check_reconciles(stats, reconcile[0], reconcile[1])
    stats.update(extra or {})
    write_file(FileSystems.join(out_dir, "stats.json"), canonical_json(output_stats(stats)).encode("utf-8"))
    finish_stage(f"medsimp {namespace}", stats, headline, metrics_file, notes=notes)
    return stats
