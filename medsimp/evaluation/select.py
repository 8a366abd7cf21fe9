"""What an `evaluate` command line asks for, checked before any scoring code is imported (a
refused command line costs no start-up): the metrics `--select` names, and which evaluation
set the flags name (reference files, a MedLane file or a builder's split) with no flag that set
would ignore. Each refusal is one line (UsageError, exit 2). `--hyp`, `--ref` and `--src` may
name objects in a store (`s3://`: checked and read when the command runs,
`medsimp.evaluation.store`); `--medlane` and `--dataset` are local paths."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from medsimp.atomic import is_url
from medsimp.errors import UsageError
from medsimp.inputs import check_present

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")  # OpenBLAS's order


def import_numpy_single_threaded() -> None:
    """Import numpy with one OpenBLAS thread unless the user set its thread count (any of
    `BLAS_THREAD_VARIABLES`, which OpenBLAS reads in that order): scoring's
    numpy work is small vector arithmetic, and the thread pool OpenBLAS starts when numpy loads
    cost 0.2-0.3 CPU-s of every `evaluate files` run and up to 0.15 s of its wall on a busy 2-core
    machine (scripts/bench_evaluate.py). OpenBLAS reads the variable only when it loads, so it is
    unset again at once: nothing this process starts inherits it."""
    if "numpy" in sys.modules or any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def parse_select(text: str | None, default: Sequence[str] | None) -> list[str] | None:
    """`--select` as a list (None: `default`, params evaluate.select); an unknown metric is a
    UsageError naming the registry's metrics."""
    from medsimp.metrics import selection

    select = [m.strip() for m in text.split(",") if m.strip()] if text else None
    try:
        selection(select if select is not None else default)
    except ValueError as exc:
        raise UsageError(f"--select: {exc}") from None
    return select


def check_sources(
    medlane: str | None, dataset: str | None, config: str | None, split: str | None,
    refs: Sequence[str], src: str | None, hyps: Sequence[str] = (),
) -> None:  # fmt: skip
    """Refuse a flag the chosen evaluation set would ignore, a set that is not named, a named
    local file that is not there (`--hyp`, `--medlane`, `--ref`, `--src`), and a `--medlane` or
    `--dataset` named by a URL."""
    given = {"--ref": bool(refs), "--src": bool(src), "--dataset": bool(dataset), "--config": bool(config)}
    given["--split"] = bool(split)
    unused: list[str] = []
    if medlane:
        unused += [f for f in ("--ref", "--src", "--dataset", "--config") if given[f]]
    elif dataset:
        unused += [f for f in ("--ref", "--src") if given[f]]
        if not config:
            raise UsageError("--dataset needs --config (e.g. --dataset builders/multicochrane --config en)")
    else:
        unused += [f for f in ("--split", "--config") if given[f]]
        if not refs:
            raise UsageError(
                "give --ref FILE (repeatable), --medlane FILE or --dataset DIR --config C with --hyp"
            )
    if unused:
        with_ = " --medlane" if medlane else " --dataset" if dataset else ""
        raise UsageError(
            f"{', '.join(unused)} cannot be used with --hyp{with_}: drop {'them' if len(unused) > 1 else 'it'}"
        )
    for flag, path in (("--medlane", medlane), ("--dataset", dataset)):
        if is_url(path):
            raise UsageError(
                f"{flag} {path}: a local path only (copy it down first: docs/refresh.md "
                '"Outputs in an object store"); --hyp, --ref and --src may be s3:// files'
            )
    for flag, paths in (("--hyp", hyps), ("--medlane", [medlane]), ("--ref", refs), ("--src", [src])):
        for path in paths:
            if path and not is_url(path):  # an object in a store: checked when it is read
                check_present(path, flag)
