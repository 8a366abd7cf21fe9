"""Atomic, deterministic outputs that never destroy what medsimp did not write.

A stage writes into `.<out>.tmp-<pid>` beside `<out>` and swaps it in only when complete,
so a killed run leaves the previous output intact. Every output folder carries a marker
file (`.medsimp-output`) naming the command that wrote it and the lineage of its data;
`atomic_dir` refuses (exit 2) to replace a folder without that marker, a folder holding
one of the command's inputs, or an existing file. A marked folder written by the same
command is replaced (the normal rerun); one written by another command needs `force`.
Temp folders of dead processes are swept on the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from medsimp.errors import UsageError

MARKER = ".medsimp-output"
_RUN = {"command": "", "force": False}  # set once per CLI invocation by `configure`


def configure(command: str, force: bool = False) -> None:
    """The running command's name (written in markers) and its --force flag."""
    _RUN.update(command=command, force=force)


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and fixed separators: the same object gives the same bytes."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def write_json(path: str | Path, obj: Any) -> None:
    """Write canonical JSON atomically, as `atomic_file` (stats, metrics, reports)."""
    with atomic_file(path, same_content_ok=True) as tmp:
        tmp.write_text(canonical_json(obj), encoding="utf-8")


def write_text(path: str | Path, text: str) -> None:
    """Write a text report (e.g. HTML) atomically, as `atomic_file`."""
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write rows as JSON Lines (sorted keys) atomically (inside an output folder)."""
    with atomic_file(path) as tmp:
        tmp.write_text(
            "".join(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n" for row in rows),
            encoding="utf-8",
        )


OWNER_SUFFIX = ".medsimp-owner"  # `.<name>.medsimp-owner` beside a single-file output
_ACTIVE: set[Path] = set()  # temp folders `atomic_dir` is filling in this process


def _owner_record(path: Path) -> Path:
    return path.with_name(f".{path.name}{OWNER_SUFFIX}")


def _digest(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _owned(path: Path) -> bool:
    """True if medsimp wrote `path` and nobody changed it since (its ownership record)."""
    try:
        record = json.loads(_owner_record(path).read_text(encoding="utf-8"))
        return isinstance(record, dict) and record.get("sha256") == _digest(path)
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def _in_output_dir(path: Path) -> bool:
    where = path.absolute()
    return any(_inside(where, tmp) for tmp in _ACTIVE)


NOT_OURS = (
    "exists and was not written by medsimp (or was changed since); choose another path or remove it first"
)


def check_file_target(path: str | Path, same_content_ok: bool = False) -> bool:
    """Raise UsageError unless medsimp may replace the file `path` (see `atomic_file`).
    With `same_content_ok`, True means: only by byte-identical content."""
    path = Path(path)
    if path.is_symlink():
        raise UsageError(f"{path} is a symbolic link; give a plain file path")
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give a file path")
    foreign = path.exists() and not _in_output_dir(path) and not _owned(path)
    if foreign and not same_content_ok:
        raise UsageError(f"{path} {NOT_OURS}")
    return foreign


@contextlib.contextmanager
def atomic_file(path: str | Path, same_content_ok: bool = False) -> Iterator[Path]:
    """Yield a temp path beside `path`; on success it replaces `path` atomically.

    Outside an output folder the file gets an ownership record (`.<name>.medsimp-owner`: the
    writing command and the file's sha256). An existing file without a matching record, i.e.
    one medsimp did not write or someone changed since, is refused (exit 2) before anything
    is written; with `same_content_ok` (metrics) it is replaced by byte-identical content
    only. The temp file keeps the name's suffix (`.gz` stays `.gz`).
    """
    path = Path(path)
    foreign = check_file_target(path, same_content_ok)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    try:
        yield tmp
        if foreign and (not tmp.is_file() or _digest(tmp) != _digest(path)):
            raise UsageError(f"{path} {NOT_OURS}")
        if _in_output_dir(path):
            os.replace(tmp, path)
            return
        record = {"command": str(_RUN["command"]), "sha256": _digest(tmp), "tool": "medsimp"}
        os.replace(tmp, path)
        owner = _owner_record(path)
        owner_tmp = owner.with_name(f"{owner.name}.tmp-{os.getpid()}")
        owner_tmp.write_text(canonical_json(record), encoding="utf-8")
        os.replace(owner_tmp, owner)
    finally:
        tmp.unlink(missing_ok=True)


def marker_of(folder: str | Path) -> dict[str, Any] | None:
    """The marker of an output folder (None when absent or unreadable)."""
    try:
        data = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def check_output_target(
    final: str | Path, command: str, inputs: Iterable[str | Path] = (), force: bool = False
) -> None:
    """Raise UsageError unless `command` may replace `final` (see the module docstring)."""
    final = Path(final)
    where = final.resolve()
    for item in inputs:
        if item and _inside(Path(item).resolve(), where):
            raise UsageError(f"--output {final} holds the input {item}; write the output to another folder")
    if not final.exists() and not final.is_symlink():
        return
    if not final.is_dir() or final.is_symlink():
        raise UsageError(f"--output {final} is an existing file; give a new folder path")
    if not any(final.iterdir()):
        return
    marker = marker_of(final)
    if marker is None:
        raise UsageError(
            f"--output {final} is a folder medsimp did not write (no {MARKER}); choose a new or empty folder"
        )
    if marker.get("command") != command and not force:
        raise UsageError(
            f"--output {final} was written by `medsimp {marker.get('command')}`; "
            "pass --force to replace it with this command's output"
        )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(final: Path) -> None:
    """Remove temp/old siblings of `final` left by processes that no longer run."""
    if not final.parent.is_dir():
        return
    for sibling in final.parent.glob(f".{final.name}.*-*"):
        kind, _, pid = sibling.name.rpartition("-")
        if not (kind.endswith((".tmp", ".old")) and pid.isdigit()) or _pid_alive(int(pid)):
            continue
        if sibling.is_dir() and not sibling.is_symlink():
            shutil.rmtree(sibling, ignore_errors=True)
        else:
            sibling.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_dir(
    final: str | Path,
    command: str = "",
    *,
    inputs: Iterable[str | Path] = (),
    force: bool = False,
    lineage: Iterable[str] | None = None,
) -> Iterator[Path]:
    """Yield a fresh temp directory beside `final`; on success swap it into place.

    `command` names the writer in the folder's marker with the data's source tags: `lineage`,
    else the union over the Parquet tables written (stages writing only JSONL/CSV pass it).
    On error or interrupt the temp directory is removed and `final` is left as it was.
    """
    final = Path(final)
    command = command or str(_RUN["command"]) or final.name
    check_output_target(final, command, inputs, force or bool(_RUN["force"]))
    final.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(final)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    _ACTIVE.add(tmp.absolute())
    try:
        yield tmp
        marker: dict[str, Any] = {"command": command, "tool": "medsimp"}
        if lineage is not None:
            marker["lineage"] = sorted(set(lineage))
        elif any(tmp.rglob("*.parquet")):  # the union of the tables written (None: unknown)
            from medsimp.lineage import read_lineage

            tags = read_lineage(tmp)
            marker["lineage"] = list(tags) if tags is not None else None
        (tmp / MARKER).write_text(canonical_json(marker), encoding="utf-8")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        _ACTIVE.discard(tmp.absolute())
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


# Spreadsheet formula injection (OWASP "CSV Injection"): a cell starting with one of these
# is read as a formula by Excel/LibreOffice. Exports prefix such cells with a single quote;
# `cell_unescape` undoes it, so a CSV the project reads back round-trips exactly.
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


RUN_KEYS = ("cache_hits", "cache_misses", "resumed_from_epoch")  # how a run went, not what it produced
RUN_SUFFIX = ".run.json"


def output_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """Stats without RUN_KEYS, so outputs and metrics stay byte-identical whether or not the
    document cache was warm."""
    return {k: v for k, v in stats.items() if k not in RUN_KEYS}


# The headline numbers each kind of stage shows in `dvc metrics show` / `dvc exp show`; the
# whole stats record stays in the stage output's stats.json (docs/metrics.md).
HEADLINE: dict[str, tuple[str, ...]] = {
    "notes": ("read", "kept", "rejected", "sentences", "sentences_selected"),
    "radiology": ("read", "kept", "rejected", "sentences", "sentences_kept"),
    "umls_index": ("terms",),
    "cochrane": ("read", "kept", "filtered", "rejected", "reviews", "sentences"),
    "msd": ("read", "kept", "filtered", "rejected", "groups"),
    "plaba": ("read", "kept", "rejected", "pairs"),
    "link": ("read", "kept", "rejected", "concepts", "sentences_without_index"),
    "align_train": ("gold_pairs", "train_precision", "train_recall", "train_f1"),
    "align": ("read", "kept", "rejected", "pairs_total"),
    "filter": ("read", "kept", "filtered", "threshold"),
    "build": ("read", "kept", "filtered", "rejected"),
    "train": ("read", "kept", "rejected", "best_val_loss", "predictions_test"),
    "simplify": ("read", "kept", "rejected", "skipped"),
    "humaneval": ("read", "kept", "rejected", "skipped"),
    "annotate": ("read", "kept", "filtered", "rejected", "gold_pairs", "alpha_alignment"),
}


def write_metrics(
    path: str | Path, stats: Mapping[str, Any], kind: str, run: Mapping[str, Any] | None = None
) -> None:
    """A stage's `--metrics` file (DVC hashes it, git tracks it): the HEADLINE numbers of what
    a `kind` of stage produced (its full stats are the output's stats.json).
    How this run went (RUN_KEYS, provenance such as the git revision: `run`) goes to
    `<path>.run.json` beside it, which dvc.yaml does not declare and git ignores, so a warm
    run, a cold run and a run at another commit write the same metrics bytes."""
    kept = output_stats(stats)
    write_json(path, {k: kept[k] for k in HEADLINE[kind] if k in kept})
    record = {**{k: stats[k] for k in RUN_KEYS if k in stats}, **(run or {})}
    write_json(Path(str(path) + RUN_SUFFIX), record)


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
