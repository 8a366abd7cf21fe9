"""What medsimp wrote outside its own output folders, so it never overwrites anything else.

A single file medsimp writes outside an output folder (a `--metrics` file, a report, a synth
file) gets a record in medsimp's per-user state folder, not beside the file: one JSON file per
absolute path, `<state>/owned/<sha256 of the path>.json` = {"path", "sha256", "command"}.
A file is medsimp's while its bytes still hash to the recorded sha256; a file without a
matching record (the user's, or changed since) is never replaced. The state folder is
`$MEDSIMP_STATE_DIR`, else `$XDG_STATE_HOME/medsimp`, else `~/.local/state/medsimp`.

The record is written atomically (temp file, fsync, rename; the temp file is removed on any
failure) *before* the file it describes is renamed into place, so a full disk leaves the old
file with its old record, never a file its own record disowns. While the swap is under way the
record owns both contents: `claim` writes the new sha256 with the old file's in `"replacing"`,
and `settle`, after the rename, drops `"replacing"`. A process killed between the two renames
(SIGKILL, power loss) thus leaves the old file still medsimp's, and the next run replaces it.
Records written by older
versions beside the file (`.<name>.medsimp-owner`) are still honoured, and removed when the
file is next written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
from pathlib import Path

LEGACY_SUFFIX = ".medsimp-owner"  # `.<name>.medsimp-owner` beside the file (before 2026-11)


def state_dir() -> Path:
    """medsimp's per-user state folder (see the module docstring)."""
    if os.environ.get("MEDSIMP_STATE_DIR"):
        return Path(os.environ["MEDSIMP_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "medsimp"


def digest(path: str | Path) -> str:
    """sha256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without waiting for a writer
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _key(path: Path) -> str:
    return str(path.parent.resolve() / path.name)


RECORD_BYTES = 1 << 16  # a record is about 300 bytes; anything larger is not one medsimp wrote


def check_state_folder() -> None:
    """UsageError (one line) when the state folder or its `owned/` is a link or not a folder, or
    another user owns it or everyone can write it: its records decide which files medsimp may
    replace, so a record planted there would let medsimp overwrite a user's file."""
    from medsimp.errors import UsageError

    root = state_dir()
    for folder in (root, root / "owned"):
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UsageError(f"medsimp's state folder {folder}: {exc.strerror}; {_FIX}") from None
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise UsageError(f"medsimp's state folder {folder} is not a folder (a link or a file); {_FIX}")
        if st.st_uid != os.geteuid() or st.st_mode & 0o002:
            raise UsageError(
                f"medsimp's state folder {folder} can be written by another user (owner uid {st.st_uid}, "
                f"mode {stat.S_IMODE(st.st_mode):o}): its records decide which files medsimp may replace; {_FIX}"
            )


_FIX = "set MEDSIMP_STATE_DIR to a folder of yours that only you can write (docs/architecture.md)"


def record_path(path: str | Path) -> Path:
    """Where the record of `path` lives (after `check_state_folder`)."""
    check_state_folder()
    key = _key(Path(path))
    return (
        state_dir() / "owned" / f"{hashlib.sha256(key.encode('utf-8', 'surrogateescape')).hexdigest()}.json"
    )


def _legacy(path: Path) -> Path:
    return path.with_name(f".{path.name}{LEGACY_SUFFIX}")


def _recorded(record_file: Path) -> dict | None:
    """The record in `record_file`, if it is one: a regular file of this user (never a link, FIFO
    or device, which would hang or never end) of at most RECORD_BYTES holding a JSON object."""
    try:
        fd = os.open(record_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > RECORD_BYTES:
            return None
        try:
            data = json.loads(fh.read(RECORD_BYTES + 1).decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return None
    return data if isinstance(data, dict) else None


def owned(path: str | Path) -> bool:
    """True if medsimp wrote the file `path` and nobody changed it since."""
    path = Path(path)
    try:
        sha = digest(path)
    except OSError:
        return False
    return _owns(path, sha)


def _owns(path: Path, sha: str) -> bool:
    record = _recorded(record_path(path))
    if record is not None and record.get("path") == _key(path) and sha in _hashes(record):
        return True
    legacy = _recorded(_legacy(path))
    return legacy is not None and legacy.get("sha256") == sha


def _hashes(record: dict) -> set[str]:
    """The contents a record owns: its sha256, and during a swap the one it replaces."""
    replacing = record.get("replacing")
    hashes = [record.get("sha256"), *(replacing if isinstance(replacing, list) else ())]
    return {h for h in hashes if isinstance(h, str)}


def claim(path: str | Path, sha256: str, command: str) -> None:
    """Record that medsimp is writing `path` with content `sha256` (before renaming it into
    place). The file now at `path`, if medsimp's, stays owned (`"replacing"`) until `settle`.
    Atomic: on any failure (a full disk) the previous record stays and no temp file is left;
    the OSError propagates so the file is not replaced."""
    path = Path(path)
    record: dict = {"command": command, "path": _key(path), "sha256": sha256, "tool": "medsimp"}
    try:
        old = digest(path)
    except OSError:
        old = None
    if old is not None and old != sha256 and _owns(path, old):
        record["replacing"] = [old]
    _write_record(path, record)


def _write_record(path: Path, record: dict) -> None:
    target = record_path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:  # a file or a dangling link in the way, a read-only or full disk
        from medsimp.errors import UsageError

        raise UsageError(
            f"medsimp's state folder {target.parent}: cannot record what medsimp writes "
            f"({exc.strerror or exc}); {_FIX}"
        ) from None
    body = json.dumps(record, sort_keys=True).encode("utf-8")
    tmp = target.with_name(
        f"{target.stem}.tmp-{os.getpid()}-{threading.get_ident()}"
    )  # one per writer thread
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def claim_temp(path: str | Path, pid: int) -> None:
    """Record that process `pid` of medsimp created the temp file `path` (before it writes
    to it), so that after a kill only this file, not a user's file of the same name, is
    swept (`medsimp.atomic.sweep_stale_file`). `forget` drops the record."""
    path = Path(path)
    _write_record(path, {"path": _key(path), "temp_of_pid": pid, "tool": "medsimp"})


def is_temp(path: str | Path, pid: int) -> bool:
    """True if `path` is a temp file that medsimp's process `pid` recorded (`claim_temp`)."""
    path = Path(path)
    record = _recorded(record_path(path))
    return record is not None and record.get("path") == _key(path) and record.get("temp_of_pid") == pid


def writer(path: str | Path) -> str | None:
    """The command that wrote the file `path`, if medsimp did and nobody changed it since."""
    path = Path(path)
    try:
        sha = digest(path)
    except OSError:
        return None
    record = _recorded(record_path(path))
    if record is not None and record.get("path") == _key(path) and sha in _hashes(record):
        command = record.get("command")
        return command if isinstance(command, str) else None
    return None


def settle(path: str | Path) -> None:
    """After `path` was renamed into place: the record owns only the new content (the one it
    replaced is dropped), and a legacy record beside the file is removed."""
    path = Path(path)
    record = _recorded(record_path(path))
    if record is not None and "replacing" in record:
        record.pop("replacing")
        with contextlib.suppress(OSError):  # a full disk now: the old hash stays owned, harmless
            _write_record(path, record)
    with contextlib.suppress(OSError):
        _legacy(path).unlink()


def forget(path: str | Path) -> None:
    """Drop the record of `path` (after medsimp removed the file itself)."""
    with contextlib.suppress(OSError):
        record_path(path).unlink()
    settle(path)
