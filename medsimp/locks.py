"""An exclusive, non-blocking lock on a file (POSIX `flock`): the kernel drops it when the
holder dies, so a lock is never stale. The file is opened without truncation, so the lock
never damages what is already in it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


class Foreign(Exception):
    """The lock file holds something medsimp did not write there (it is left untouched)."""


class Busy(Exception):
    """Another process holds the lock; `holder` is what it wrote in the lock file ("" if unknown)."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(f"{path} is locked{f' by {holder}' if holder else ''}")
        self.path, self.holder = path, holder


def _read(fd: int) -> str:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return os.pread(fd, 200, 0).decode("utf-8").strip()
    return ""


@contextlib.contextmanager
def exclusive(path: str | Path, note: str = "", remove: bool = False, signature: str = "") -> Iterator[int]:
    """Hold an exclusive lock on `path` (created 0600 if absent); raise Busy if it is held.

    `note` (e.g. "pid 12, started ...") replaces the file's content while the lock is held, so
    a refused process can name the holder. With `remove` the file is deleted on release (a
    claim file); a process that locked a file just deleted by the previous holder notices the
    path now names another file and locks that one instead. With `signature`, a file that is
    not empty and does not start with it is somebody else's: Foreign, and it is not written.
    `remove` deletes only a file created here or one holding content (with `signature`: a lock
    a killed holder left); an empty file found there is emptied again, not deleted.
    """
    import fcntl

    path = Path(path)
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
    for _ in range(20):
        try:
            fd, created = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600), True
        except FileExistsError:
            try:
                fd, created = os.open(path, flags), False
            except FileNotFoundError:
                continue  # the previous holder just removed it: create it again
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise Busy(path, holder) from None
        mine = os.fstat(fd)
        try:
            now = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_ino, now.st_dev) == (mine.st_ino, mine.st_dev):
            break
        os.close(fd)  # the previous holder removed the file we opened: lock the new one
    else:
        raise Busy(path, "")
    content = _read(fd)
    if signature and content and not content.startswith(signature):
        os.close(fd)
        raise Foreign(f"{path} is not a lock file medsimp wrote")
    try:
        if note:
            os.ftruncate(fd, 0)
            os.pwrite(fd, note.encode("utf-8"), 0)
        yield fd
    finally:
        # ours: created here, or a signed lock a killed holder left
        if remove and (created or (signature and content)):
            with contextlib.suppress(OSError):
                path.unlink()
        elif remove and note:  # an empty file that was there before: left empty, as found
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
        os.close(fd)
