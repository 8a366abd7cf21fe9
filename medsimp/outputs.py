"""Atomic, deterministic outputs: directories that appear whole, canonical JSON, stats.

A stage writes into `<out>.tmp-<pid>` and renames it over `<out>` only when
complete, so a killed run leaves the previous output intact.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and fixed separators: the same object gives the same bytes."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def write_json(path: str | Path, obj: Any) -> None:
    """Write canonical JSON atomically (temp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(canonical_json(obj), encoding="utf-8")
    os.replace(tmp, path)


def write_jsonl(path: str | Path, rows: list[Mapping[str, Any]]) -> None:
    """Write rows as JSON Lines (sorted keys) atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


@contextlib.contextmanager
def atomic_dir(final: str | Path) -> Iterator[Path]:
    """Yield a fresh temp directory beside `final`; on success swap it into place.

    On error the temp directory is removed and `final` is left as it was.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


RUN_KEYS = ("cache_hits", "cache_misses")  # how a run went (metrics), not what it produced


def output_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """Stats for a stage's output dir: without RUN_KEYS, so outputs stay byte-identical
    whether or not the document cache was warm (the `--metrics` copy keeps them)."""
    return {k: v for k, v in stats.items() if k not in RUN_KEYS}


class CountsMismatch(AssertionError):
    """Counts in a stats record do not reconcile."""


def check_reconciles(counts: Mapping[str, int], total: str, parts: list[str]) -> None:
    """Raise CountsMismatch unless counts[total] == sum(counts[p] for p in parts)."""
    got = sum(int(counts.get(p, 0)) for p in parts)
    if int(counts.get(total, 0)) != got:
        detail = " + ".join(f"{p}={counts.get(p, 0)}" for p in parts)
        raise CountsMismatch(f"{total}={counts.get(total, 0)} but {detail} = {got}")


def print_summary(title: str, counts: Mapping[str, Any]) -> None:
    """A one-screen table of counts on stderr (rich)."""
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
    Console(stderr=True).print(table)
