"""Where medsimp may write: the checks made on an output path (or a folder it writes into, such
as `cache.dir`) before any work, so that an impossible place is one line naming the flag or key
and what is wrong, not an internal error after the work (issue 54). `medsimp.atomic` writes;
this module only looks.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from medsimp.errors import UsageError

LOCK_SUFFIX = ".medsimp-lock"  # `.<out>.medsimp-lock` beside an output while it is written (medsimp.atomic)

# The longest name medsimp puts beside an output: `.<name>.medsimp-lock`, `.<name>.tmp-<pid>`
# (a pid up to 10 digits), so an output's own name may be at most NAME_MAX minus this.
_SIBLING_EXTRA = 1 + max(len(LOCK_SUFFIX), len(".tmp-") + 10, len(".old-") + 10)
_SYSTEM_TREES = ("/proc", "/sys", "/dev")  # /dev/shm, a tmpfs for files, is allowed


def check_output_path(path: str | Path, flag: str) -> None:
    """Raise UsageError, in one line naming `flag`, unless an output can be written at `path`:
    not under /proc, /sys or /dev (`-` and /dev/stdout are decided by the caller), each name
    and the whole path within the file system's limits (with room for the names medsimp
    writes beside it), and the nearest existing folder above it a folder this user can write
    in (the folders below it are created). Checked before any work (issue 54)."""
    path = os.fspath(path)
    where = os.path.abspath(path)
    ancestor = os.path.dirname(where)
    while not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    real = os.path.join(os.path.realpath(ancestor), os.path.relpath(where, ancestor))
    for tree in _SYSTEM_TREES:
        if (real == tree or real.startswith(tree + os.sep)) and not real.startswith("/dev/shm/"):
            raise UsageError(f"{flag} {path} is under {tree}, a system tree, not a place to write in")
    try:
        name_max = os.pathconf(ancestor, "PC_NAME_MAX")
        path_max = os.pathconf(ancestor, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    names = [p for p in where.split(os.sep) if p]
    for i, name in enumerate(names):
        limit = name_max - (_SIBLING_EXTRA if i == len(names) - 1 else 0)
        if len(os.fsencode(name)) > limit:
            raise UsageError(
                f"{flag} {path}: the name {name[:40]}... is {len(os.fsencode(name))} bytes, longer than "
                f"this file system allows ({limit} for {'an output' if i == len(names) - 1 else 'a folder'})"
            )
    if len(os.fsencode(where)) + _SIBLING_EXTRA >= path_max:
        raise UsageError(
            f"{flag} {path} is {len(os.fsencode(where))} bytes long, longer than this system allows "
            f"({path_max - _SIBLING_EXTRA - 1})"
        )
    if not os.path.isdir(ancestor):
        raise UsageError(f"{flag} {path}: {ancestor} is a file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: cannot write in {ancestor} (permission denied or read-only)")


def check_writable_folder(folder: str | Path, what: str) -> None:
    """UsageError, in one line naming `what` (`cache.dir`, `refresh.report_dir`) and what is
    wrong, unless `folder` is a folder (not a link) this user can write in, or can be created
    where `check_output_path` allows an output: checked before the work that writes there."""
    folder = os.fspath(folder)
    try:
        st = os.lstat(folder)
    except (FileNotFoundError, NotADirectoryError):
        check_output_path(folder, what)
        return
    except OSError as exc:
        raise UsageError(f"{what} {folder} cannot be used ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{what} {folder} is not a folder (a link or a file): medsimp will not use it")
    check_output_path(os.path.join(folder, "x"), what)  # a system tree, a name too long
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {folder}: cannot write in it (permission denied or read-only)")
