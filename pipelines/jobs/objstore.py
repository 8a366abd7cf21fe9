"""Job outputs in an object store (`s3://`, `gs://`, ...: whatever Beam's FileSystems reach).

An object store has no folder to rename, so the local promise (old or new, complete, never
half; docs/architecture.md "Outputs and ownership") is kept by a pointer instead:

    URL/.medsimp-output        the marker: command, tool, lineage, `run`, and `files`, the
                               manifest of the published run (relative path -> bytes)
    URL/runs/<run>/...         one run's files, the same bytes a local `--output` folder holds

A run writes under a fresh `runs/<run>/` prefix that no reader is pointed at. Only when the
job has finished does `publish` list what it wrote and write the marker, one object PUT, which
a reader sees whole or not at all; then it deletes the runs the marker no longer names. A
killed run leaves the marker as it was (the previous run, or none): readers see the old output
and the next run sweeps the orphan prefix. `published_files` is how a reader checks a prefix:
the marker's run, with every manifest file present at its size.

On s3:// the files (and the marker) are written by `store.create_file` (an empty file is an
empty object; a failed write leaves no object and no unfinished upload), the store is checked
before the work by `store.check_store` (a missing bucket, an endpoint that does not answer:
one line, in bounded time), and the unfinished uploads under a run prefix that is cleaned up
(a killed writer's) are aborted with it.

Guards, as locally: a prefix that holds objects but no medsimp marker is never written into,
and one written by another command needs --force. Object stores offer medsimp no lock: run one
writer per prefix (the last to publish wins).

Reading a published output: `published_input` turns a URL at or under a marked prefix
(`s3://b/x`, `s3://b/x/pairs`) into the same path under the published run
(`s3://b/x/runs/<run>/pairs`), so a later stage's `--input` names the prefix a stage
published to, never a run; `download` copies the published output holding a URL into a local
folder (what `build` reads, and how a user fetches a builder folder for `load_dataset`).

Only public data goes to a store (`check_public`): an output's lineage is the union of its
inputs' (the published marker's and the Parquet tables'), and anything MIMIC-derived, of unknown
lineage, or of a source outside `medsimp.lineage.PUBLIC` stays in local folders (PhysioNet's
data use agreement: MIMIC-derived text never leaves the machine).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import secrets
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from apache_beam.io.filesystems import FileSystems

from medsimp import lineage as tags_of
from medsimp.atomic import atomic_dir, canonical_json, current_command, is_url
from medsimp.errors import UsageError
from medsimp.markers import MARKER, marker_of
from medsimp.params_schema import Beam
from pipelines.jobs.store import abort_uploads, check_store, create_file, use_store, write_file

__all__ = [
    "check_public",
    "download",
    "in_output",
    "input_lineage",
    "is_url",
    "publish",
    "published_files",
    "published_input",
    "read_marker",
    "upload",
]

RUNS = "runs"  # URL/runs/<run>/: one run's files
# How long the first listing of an output prefix may take. Beam's S3 and GCS clients retry an
# unreachable endpoint with exponential backoff for many minutes; a store that does not answer
# this first call is reported in one line instead (a bound on failure, not a knob of the data).
REACH_SECONDS = 30


def _short(exc: BaseException) -> str:
    """The first line of an error from a filesystem client, without its traceback."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _listing(url: str, flag: str = "--output") -> dict[str, int]:
    """Relative path -> bytes of every object under `url/` (one line, exit 2, when the store
    cannot be reached or listed: no credentials, no such bucket, a scheme Beam lacks)."""
    root = url.rstrip("/") + "/"
    try:
        FileSystems.get_filesystem(root)
        found = FileSystems.match([root + "**"])[0].metadata_list
    except Exception as exc:  # the clients raise their own types; each is one line here
        raise UsageError(f"{flag} {url}: cannot list it ({_short(exc)})") from None
    return {m.path[len(root) :]: m.size_in_bytes for m in found if m.path.startswith(root)}


def read_marker(url: str) -> dict[str, Any] | None:
    """The marker at `url/.medsimp-output` (None when absent or not a medsimp marker)."""
    path = FileSystems.join(url.rstrip("/"), MARKER)
    try:
        if not FileSystems.exists(path):
            return None
        with FileSystems.open(path) as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except Exception:  # unreadable or not JSON: not a marker medsimp wrote
        return None
    return data if isinstance(data, dict) and data.get("tool") == "medsimp" else None


def published_files(url: str, flag: str = "") -> tuple[str, dict[str, int]]:
    """(the published run's prefix, its manifest) after checking that every manifest file is
    there at its size; UsageError when `url` holds no complete medsimp output."""
    where = f"{flag} {url}".strip()
    marker = read_marker(url)
    if marker is None or not isinstance(marker.get("run"), str) or not isinstance(marker.get("files"), dict):
        raise UsageError(f"{where}: no published medsimp output there (no {MARKER} naming a run)")
    prefix = FileSystems.join(url.rstrip("/"), RUNS, marker["run"])
    there = _listing(prefix, flag or "--input")
    missing = sorted(rel for rel, size in marker["files"].items() if there.get(rel) != size)
    if missing:
        raise UsageError(
            f"{where}: published run {marker['run']} is incomplete ({len(missing)} files missing)"
        )
    return prefix, dict(marker["files"])


def _output_holding(url: str) -> tuple[str, str, dict[str, Any]] | None:
    """(the prefix, the rest of `url` below it, its marker) of the nearest prefix at or above
    `url` that holds a medsimp marker; None when there is none (or `url` names a run's files
    itself: `.../runs/<run>/...`, read as given)."""
    scheme, _, rest = url.rstrip("/").partition("://")
    parts = rest.split("/")
    for depth in range(len(parts), 0, -1):
        below = parts[depth:]
        if below[:1] == [RUNS]:  # a run's files named by hand: read as given
            return None
        root = f"{scheme}://{'/'.join(parts[:depth])}"
        marker = read_marker(root)
        if marker is not None:
            return root, "/".join(below), marker
    return None


def _published(url: str, flag: str) -> tuple[str, dict[str, Any] | None]:
    """(`url` as read, the marker of the published output holding it, else None): see
    `published_input`."""
    found = _output_holding(url) if is_url(url) else None
    if found is None:
        return url, None
    root, below, marker = found
    prefix, _ = published_files(root, flag)
    return (FileSystems.join(prefix, below) if below else prefix), marker


def published_input(url: str, flag: str = "--input") -> str:
    """`url` as a job reads it: a URL at or under a prefix that holds a medsimp marker is read
    from the published run (`s3://b/x/pairs` -> `s3://b/x/runs/<run>/pairs`), and UsageError
    when that prefix has no complete published run; any other path is read as given."""
    return _published(url, flag)[0]


def input_lineage(path: str, flag: str = "--input") -> tuple[str, ...] | None:
    """The lineage of an input, local or in a store (None: unknown): locally
    `medsimp.lineage.read_lineage` (its folder's marker and its Parquet tables); in a store the
    lineage the published output's marker records joined with its Parquet tables'
    (`parquet_lineage`; a table without one makes it unknown), or the tables' alone when no
    marker holds it."""
    from pipelines.sources.files import list_files, parquet_lineage

    if not is_url(path):
        return tags_of.read_lineage(path)
    read, marker = _published(path, flag)
    tables = parquet_lineage(read)
    if marker is None:
        return tables
    if tables is None and (read.endswith(".parquet") or list_files(FileSystems.join(read, "**.parquet"))):
        return None  # a table that records no lineage: unknown, whatever the marker says
    value = marker.get("lineage")
    recorded = (
        tags_of.normalise(value)
        if isinstance(value, list) and all(isinstance(t, str) for t in value)
        else None
    )
    return tags_of.union(recorded, tables) if tables is not None else recorded


def in_output(path: str) -> bool:
    """True when `path` is in an output medsimp wrote: a local folder with a marker at or above
    it (finished or being written), or a store prefix at or above it with a medsimp marker (a
    run's files named by hand included)."""
    if not is_url(path):
        here = Path(path).absolute()
        return any(marker_of(folder) is not None for folder in (here, *here.parents))
    scheme, _, rest = path.rstrip("/").partition("://")
    parts = rest.split("/")
    return any(read_marker(f"{scheme}://{'/'.join(parts[:depth])}") for depth in range(len(parts), 0, -1))


def check_public(
    output: str,
    inputs: Mapping[str, str] | Iterable[tuple[str, str]],
    flag: str = "--output",
    unknown_ok: bool = False,
) -> list[str]:
    """The lineage tags an object-store `output` (named by `flag`) records: the union of its
    `inputs`' (flag -> path, or (flag, path) pairs when a flag repeats). UsageError, one line and
    before any write, when any input is MIMIC-derived, of unknown lineage or of a source outside
    medsimp.lineage.PUBLIC: such data stays in local folders. `unknown_ok`: an input of no
    recorded lineage outside every medsimp output (`in_output`: a user's own file) passes, and
    the output records `unknown` (`evaluate files`' scores of a user's plain text files,
    docs/refresh.md); one in a medsimp output, or whose recorded lineage is not public, is
    refused all the same."""
    found: list[tuple[str, ...] | None] = []
    for name, path in inputs.items() if isinstance(inputs, Mapping) else inputs:
        tags = input_lineage(path, name)
        if tags is None and unknown_ok and not in_output(path):
            found.append(None)
            continue
        if tags_of.is_restricted(tags):
            raise UsageError(
                f"{flag} {output}: this output goes to local folders only: its input {name} {path} "
                f"is not public data (lineage: {tags_of.describe(tags)}); MIMIC-derived text never "
                "leaves the machine (docs/refresh.md)"
            )
        found.append(tags)
    return tags_of.marker_tags(tags_of.union(*found))


def stage_input(beam: Beam | None, beam_args: Iterable[str], inputs: dict[str, str]) -> dict[str, str]:
    """A stage's inputs (flag -> path) as its job reads them: every object-store input is
    checked reachable (`store.use_store`, which also hands Beam the job's store options, params
    `beam` and `beam_args`), and one at or under a prefix a medsimp stage published to is read
    from its published run (`published_input`). Local paths are returned as they are."""
    use_store(beam, beam_args, dict(inputs))
    return {flag: published_input(path, flag) for flag, path in inputs.items()}


def stage_output(
    output: str, inputs: dict[str, str], force: bool = False
) -> contextlib.AbstractContextManager[Any]:
    """The folder a stage writes into: a local atomic folder (`atomic_dir`), or for a URL a fresh
    run prefix that is published when the block ends (`publish`), after checking, before any
    write, that every input (flag -> path, as named) is public data (`check_public`:
    MIMIC-derived or unknown lineage is one line, exit 2); `force`: the command's --force."""
    if not is_url(output):
        return atomic_dir(output)
    return publish(output, current_command(), check_public(output, inputs), force=force)


def download(url: str, folder: str, flag: str = "--input") -> str:
    """Copy the published output holding `url` (`published_input`: the whole run, so files
    beside it, e.g. a stage's stats.json, come too), or the objects at and under an unmarked
    `url`, into the local `folder`; the local path that stands for `url`."""

    found = _output_holding(url)
    if found is not None:
        root, below, _ = found
        prefix, files = published_files(root, flag)
    else:
        prefix, below = url.rstrip("/"), ""
        files = _listing(prefix, flag)
        if not files:  # one object, not a prefix
            prefix, below = FileSystems.split(prefix)
            files = {below: 0}
    for rel in sorted(files):
        target = os.path.join(folder, *rel.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            with FileSystems.open(FileSystems.join(prefix, rel)) as src, open(target, "wb") as dst:
                while block := src.read(1 << 20):
                    dst.write(block)
        except Exception as exc:  # the clients raise their own types; each is one line here
            raise UsageError(f"{flag} {url}: cannot read {rel} ({_short(exc)})") from None
    return os.path.join(folder, *below.split("/")) if below else folder


def upload(folder: str, prefix: str) -> None:
    """Copy a local folder's files (not its `.`-names: markers, locks) under `prefix`, each
    whole or not at all (`store.write_file`'s writer): how an output built locally is put in a
    run prefix that `publish` then publishes."""
    root = Path(folder)
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        with path.open("rb") as src, create_file(FileSystems.join(prefix, *rel.parts)) as dst:
            while block := src.read(1 << 20):
                dst.write(block)


def _write_marker(url: str, marker: dict[str, Any]) -> None:
    write_file(FileSystems.join(url, MARKER), canonical_json(marker).encode("utf-8"))  # whole or absent


def _reach(url: str, flag: str = "--output") -> dict[str, int]:
    """`_listing(url)` within REACH_SECONDS, else one line: a scheme Beam cannot reach (e.g.
    gs:// without apache-beam[gcp]), no credentials, or an endpoint that does not answer."""
    try:
        FileSystems.get_filesystem(url)
    except Exception as exc:
        raise UsageError(f"{flag} {url}: {_short(exc)}") from None
    check_store(url, flag)  # s3://: the bucket exists and answers, in bounded time
    answer: queue.Queue = queue.Queue(maxsize=1)

    def list_it() -> None:
        try:
            answer.put((True, _listing(url, flag)))
        except BaseException as exc:  # handed to the caller
            answer.put((False, exc))

    # a daemon thread: one stuck in the client's retries must not keep the process alive
    threading.Thread(target=list_it, name="medsimp-reach-store", daemon=True).start()
    try:
        ok, value = answer.get(timeout=REACH_SECONDS)
    except queue.Empty:
        raise UsageError(
            f"{flag} {url}: the store did not answer within {REACH_SECONDS} s "
            "(check its endpoint and credentials, e.g. AWS_ENDPOINT_URL and AWS_ACCESS_KEY_ID)"
        ) from None
    if not ok:
        raise value
    return value


def _claim(url: str, command: str, force: bool, flag: str = "--output") -> None:
    """Refuse a prefix medsimp may not write (see the module docstring); claim an empty one with
    a marker that names no run yet, so a run killed before its first publish leaves a prefix
    that is medsimp's (no published output) rather than one that looks foreign."""
    objects = _reach(url, flag)
    marker = read_marker(url)
    if marker is None:
        if objects:
            raise UsageError(
                f"{flag} {url} holds {len(objects)} objects medsimp did not write (no {MARKER}); "
                "choose a new prefix"
            )
        _write_marker(url, {"command": command, "tool": "medsimp", "run": None, "files": {}})
    elif marker.get("command") != command and not force:
        raise UsageError(
            f"{flag} {url} was written by `medsimp {marker.get('command')}`; "
            "choose another prefix or pass --force to replace it"
        )


def _delete_runs(url: str, keep: str | None = None, only: str | None = None) -> None:
    """Delete the run prefixes under `url/runs/`: every one but `keep`, or just `only`. Best
    effort: an orphan costs storage, not correctness, and the next publish sweeps it; a store
    error here never replaces the command's own outcome."""
    runs = FileSystems.join(url.rstrip("/"), RUNS)
    with contextlib.suppress(Exception):
        names = {rel: rel.split("/", 1)[0] for rel in _listing(runs)}
        paths = [
            FileSystems.join(runs, rel)
            for rel, run in names.items()
            if (run == only if only is not None else run != keep)
        ]
        if paths:
            FileSystems.delete(paths)
    with contextlib.suppress(Exception):  # the uploads a failed or killed writer left unfinished
        if only is not None:
            abort_uploads(FileSystems.join(runs, only) + "/")
        else:
            abort_uploads(runs + "/", keep=None if keep is None else FileSystems.join(runs, keep) + "/")


@contextlib.contextmanager
def publish(
    url: str, command: str, lineage: Iterable[str], force: bool = False, flag: str = "--output"
) -> Iterator[str]:
    """Yield a fresh run prefix under `url`; when the body returns, point `url`'s marker at it
    (`flag`: the option naming `url`, in messages).

    On an exception (or SIGTERM, which the CLI turns into one) the prefix is deleted and the
    marker is left as it was; a SIGKILL leaves an orphan prefix no marker names."""
    url = url.rstrip("/")
    _claim(url, command, force, flag)
    run = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(4)
    prefix = FileSystems.join(url, RUNS, run)
    try:
        yield prefix
        files = _listing(prefix)
        if not files:
            raise UsageError(f"{flag} {url}: the job wrote nothing under {prefix}")
        marker = {
            "command": command,
            "tool": "medsimp",
            "lineage": sorted(set(lineage)),
            "run": run,
            "files": files,
        }
        _write_marker(url, marker)
    except BaseException:
        _delete_runs(url, only=run)  # this run's files only: never what a marker may name
        raise
    _delete_runs(url, keep=run)
