"""A Beam job declared and run: `JobSpec` says what a job writes and counts, `run_job` runs it.

A job module holds its composite PTransforms (PBegin -> {tag: PCollection}: `expand()` reads
like the DAG) and its tables; its `run()` checks its inputs and hands the composite and its
`JobSpec` to `run_job`, as Beam's own examples build options and apply one composite::

    spec = JobSpec("cochrane", TABLES, ("cochrane",), num_shards=params.num_shards)
    return run_job(spec, CochraneSentences(specs, out_dir), out_dir, beam_params, beam_args, metrics)

`run_job` owns what every job shares: the tables' Parquet schemas stamped with the lineage,
their folders, the pipeline (`beam_io.new_pipeline`) with a sorted, sharded writer per table,
the progress display when declared, then `finish`: empty shards filled, Beam counters turned
into a reconciled stats.json that agrees with the rows written, and the stage's summary
(`medsimp.stats.finish_stage`). Counter names may contain one dot (`rejected.bad_json`): they
become nested maps. The caller publishes the output (`medsimp.atomic.atomic_dir`,
`objstore.stage_output`): `out_dir` is the folder being staged.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from medsimp.atomic import canonical_json
from medsimp.errors import StageFailed
from medsimp.lineage import with_lineage
from medsimp.params_schema import Beam
from medsimp.progress import watch
from medsimp.stats import check_reconciles, finish_stage, output_stats
from pipelines.jobs.beam_io import counters, new_pipeline
from pipelines.jobs.sorted_io import WriteSorted, fill_empty_shards, glob_escape
from pipelines.jobs.store import write_file
from pipelines.sources.rows import locator_key

DEAD_LETTER = "dead_letter"
# What `dvc metrics show` shows of a stage: the counts every data stage shares, so the table stays
# narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")
PROGRESS = ".progress"  # the folder workers count progress in, removed before the output is published


@dataclass(frozen=True)
class Table:
    """One output table: sub-directory ("" = the output dir), schema (None -> jsonl), keys, and
    `counter`, the job's counter that must equal the rows written (None: not checked). Without
    keys the composite writes the table's files itself (the notes' one file per batch):
    `run_job` attaches no writer and writes one empty part if the job wrote none."""

    name: str
    schema: pa.Schema | None
    shard_key: Callable[[dict], str] | None = None
    sort_key: Callable[[dict], Any] | None = None
    counter: str | None = None


def dead_letter_table() -> Table:
    return Table(
        DEAD_LETTER,
        None,
        lambda r: r["locator"],
        lambda r: (locator_key(r["locator"]), r["reason"], r["detail"]),
        counter="rejected",
    )


@dataclass(frozen=True)
class Progress:
    """What the live display counts while the job runs: `total` `unit`s, which the job's DoFns
    tick in a `medsimp.progress.ProgressSink` on `progress_folder(out_dir)`."""

    total: int
    label: str
    unit: str = "documents"


@dataclass(frozen=True)
class JobSpec:
    """A job's run, declared.

    namespace: its Beam counter namespace (the summary's title is `medsimp <namespace>`);
    tables: the table each output tag of its composite is written to; lineage: the tags its
    Parquet schemas carry (None: unknown, left unstamped, which every guard treats as
    MIMIC-derived); num_shards: the shards of each Parquet table (JSON Lines: one);
    reconcile: (total, parts) rules the stats must satisfy; zero: counters stats.json holds as 0
    when nothing counted them; headline: what `dvc metrics show` shows; extra: facts stats.json
    records beside the counts; notes: the summary's notes, from the final stats; progress: a
    live count while the job runs; hidden: stats the summary leaves out.

    Two hooks for a job whose outputs need more than counters: `after_run(out_dir)` runs once
    the pipeline finished (delete a GroupSorted's run files; raise a fault the dead letters
    record), and `stats(result)` builds the stats from the result instead of nesting the
    namespace's counters (the notes jobs' contract, which needs committed counters).
    """

    namespace: str
    tables: Mapping[str, Table]
    lineage: tuple[str, ...] | None
    num_shards: int = 1
    reconcile: tuple[tuple[str, tuple[str, ...]], ...] = (("read", ("kept", "filtered", "rejected")),)
    zero: tuple[str, ...] = ()
    headline: tuple[str, ...] = HEADLINE
    extra: Mapping[str, Any] = field(default_factory=dict)
    notes: Callable[[Mapping[str, Any]], Iterable[str]] | None = None
    progress: Progress | None = None
    hidden: tuple[str, ...] = ()
    after_run: Callable[[str], None] | None = None
    stats: Callable[[Any], dict] | None = None


def progress_folder(out_dir: str) -> str:
    """Where a job's workers count their progress (`JobSpec.progress`)."""
    return FileSystems.join(out_dir, PROGRESS)


def run_job(
    spec: JobSpec,
    job: beam.PTransform,
    out_dir: str,
    beam_params: Beam,
    beam_args: Iterable[str],
    metrics_file: str | None,
) -> dict:
    """Run the composite `job` (PBegin -> {tag: PCollection}) into `out_dir` as `spec` declares,
    then `finish`: -> the stats."""
    tables = stamp(spec.tables, spec.lineage)
    prepare_dirs(out_dir, tables)
    shown = spec.progress
    display = (
        watch(progress_folder(out_dir), shown.total, shown.label, shown.unit)
        if shown
        else contextlib.nullcontext()
    )
    with display, new_pipeline(beam_params, beam_args) as pipeline:
        write_tables(pipeline | job, tables, out_dir, spec.num_shards)
    if spec.after_run is not None:
        spec.after_run(out_dir)
    return finish(pipeline.result, spec, out_dir, metrics_file)


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
    """Attach a sorted, sharded writer for every table the job does not write itself."""
    for name, table in tables.items():
        if table.shard_key is None or table.sort_key is None:
            continue
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


def fill_empty_tables(out_dir: str, tables: Mapping[str, Table], num_shards: int) -> None:
    """An empty file for every shard the job did not write (a table the job writes itself: one
    empty part if it wrote none), and no run file left."""
    for table in tables.values():
        folder = _table_dir(out_dir, table)
        if table.sort_key is None:
            if not FileSystems.match([FileSystems.join(glob_escape(folder), "*")])[0].metadata_list:
                fill_empty_shards(folder, "part", 1, table.schema)
            continue
        fmt = "parquet" if table.schema is not None else "jsonl"
        fill_empty_shards(folder, "part", num_shards if fmt == "parquet" else 1, table.schema, fmt)


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


def check_written(counts: Mapping[str, Any], written: Mapping[str, int], tables: Mapping[str, Table]) -> None:
    """Fail the job (nothing is published) when a table's rows written differ from the counter
    that names them (`name.*` sums the counters `name.<part>`): a runner whose workers wrote
    somewhere else (another current folder) must not publish empty tables with stats that say
    they are full."""
    for table in tables.values():
        if table.counter is None:
            continue
        name, rows = table.counter, written[table.name]
        counted = (
            sum(v for k, v in counts.items() if k.startswith(name[:-1]))
            if name.endswith(".*")
            else counts.get(name, 0)
        )
        if rows != counted:
            raise StageFailed(
                f"{rows} rows written to {table.name or 'the output'} but the job counted {counted} "
                f"({name}): rows were lost between the workers and the output (workers that cannot "
                "see the output path?); nothing is published"
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


def _reconcile(stats: Mapping[str, Any], rules: Iterable[tuple[str, tuple[str, ...]]]) -> None:
    for total, parts in rules:
        check_reconciles(stats, total, list(parts))


def finish(result, spec: JobSpec, out_dir: str, metrics_file: str | None) -> dict:
    """Fill empty shards, turn the job's counters into reconciled stats that agree with the
    rows written, write stats.json (+ the metrics file) and the summary, which says the spec's
    notes (and any dead letters) in plain words. A runner without committed counters gets stats
    counted from the outputs (`stats_from_outputs`), unless the spec builds its own."""
    tables = stamp(spec.tables, spec.lineage)
    fill_empty_tables(out_dir, tables, spec.num_shards)
    written = {
        table.name: written_rows(_table_dir(out_dir, table), table.schema is not None)
        for table in tables.values()
    }
    notes: list[str] = []
    if spec.stats is not None:
        stats = spec.stats(result)
        check_written(stats, written, tables)
        _reconcile(stats, spec.reconcile)
    else:
        flat = counters(result, spec.namespace)
        if flat == {} and any(written.values()):  # rows written, no counter at all: none reported
            flat = None
        if flat is None:  # the runner gives no committed counters: count what was written
            stats = stats_from_outputs(written, out_dir, tables)
            notes.append(
                "the runner reported no committed counters: stats.json counts the rows written "
                "(counted_from: outputs)"
            )
        else:
            for key in [*(k for total, parts in spec.reconcile for k in (total, *parts)), *spec.zero]:
                flat.setdefault(key, 0)
            check_written(flat, written, tables)
            stats = nest(flat)
            _reconcile(stats, spec.reconcile)
    stats.update(spec.extra)
    write_file(FileSystems.join(out_dir, "stats.json"), canonical_json(output_stats(stats)).encode("utf-8"))
    shown = {k: v for k, v in stats.items() if k not in spec.hidden}
    notes = [*(spec.notes(stats) if spec.notes else ()), *notes]
    finish_stage(f"medsimp {spec.namespace}", stats, spec.headline, metrics_file, summary=shown, notes=notes)
    return stats
