"""A stage's numbers: reconciled counts, the stats kept in outputs, the `--metrics` file DVC
tracks, and the summary printed on stderr (docs/metrics.md)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from medsimp.atomic import write_json

RUN_KEYS = ("cache_hits", "cache_misses", "resumed_from_epoch")  # how a run went, not what it produced
RUN_SUFFIX = ".run.json"


def output_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """Stats without RUN_KEYS, so outputs and metrics stay byte-identical whether or not the
    document cache was warm."""
    return {k: v for k, v in stats.items() if k not in RUN_KEYS}


# Facts of the running command every run record carries (`record_run`): the hash of the params
# it loaded (`medsimp.config.params_hash`), so a refresh report says what each stage ran with.
_RUN_FACTS: dict[str, Any] = {}


def record_run(**facts: Any) -> None:
    """Set what every `<metrics>.run.json` of this process records (the CLI: `params_hash`)."""
    _RUN_FACTS.update(facts)


def write_metrics(
    path: str | Path, stats: Mapping[str, Any], headline: Sequence[str], run: Mapping[str, Any] | None = None
) -> None:
    """A stage's `--metrics` file (DVC hashes it, git tracks it): the `headline` numbers the
    stage declares, so `dvc metrics show` stays readable (its full stats are the output's stats.json).
    How this run went (RUN_KEYS, provenance such as the git revision: `run`) goes to
    `<path>.run.json` beside it, which dvc.yaml does not declare and git ignores, so a warm
    run, a cold run and a run at another commit write the same metrics bytes."""
    kept = output_stats(stats)
    write_json(path, {k: kept[k] for k in headline if k in kept})
    record = {**{k: stats[k] for k in RUN_KEYS if k in stats}, **_RUN_FACTS, **cost(stats), **(run or {})}
    record["history"] = run_history(Path(str(path) + RUN_SUFFIX), record)
    write_json(Path(str(path) + RUN_SUFFIX), record)


HISTORY_RUNS = 8  # runs a run record remembers for the refresh plan's fit (medsimp.refresh.plan)


def run_history(path: Path, record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The last HISTORY_RUNS runs' CPU seconds, documents read and documents computed (`work`:
    the cache's misses when the stage has a document cache, else the documents read), this run
    last: the earlier ones from the run record at `path` (a regular file medsimp wrote; anything
    else starts the history afresh)."""
    past: list[dict[str, Any]] = []
    try:
        if path.is_file() and not path.is_symlink():
            old = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(old, dict) and isinstance(old.get("history"), list):
                past = [p for p in old["history"] if isinstance(p, dict)]
    except (OSError, ValueError, RecursionError):
        past = []
    misses, documents = record.get("cache_misses"), record.get("documents")
    work = misses if isinstance(misses, int) and not isinstance(misses, bool) else documents
    point = {"cpu_seconds": record.get("cpu_seconds"), "documents": documents, "work": work}
    if record.get("runner"):  # a portable runner's CPU is the launcher's only: fitted apart
        point["runner"] = record["runner"]
    return [*past, point][-HISTORY_RUNS:]


def cost(stats: Mapping[str, Any]) -> dict[str, Any]:
    """What this run cost so far (issue 55: a refresh report's per-stage figures, the plan's
    estimate): wall seconds since the process started, CPU seconds of this process and of the
    worker processes it waited for (Beam's local workers; an external pool's are not seen), and
    the documents it read (`read`, else `documents`)."""
    import resource

    import psutil

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    documents = stats.get("read", stats.get("documents"))
    return {
        "wall_seconds": round(time.time() - psutil.Process().create_time(), 1),
        "cpu_seconds": round(own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime, 1),
        "documents": documents if isinstance(documents, int) and not isinstance(documents, bool) else None,
    }


def dead_letter(source: str, locator: str, reason: str, detail: str = "") -> dict:
    """A rejected record: where it came from, why, and a detail that is never record text."""
    return {"source": source, "locator": locator, "reason": reason, "detail": detail}


class CountsMismatch(AssertionError):
    """Counts in a stats record do not reconcile."""


def check_reconciles(counts: Mapping[str, Any], total: str, parts: list[str]) -> None:
    """Raise CountsMismatch unless counts[total] == sum(counts[p] for p in parts)."""
    got = sum(int(counts.get(p, 0)) for p in parts)
    if int(counts.get(total, 0)) != got:
        detail = " + ".join(f"{p}={counts.get(p, 0)}" for p in parts)
        raise CountsMismatch(f"{total}={counts.get(total, 0)} but {detail} = {got}")


def _rejected(counts: Mapping[str, Any]) -> tuple[int, dict[str, int]]:
    """(records dead-lettered, by reason): the stats contract's `rejected` and `rejected_by`."""
    return int(counts.get("rejected") or 0), dict(counts.get("rejected_by") or {})


def summary_notes(counts: Mapping[str, Any], notes: Iterable[str] = ()) -> list[str]:
    """Warnings that matter, in plain words: dead-lettered records (always checked) and the
    stage's own `notes`."""
    out = []
    total, reasons = _rejected(counts)
    if total:
        why = ", ".join(f"{reason} {n}" for reason, n in sorted(reasons.items()))
        out.append(
            f"{total} record(s) could not be used and were set aside in dead_letter/"
            f"{f' ({why})' if why else ''}; the rest were processed."
        )
    return out + list(notes)


def print_summary(title: str, counts: Mapping[str, Any], notes: Iterable[str] = ()) -> None:
    """The stage's counts on stderr in a compact grid (rich; a map such as `rejected_by` is one
    row, `reason n, reason n`; two key/value columns when there are many rows), then each
    warning that matters once (`summary_notes`)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    rows = []
    for key in sorted(counts):
        value = counts[key]
        if isinstance(value, Mapping):
            value = ", ".join(f"{sub} {value[sub]}" for sub in sorted(value))
        elif isinstance(value, list | tuple):
            value = ", ".join(map(str, value))
        rows.append((key, str(value)))
    columns = 2 if len(rows) > 8 else 1
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_header=False,
        padding=(0, 1),
        show_edge=False,
    )
    for _ in range(columns):
        table.add_column(style="dim", no_wrap=True)
        table.add_column(justify="right", overflow="fold")
    half = -(-len(rows) // columns)
    for i in range(half):
        cells = [cell for j in range(columns) if i + j * half < len(rows) for cell in rows[i + j * half]]
        table.add_row(*cells, *[""] * (2 * columns - len(cells)))
    console = Console(stderr=True, width=None if sys.stderr.isatty() else 120)  # logs: wider
    console.print(table)
    for note in summary_notes(counts, notes):
        console.print(f"note: {note}", highlight=False, markup=False)


def finish_stage(
    title: str,
    stats: Mapping[str, Any],
    headline: Sequence[str],
    metrics: str | Path | None = None,
    *,
    summary: Mapping[str, Any] | None = None,
    notes: Iterable[str] = (),
    run: Mapping[str, Any] | None = None,
) -> None:
    """The epilogue of every stage, once its counts are final: the `--metrics` file with the
    stage's own `headline` numbers (when asked for), then the summary on stderr (`summary`:
    the counts to show, default `stats`) with each warning that matters once. The Beam jobs
    (`pipelines.jobs`) call it inside their publishing folder (`medsimp.atomic.atomic_dir`), just
    before it is swapped in, so the metrics file is written even if the swap then fails (the
    command exits non-zero and DVC records nothing); the other commands call it once their
    output is published."""
    if metrics:
        write_metrics(metrics, stats, headline, run)
    print_summary(title, stats if summary is None else summary, notes)
