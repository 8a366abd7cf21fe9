"""Live progress on stderr, shown only when stderr is a terminal (never in logs or pipes)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

_ACTIVE = {"live": False}


def interactive() -> bool:
    """True when stderr is a terminal: the only case where live displays are drawn."""
    return sys.stderr.isatty()


@contextlib.contextmanager
def live(label: str) -> Iterator[None]:
    """A spinner with `label` and the elapsed time while the block runs (TTY only; nested
    calls draw nothing)."""
    if not interactive() or _ACTIVE["live"]:
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    _ACTIVE["live"] = True
    try:
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            bar.add_task(label, total=None)
            yield
    finally:
        _ACTIVE["live"] = False
