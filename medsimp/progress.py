"""Live progress on stderr: a spinner or a bar when stderr is a terminal; for a Beam job that
reports its documents (`watch`), also a line a minute in a log."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator

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


# --------------------------------------------------------------------------- Beam jobs
# A Beam runner hands its counters to the launcher only when a bundle (on the local runner: the
# whole job) ends, so a job's live progress travels beside them: each worker's `ProgressSink`
# writes its count of finished documents to one small file under the job's progress folder
# (through Beam's FileSystems, so it works wherever the output is), at most every
# `WRITE_EVERY` seconds; the launcher's `watch` sums the files. The folder is removed when the
# job ends, before the output is published: outputs are the same with or without it. A
# retried bundle may count its documents twice, so the display is an estimate; the counters
# in stats.json stay exact.
WRITE_EVERY = 5.0  # seconds between a worker's progress writes
POLL_EVERY = 2.0  # seconds between the launcher's reads
LOG_EVERY = 60.0  # seconds between progress lines in a log (stderr not a terminal)


class ProgressSink:
    """A worker's count of finished documents, written to `<folder>/<random>.count`. Built in
    the launcher (pickled with the DoFn); the file name is drawn in the worker, on first use."""

    def __init__(self, folder: str | None):
        self.folder = folder
        self._path: str | None = None
        self._done = 0
        self._written_at = 0.0

    def tick(self, n: int = 1) -> None:
        if not self.folder:
            return
        self._done += n
        now = time.monotonic()
        if now - self._written_at >= WRITE_EVERY:
            self.flush()
            self._written_at = now

    def flush(self) -> None:
        if not self.folder or not self._done:
            return
        from apache_beam.io.filesystems import FileSystems

        if self._path is None:
            self._path = FileSystems.join(self.folder, f"{uuid.uuid4().hex}.count")
        try:
            with FileSystems.create(self._path) as fh:
                fh.write(str(self._done).encode("ascii"))
        except Exception:  # progress is best effort: never fail a document over it
            self.folder = None


def _read_done(folder: str) -> int:
    from apache_beam.io.filesystems import FileSystems

    total = 0
    try:
        found = FileSystems.match([FileSystems.join(folder, "*.count")])[0].metadata_list
    except Exception:
        return 0
    for meta in found:
        try:
            with FileSystems.open(meta.path) as fh:
                text = fh.read(32).decode("ascii")
            total += int(text) if text.isdigit() else 0
        except Exception:  # a file being replaced: read next time
            continue
    return total


def describe(done: int, total: int, elapsed: float, unit: str = "documents") -> str:
    """`40 of 100 documents, 0.33/s, about 3 min left` (no rate before the first is done)."""
    line = f"{min(done, total)} of {total} {unit}"
    if done and elapsed > 0:
        rate = done / elapsed
        left = max(total - done, 0) / rate
        line += f", {rate:.2g}/s, about {_duration(left)} left" if done < total else f", {rate:.2g}/s"
    return line


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@contextlib.contextmanager
def watch(folder: str, total: int, label: str, unit: str = "documents") -> Iterator[None]:
    """While the block runs (a Beam job whose DoFns tick a `ProgressSink(folder)`): `shown` with
    the `unit`s the workers count in `folder`. The folder is removed on exit (its files first:
    in an object store a "folder" is only their common prefix, which a published output would
    otherwise list)."""
    from apache_beam.io.filesystems import FileSystems

    try:
        with shown(label, total, lambda: _read_done(folder), unit):
            yield
    finally:
        with contextlib.suppress(Exception):  # nothing was written: no file to remove
            counts = FileSystems.match([FileSystems.join(folder, "*")])[0].metadata_list
            FileSystems.delete([m.path for m in counts])
        with contextlib.suppress(Exception):  # nothing was written: no folder to remove
            FileSystems.delete([folder])


@contextlib.contextmanager
def counting(label: str, total: int, unit: str = "documents") -> Iterator[Callable[..., None]]:
    """`shown` for a loop in this process: the block gets `tick(n=1)`, called per unit done."""
    done = [0]

    def tick(n: int = 1) -> None:
        done[0] += n

    with shown(label, total, lambda: done[0], unit):
        yield tick


@contextlib.contextmanager
def shown(label: str, total: int, read_done: Callable[[], int], unit: str = "documents") -> Iterator[None]:
    """While the block runs: on a terminal a bar with `read_done()` of `total` `unit`, the rate
    and the time left; in a log a line at most every `LOG_EVERY` seconds once the block has run
    a minute (shorter steps print nothing). Inside another display, only the outer one draws."""
    stop = threading.Event()
    start = time.monotonic()
    tty = interactive() and not _ACTIVE["live"]

    def poll(update) -> None:
        logged = start
        while not stop.wait(POLL_EVERY):
            done = read_done()
            update(done)
            now = time.monotonic()
            if not tty and now - start >= LOG_EVERY and now - logged >= LOG_EVERY:
                logged = now
                print(f"{label}: {describe(done, total, now - start, unit)}", file=sys.stderr, flush=True)

    bar_context: contextlib.AbstractContextManager = contextlib.nullcontext()
    update = lambda done: None  # noqa: E731
    if tty:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(unit),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        task = bar.add_task(label, total=total, rate="")

        def update(done: int) -> None:
            elapsed = time.monotonic() - start
            rate = f"{done / elapsed:.2g}/s" if done and elapsed > 0 else ""
            bar.update(task, completed=min(done, total), rate=rate)

        bar_context = bar
    thread = threading.Thread(target=poll, args=(update,), daemon=True)
    _ACTIVE["live"], was = True, _ACTIVE["live"]
    try:
        with bar_context:
            thread.start()
            yield
    finally:
        stop.set()
        if thread.is_alive():  # not started when the bar itself failed to start
            thread.join(timeout=10)
        _ACTIVE["live"] = was
