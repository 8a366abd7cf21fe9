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


def write_json(path: str | Path, obj: Any, *, force: bool = False) -> None:
    """Write canonical JSON atomically (temp file + rename).

    An existing file is replaced only if it holds a JSON object (what medsimp writes:
    stats, metrics) or `force` is set; anything else is refused, so a mistyped
    `--metrics` never clobbers a user's file.
    """
    path = Path(path)
    _check_file_target(path, force or bool(_RUN["force"]))
    _write_atomic(path, canonical_json(obj))


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write rows as JSON Lines (sorted keys) atomically (inside an output folder)."""
    _write_atomic(Path(path), "".join(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n"
                                      for row in rows))


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _check_file_target(path: Path, force: bool) -> None:
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give a file path")
    if not path.exists() or force:
        return
    try:
        ours = isinstance(json.loads(path.read_text(encoding="utf-8")), dict)
    except (OSError, UnicodeDecodeError, ValueError):
        ours = False
    if not ours:
        raise UsageError(f"{path} exists and was not written by medsimp; choose another path "
                         "or remove it first")


def marker_of(folder: str | Path) -> dict[str, Any] | None:
    """The marker of an output folder (None when absent or unreadable)."""
    try:
        data = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def check_output_target(final: str | Path, command: str, inputs: Iterable[str | Path] = (),
                        force: bool = False) -> None:
    """Raise UsageError unless `command` may replace `final` (see the module docstring)."""
    final = Path(final)
    where = final.resolve()
    for item in inputs:
        if item and _inside(Path(item).resolve(), where):
            raise UsageError(f"--output {final} holds the input {item}; write the output to "
                             "another folder")
    if not final.exists() and not final.is_symlink():
        return
    if not final.is_dir() or final.is_symlink():
        raise UsageError(f"--output {final} is an existing file; give a new folder path")
    if not any(final.iterdir()):
        return
    marker = marker_of(final)
    if marker is None:
        raise UsageError(f"--output {final} is a folder medsimp did not write (no {MARKER}); "
                         "choose a new or empty folder")
    if marker.get("command") != command and not force:
        raise UsageError(f"--output {final} was written by `medsimp {marker.get('command')}`; "
                         "pass --force to replace it with this command's output")


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
def atomic_dir(final: str | Path, command: str = "", *, inputs: Iterable[str | Path] = (),
               force: bool = False, lineage: Iterable[str] | None = None) -> Iterator[Path]:
    """Yield a fresh temp directory beside `final`; on success swap it into place.

    `command` names the writer in the folder's marker (with `lineage`, the data's source
    tags). On error or interrupt the temp directory is removed and `final` is left as it was.
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
    try:
        yield tmp
        marker: dict[str, Any] = {"command": command, "tool": "medsimp"}
        if lineage is not None:
            marker["lineage"] = sorted(set(lineage))
        (tmp / MARKER).write_text(canonical_json(marker), encoding="utf-8")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
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
    if isinstance(value, str) and value and (
            value[0] in FORMULA_STARTS
            or (value[0] == "'" and len(value) > 1 and value[1] in (*FORMULA_STARTS, "'"))):
        return "'" + value
    return value


def cell_unescape(value: Any) -> Any:
    """The original of a `cell_escape`d value."""
    if (isinstance(value, str) and len(value) > 1 and value[0] == "'"
            and value[1] in (*FORMULA_STARTS, "'")):
        return value[1:]
    return value


RUN_KEYS = ("cache_hits", "cache_misses")  # how a run went, not what it produced
RUN_SUFFIX = ".run.json"


def output_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """Stats without RUN_KEYS, so outputs and metrics stay byte-identical whether or not the
    document cache was warm."""
    return {k: v for k, v in stats.items() if k not in RUN_KEYS}


def write_metrics(path: str | Path, stats: Mapping[str, Any],
                  run: Mapping[str, Any] | None = None) -> None:
    """A stage's `--metrics` file (DVC hashes it, git tracks it): what the stage produced.
    How this run went (RUN_KEYS, provenance such as the git revision: `run`) goes to
    `<path>.run.json` beside it, which dvc.yaml does not declare and git ignores, so a warm
    run, a cold run and a run at another commit write the same metrics bytes."""
    write_json(path, output_stats(stats))
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
    """(records dead-lettered, by reason) from either stats shape (`rejected` + `rejected_by`,
    or `rows_rejected` + a `rejected` map)."""
    total = counts.get("rejected", counts.get("rows_rejected", 0))
    reasons = counts.get("rejected_by") or (total if isinstance(total, Mapping) else {})
    if isinstance(total, Mapping):
        total = counts.get("rows_rejected", sum(total.values()))
    return int(total or 0), dict(reasons)


def summary_notes(counts: Mapping[str, Any], notes: Iterable[str] = ()) -> list[str]:
    """Warnings that matter, in plain words: dead-lettered records (always checked) and the
    stage's own `notes`."""
    out = []
    total, reasons = _rejected(counts)
    if total:
        why = ", ".join(f"{reason} {n}" for reason, n in sorted(reasons.items()))
        out.append(f"{total} record(s) could not be used and were set aside in dead_letter/"
                   f"{f' ({why})' if why else ''}; the rest were processed.")
    return out + list(notes)


def print_summary(title: str, counts: Mapping[str, Any], notes: Iterable[str] = ()) -> None:
    """A one-screen table of counts on stderr (rich), then each warning that matters once
    (`summary_notes`)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("count")
    table.add_column("value", justify="right")
    for key in sorted(counts):
        value = counts[key]
        if isinstance(value, Mapping):
            for sub in sorted(value):
                table.add_row(f"{key}.{sub}", str(value[sub]))
        else:
            table.add_row(key, str(value))
    console = Console(stderr=True)
    console.print(table)
    for note in summary_notes(counts, notes):
        console.print(f"note: {note}", highlight=False, markup=False)
