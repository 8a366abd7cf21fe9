"""Atomic, deterministic outputs that never destroy what medsimp did not write.

A stage writes into `.<out>.tmp-<pid>` beside `<out>` and swaps it in only when complete,
so a killed run leaves the previous output intact. Every output folder carries a marker
file (`.medsimp-output`, medsimp.markers) naming the command that wrote it and the lineage of
its data; `atomic_dir` refuses (exit 2) to replace a folder without that marker, a folder
holding one of the command's inputs, or an existing file. A marked folder written by the same
command is replaced (the normal rerun); one written by another command needs `force`.
While a folder is being written its writer holds `.<out>.medsimp-lock` beside it, so a second
command started at the same time on the same `--output` is refused; the CLI takes that lock
(`hold`) for every output path it is given as soon as the paths are checked
(`medsimp.places`), before any work, and keeps it until the command ends. Temp folders of dead
processes are swept on the next run, but only those medsimp marked as its own (a user's folder or
file named like a leftover is left alone). Single files outside output folders are guarded by
ownership records (medsimp.ownership).

The CLI registers every input of the running command (`configure(inputs=...)`: each path
argument that is not an output, the params file, and each existing path in the command's
params section) before the command runs, so every `atomic_dir` checks them without its
caller passing them.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
import re
import shutil
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from medsimp import ownership
from medsimp.errors import UsageError
from medsimp.lineage import read_lineage
from medsimp.locks import Busy, Foreign, exclusive
from medsimp.markers import MARKER, marker_of
from medsimp.places import LOCK_SUFFIX

LOCK_SIGNATURE = "medsimp output lock "  # what the lock file starts with; then the holder's pid
# Set once per CLI invocation by `configure`: the command's name (written in markers), its
# --force flag, and the absolute paths of its inputs (never inside an output it replaces).
_RUN: dict[str, Any] = {"command": "", "force": False, "inputs": (), "params_inputs": ()}
_ACTIVE: set[Path] = set()  # temp folders `atomic_dir` is filling in this process


def configure(
    command: str,
    force: bool = False,
    inputs: Iterable[str | Path] = (),
    params_inputs: Iterable[str | Path] = (),
) -> None:
    """The running command's name, its --force flag and its inputs (see the module docstring):
    `inputs` an output folder may neither be nor hold; `params_inputs` (paths in the command's
    params section, where one key can be an output of one subcommand) it may not hold."""
    _RUN.update(
        command=command,
        force=force,
        inputs=tuple(Path(p).absolute() for p in inputs if p),
        params_inputs=tuple(Path(p).absolute() for p in params_inputs if p),
    )


def current_command() -> str:
    """The running command's name as `configure` set it (what its ownership records name)."""
    return str(_RUN["command"])


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


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _in_output_dir(path: Path) -> bool:
    where = path.absolute()
    return any(_inside(where, tmp) for tmp in _ACTIVE)


NOT_OURS = (
    "exists and was not written by medsimp (or was changed since); choose another path or remove it first"
)


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(path: object) -> bool:
    """True for a path named by a URL scheme (`s3://b/x`, `gs://b/x`, `file://x`)."""
    return isinstance(path, str) and bool(_URL.match(path))


def check_local(path: str | Path, flag: str = "") -> None:
    """Refuse an output named by a URL (`s3://`, `gs://`, ...) with one line: outputs are
    published atomically in local folders, and `Path` would turn the URL into a local folder
    named after it (`./gs:/bucket/x`)."""
    if is_url(path):
        raise UsageError(
            f"{flag + ' ' if flag else ''}{path}: this output goes to local folders only (only the "
            "--output of cochrane, msd, plaba, and of link, align corpus, filter, build and report on "
            "public data, and evaluate files' --json, --sentence-level and --report, go to object stores; "
            "MIMIC-derived text never leaves the machine; docs/refresh.md)"
        )


def is_stdout(path: str | None) -> bool:
    """`-` (and /dev/stdout) name standard output, where a file flag may send its content."""
    return path in ("-", "/dev/stdout")


def check_file_target(path: str | Path, same_content_ok: bool = False) -> bool:
    """Raise UsageError unless medsimp may replace the file `path` (see `atomic_file`).
    With `same_content_ok`, True means: only by byte-identical content."""
    check_local(path)
    path = Path(path)
    if path.is_symlink():
        raise UsageError(f"{path} is a symbolic link; give a plain file path")
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give a file path")
    check_not_an_input(path)
    if path.exists() and not path.is_file():  # hashing a FIFO or a device would hang or never end
        raise UsageError(f"{path} is not a regular file (a FIFO, socket or device); give a file path")
    foreign = path.exists() and not _in_output_dir(path) and not ownership.owned(path)
    if foreign and not same_content_ok:
        raise UsageError(f"{path} {NOT_OURS}")
    return foreign


@contextlib.contextmanager
def atomic_file(path: str | Path, same_content_ok: bool = False) -> Iterator[Path]:
    """Yield a temp path beside `path`; on success it replaces `path` atomically.

    Outside an output folder the file gets an ownership record (medsimp.ownership: the
    writing command and the file's sha256, in medsimp's state folder). An existing file
    without a matching record, i.e. one medsimp did not write or someone changed since, is
    refused (exit 2) before anything is written; with `same_content_ok` (metrics) it is
    replaced by byte-identical content only. The temp file keeps the name's suffix.
    """
    check_local(os.fspath(path))  # before Path() folds `gs://b` into `gs:/b`
    path = Path(path)
    foreign = check_file_target(path, same_content_ok)
    path.parent.mkdir(parents=True, exist_ok=True)
    inside = _in_output_dir(path)  # a fresh temp folder of `atomic_dir`: nothing stale, no records
    if not inside:
        sweep_stale_file(path)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    _create_private(tmp)
    if not inside:
        try:
            ownership.claim_temp(tmp, os.getpid())  # so a sweep after a kill knows it is medsimp's
        except BaseException:
            tmp.unlink(missing_ok=True)
            ownership.forget(tmp)
            raise
    try:
        yield tmp
        if foreign and (not tmp.is_file() or ownership.digest(tmp) != ownership.digest(path)):
            raise UsageError(f"{path} {NOT_OURS}")
        if _in_output_dir(path):
            os.replace(tmp, path)
            return
        ownership.claim(path, ownership.digest(tmp), str(_RUN["command"]))  # before the swap
        os.replace(tmp, path)
        ownership.settle(path)
    finally:
        tmp.unlink(missing_ok=True)
        if not inside:
            ownership.forget(tmp)


def _create_private(tmp: Path) -> None:
    """Create the empty temp file `tmp` ourselves (O_EXCL | O_NOFOLLOW), so that what is written
    to it never goes through a link planted at its name into another file (issue 35 item 12).
    A leftover that medsimp recorded as this pid's temp file (a reused pid) is replaced; anything
    else of that name, the user's file included, is refused untouched."""
    for _ in range(2):
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
            return
        except FileExistsError:
            if not (_own_regular_file(tmp) and ownership.is_temp(tmp, os.getpid())):
                raise UsageError(
                    f"{tmp} exists and is not a temp file of this user (a link or another user's file): "
                    "medsimp will not write through it; remove it or write the output elsewhere"
                ) from None
            tmp.unlink(missing_ok=True)
    raise UsageError(f"{tmp} keeps reappearing; write the output elsewhere")


def check_not_an_input(path: str | Path) -> None:
    """Raise UsageError if the output file `path` is one of the running command's inputs, named
    or from params (issue 35 item 11: `--metrics` named like `--input` replaced the input)."""
    where = Path(path).resolve()
    for item in (*_RUN["inputs"], *_RUN["params_inputs"]):
        if item and Path(item).resolve() == where:
            raise UsageError(f"{path} is an input of this command; write the output to another file")


def check_holds_no_input(final: str | Path, inputs: Iterable[str | Path] = ()) -> None:
    """Raise UsageError if the output `final` is or holds one of `inputs` or of the inputs the
    CLI registered (`configure`; a params path only when strictly inside)."""
    where = Path(final).resolve()
    held = [(item, True) for item in (*inputs, *_RUN["inputs"]) if item]
    held += [(item, False) for item in _RUN["params_inputs"]]
    for item, equal_too in held:
        path = Path(item).resolve()
        if where in path.parents or (equal_too and path == where):
            raise UsageError(f"--output {final} holds the input {item}; write the output to another folder")


def check_output_target(
    final: str | Path, command: str, inputs: Iterable[str | Path] = (), force: bool = False
) -> None:
    """Raise UsageError unless `command` may replace `final` (see the module docstring).
    `inputs` are checked with the inputs the CLI registered (`configure`)."""
    final = Path(final)
    check_holds_no_input(final, inputs)
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


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs (another user's counts as running, and so does a number no
    process can have: a sweep then leaves its file alone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def sweep_stale(final: Path) -> None:
    """Remove the temp/old folders beside `final` that a killed medsimp process left: named
    `.<final>.tmp-<pid>` or `.<final>.old-<pid>` for a pid that no longer runs, a real folder
    of this user (never a link), and marked by medsimp (`.medsimp-output` with `"tool":
    "medsimp"`: `atomic_dir` marks its temp folder when it creates it, and the old output
    carries its own marker). Anything else of that name is the user's and is left alone."""
    if not final.parent.is_dir():
        return
    for sibling in final.parent.glob(glob.escape(f".{final.name}.") + "*-*"):
        kind, _, pid = sibling.name.rpartition("-")
        if not (kind.endswith((".tmp", ".old")) and pid.isascii() and pid.isdigit()) or pid_alive(int(pid)):
            continue
        if _own_folder(sibling) and (marker_of(sibling) or {}).get("tool") == "medsimp":
            remove_marked(sibling)


def remove_marked(folder: Path) -> None:
    """Delete a folder medsimp marked (a temp or old output), its marker last: a kill half-way
    leaves a folder that is still marked, so the next run's sweep still knows it is medsimp's."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.name == MARKER:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        (folder / MARKER).unlink(missing_ok=True)
        folder.rmdir()


def _own_folder(path: Path) -> bool:
    """A folder (not a symlink) of this user."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def sweep_stale_file(path: Path) -> None:
    """Remove the temp files `atomic_file` left beside `path` (`.<stem>.tmp-<pid><suffix>`)
    when killed: for processes that no longer run, this user's regular files that medsimp
    recorded as its temp files when it created them (`ownership.claim_temp`). A file of that
    name without such a record is the user's and is left alone."""
    head, tail = f".{path.stem}.tmp-", path.suffix
    for sibling in path.parent.glob(f"{glob.escape(head)}*{glob.escape(tail)}"):
        pid = sibling.name[len(head) : len(sibling.name) - len(tail)]
        if not (pid.isascii() and pid.isdigit()) or pid_alive(int(pid)) or not _own_regular_file(sibling):
            continue
        if ownership.is_temp(sibling, int(pid)):
            sibling.unlink(missing_ok=True)
            ownership.forget(sibling)


def _own_regular_file(path: Path) -> bool:
    """A regular file (not a symlink) of this user."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()


@contextlib.contextmanager
def _writing(final: Path, flag: str = "--output") -> Iterator[None]:
    """Hold `.<final>.medsimp-lock` while `final` is checked, written and swapped in. The lock
    file carries `LOCK_SIGNATURE`; a same-named file without it is the user's and is refused
    untouched (an empty one is locked and left empty). Already held by this command (`hold`,
    from its checks on): nothing more to take."""
    if Path(os.path.abspath(final)) in _HELD:
        yield
        return
    flag = f"{flag} " if flag else ""
    lock = final.with_name(f".{final.name}{LOCK_SUFFIX}")
    held = contextlib.ExitStack()
    try:
        held.enter_context(
            exclusive(lock, f"{LOCK_SIGNATURE}pid {os.getpid()}", remove=True, signature=LOCK_SIGNATURE)
        )
    except Busy as exc:
        holder = exc.holder.removeprefix(LOCK_SIGNATURE)
        holder = f" ({holder})" if holder else ""
        raise UsageError(
            f"{flag}{final} is being written by another medsimp command{holder}; "
            "wait for it or choose another path"
        ) from None
    except Foreign:
        raise UsageError(
            f"{flag}{final}: {lock} is a file medsimp did not write (not its lock); move it away first"
        ) from None
    except OSError as exc:
        raise UsageError(f"{flag}{final}: cannot write in {final.parent} ({exc.strerror})") from None
    with held:
        yield


_HELD: set[Path] = set()  # outputs whose lock this process holds through `hold`


@contextlib.contextmanager
def hold(final: str | Path, flag: str = "--output") -> Iterator[None]:
    """Hold `final`'s lock (`.<final>.medsimp-lock`, as `atomic_dir`) from the command's checks
    until it ends, so that a second command on the same output is refused before its work,
    not overwritten by it after (issue 54: two `align train` runs on one output both exited 0,
    the last writer won). `atomic_dir` and `atomic_file` on `final` in this process then take
    nothing more. The missing folders above `final` are created for the lock, and removed
    again if the command leaves them empty."""
    final = Path(os.path.abspath(final))
    if final in _HELD:
        yield
        return
    created: list[Path] = []
    folder = final.parent
    while not folder.exists():
        created.append(folder)
        folder = folder.parent
    try:
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{flag} {final}: cannot create {final.parent} ({exc.strerror})") from None
        with _writing(final, flag):
            _HELD.add(final)
            try:
                yield
            finally:
                _HELD.discard(final)
    finally:
        for folder in created:  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()


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
    check_local(final)
    final = Path(final)
    command = command or str(_RUN["command"]) or final.name
    check_output_target(final, command, inputs, force or bool(_RUN["force"]))  # before any mkdir
    final.parent.mkdir(parents=True, exist_ok=True)
    with _writing(final):  # then again under the lock: another command may have just written it
        check_output_target(final, command, inputs, force or bool(_RUN["force"]))
        sweep_stale(final)
        tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
        if tmp.exists() or tmp.is_symlink():  # our pid's name: ours only if marked as medsimp's
            if not (_own_folder(tmp) and (marker_of(tmp) or {}).get("tool") == "medsimp"):
                raise UsageError(f"{tmp} exists and medsimp did not write it; move it away first")
            remove_marked(tmp)
        tmp.mkdir()
        _ACTIVE.add(tmp.absolute())
        try:
            # marked from the start, so a sweep after a kill knows the folder is medsimp's
            # (`sweep_stale`); the final marker below replaces it
            (tmp / MARKER).write_text(
                canonical_json({"command": command, "tool": "medsimp", "writing": True}), encoding="utf-8"
            )
            yield tmp
            marker: dict[str, Any] = {"command": command, "tool": "medsimp"}
            if lineage is not None:
                marker["lineage"] = sorted(set(lineage))
            elif any(tmp.rglob("*.parquet")):  # the union of the tables written (None: unknown)
                tags = read_lineage(tmp)
                marker["lineage"] = list(tags) if tags is not None else None
            (tmp / MARKER).write_text(canonical_json(marker), encoding="utf-8")
        except BaseException:
            remove_marked(tmp)
            raise
        finally:
            _ACTIVE.discard(tmp.absolute())
        publish_dir(tmp, final)


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux `renameat2` with RENAME_EXCHANGE, through
    glibc): no moment where either name is missing. False where the system or the file
    system does not offer it (the caller then renames twice)."""
    import ctypes

    if not sys.platform.startswith("linux"):
        return False
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:  # glibc before 2.28, or another C library
        return False
    at_fdcwd, rename_exchange = -100, 2  # <fcntl.h>, <linux/fs.h>
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM, errno.EACCES):
        return False  # unsupported here (EPERM/EACCES: a seccomp filter); the caller renames twice
    raise OSError(code, os.strerror(code), str(b))


def publish_dir(tmp: Path, final: Path) -> None:
    """Put the finished folder `tmp` in place of `final`, old or new at every moment: one
    exchange of the two names (then the old output, now at `tmp`, is deleted). Where no
    exchange exists, two renames, with the old output at `.<final>.old-<pid>` in between."""
    if not final.exists():
        os.replace(tmp, final)
        return
    if exchange(tmp, final):
        remove_marked(tmp)  # the old output
        return
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    os.replace(final, old)
    os.replace(tmp, final)
    remove_marked(old)
