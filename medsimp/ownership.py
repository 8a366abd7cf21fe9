"""What medsimp wrote outside its own output folders, so it never overwrites anything else.

A single file medsimp writes outside an output folder (a `--metrics` file, a run record, a
report, a synth file) gets a record, never beside the file: one JSON file per path =
{"path", "sha256", "command"}. A file is medsimp's while its bytes still hash to the recorded
sha256; a file without a matching record (the user's, or changed since) is never replaced.
Where the record lives decides what it survives (issue 55):
- inside a DVC project (the nearest folder above the file holding `.dvc/`, as `dvc root` finds
  it), in the project itself: `<root>/.dvc/tmp/medsimp/owned/<sha256 of the path>.json`, the
  path taken from the project root. The record names the file by its place in the project and
  its bytes, not by an absolute path or an inode, so it travels with the project: `cp -a`, a
  restored backup, a new container or another user's copy still know what medsimp wrote
  (`.dvc/tmp` is git-ignored: a clone starts with none, and has no untracked files either);
- outside a project, or when the project's store is not this user's (a project shared in
  place by several users), in medsimp's per-user state folder, by absolute path:
  `<state>/owned/<sha256 of the path>.json`. The state folder is `$MEDSIMP_STATE_DIR`, else
  `$XDG_STATE_HOME/medsimp`, else `~/.local/state/medsimp`. Records an older version put there
  for a project's files are still honoured, and `adopt` (run by `refresh`) moves them into
  the project.
Inside a DVC project a file is also medsimp's when its md5 is the one `dvc.lock` records for it
as an output of a stage whose command runs medsimp (`medsimp ...`, `python -m medsimp ...`):
`dvc.lock` travels with the project in git and is content-keyed, so a file `git clone` + `dvc
pull` (or `git checkout`) brought back is known without any record. A file another tool's stage
writes is not medsimp's, whatever dvc.lock says.

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
import posixpath
import shlex
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from medsimp.errors import UsageError

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


def _name_hash(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()


RECORD_BYTES = 1 << 16  # a record is about 300 bytes; anything larger is not one medsimp wrote
PROJECT_STORE = Path(".dvc") / "tmp" / "medsimp"  # a DVC project's records, under its root


def _unfit(folder: Path) -> str | None:
    """Why `folder` may not hold records (None: it may, or it does not exist yet): a link or
    not a folder, or another user owns it or everyone can write it."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be used ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return "is not a folder (a link or a file)"
    if st.st_uid != os.geteuid() or st.st_mode & 0o002:
        return (
            f"can be written by another user (owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}): "
            "its records decide which files medsimp may replace"
        )
    return None


def check_state_folder() -> None:
    """UsageError (one line) when the state folder or its `owned/` is a link or not a folder, or
    another user owns it or everyone can write it: its records decide which files medsimp may
    replace, so a record planted there would let medsimp overwrite a user's file."""
    root = state_dir()
    for folder in (root, root / "owned"):
        why = _unfit(folder)
        if why is not None:
            raise UsageError(f"medsimp's state folder {folder} {why}; {_FIX}")


_FIX = "set MEDSIMP_STATE_DIR to a folder of yours that only you can write (docs/architecture.md)"


def project_root(path: str | Path) -> Path | None:
    """The DVC project the file `path` is in: the nearest folder at or above its folder (links
    resolved) holding a `.dvc/` folder; None outside any."""
    folder = Path(path).parent.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".dvc").is_dir():
            return candidate
    return None


def _project_place(path: Path) -> tuple[Path, str] | None:
    """(record file, the name it records) in the project's own store, when `path` is in a DVC
    project whose store is this user's (see the module docstring)."""
    root = project_root(path)
    if root is None:
        return None
    store = root / PROJECT_STORE
    if any(_unfit(folder) is not None for folder in (store, store / "owned")):
        return None  # a project shared in place: this user's records go to the state folder
    name = Path(_key(path)).relative_to(root).as_posix()
    return store / "owned" / f"{_name_hash(name)}.json", name


def _places(path: Path) -> list[tuple[Path, str]]:
    """Where the records of `path` may be, the one written first: (record file, the name the
    record must carry). A bad state folder is one line, unless the file is in a project whose
    own store holds its records (then the state folder is only read, when it can be trusted)."""
    project = _project_place(path)
    try:
        check_state_folder()
    except UsageError:
        if project is None:
            raise
        return [project]
    key = _key(path)
    state = (state_dir() / "owned" / f"{_name_hash(key)}.json", key)
    return [project, state] if project is not None else [state]


def record_path(path: str | Path) -> Path:
    """Where the record of `path` is written (the project's store or the state folder)."""
    return _places(Path(path))[0][0]


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


def _records(path: Path) -> Iterator[dict]:
    """The records naming `path`, the one written first."""
    for record_file, name in _places(path):
        record = _recorded(record_file)
        if record is not None and record.get("path") == name:
            yield record


def owned(path: str | Path) -> bool:
    """True if medsimp wrote the file `path` and nobody changed it since."""
    path = Path(path)
    try:
        sha = digest(path)
    except OSError:
        return False
    return _owns(path, sha)


def _owns(path: Path, sha: str) -> bool:
    if any(sha in _hashes(record) for record in _records(path)):
        return True
    legacy = _recorded(_legacy(path))
    if legacy is not None and legacy.get("sha256") == sha:
        return True
    return in_dvc_lock(path)


LOCK_BYTES = 64 << 20  # a dvc.lock of 25 stages is about 250 KB


def _runs_medsimp(cmd: object) -> bool:
    """Whether a dvc.lock `cmd` (a string or a list of them) runs medsimp: `medsimp ...` (the
    console script, by any path) or `<python> -m medsimp[.cli] ...`."""
    for line in cmd if isinstance(cmd, list) else [cmd]:
        try:
            words = shlex.split(str(line))
        except ValueError:
            continue
        if words and os.path.basename(words[0]) == "medsimp":
            return True
        if len(words) > 2 and words[1] == "-m" and words[2].split(".")[0] == "medsimp":
            return True
    return False


_LOCK_OUTS: dict[str, dict[str, set[str]]] = {}  # sha256 of a dvc.lock -> its medsimp outs


def _medsimp_outs(lock: Path, file_uid: int) -> dict[str, set[str]]:
    """{output path as `lock` names it: md5s} of its stages whose command runs medsimp. Read
    only when `lock` is a regular file (never a link), not writable by everyone, of this user
    or of the file's owner, and at most LOCK_BYTES; DVC 3 md5s of the file's bytes only."""
    import yaml

    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_mode & 0o002
            or st.st_uid not in (os.geteuid(), file_uid)
            or st.st_size > LOCK_BYTES
        ):
            return {}
        try:
            text = fh.read(LOCK_BYTES + 1)
        except OSError:
            return {}
    key = hashlib.sha256(text).hexdigest()  # by content: a copied or rewritten lock is read again
    if key in _LOCK_OUTS:
        return _LOCK_OUTS[key]
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError):
        data = None
    outs: dict[str, set[str]] = {}
    stages = data.get("stages") if isinstance(data, dict) else None
    for entry in stages.values() if isinstance(stages, dict) else ():
        if not isinstance(entry, dict) or not _runs_medsimp(entry.get("cmd")):
            continue
        for out in entry.get("outs") or ():  # files, and folders by their `.dir` manifest's md5
            if isinstance(out, dict) and out.get("hash") == "md5" and isinstance(out.get("md5"), str):
                outs.setdefault(posixpath.normpath(str(out.get("path"))), set()).add(out["md5"])
    _LOCK_OUTS[key] = outs
    return outs


def in_dvc_lock(path: str | Path) -> bool:
    """True if `path` is in a DVC project and its bytes are those `dvc.lock` (of its project
    root or a folder between) records for it as an output of a stage that runs medsimp, or as a
    file of such a folder output (listed in the folder's `.dir` manifest in the project's DVC
    cache, itself checked by its md5): what medsimp wrote there, or DVC put back from what
    medsimp wrote (module docstring)."""
    path = Path(path)
    root = project_root(path)
    if root is None:
        return False
    where = Path(_key(path))
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    md5: list[str] = []  # computed once, when some entry names the file

    def matches(wanted: set[str]) -> bool:
        if not md5:
            md5.append(_md5(path))
        return md5[0] in wanted

    for folder in where.parents:
        if folder != root and root not in folder.parents:
            break
        outs = _medsimp_outs(folder / "dvc.lock", st.st_uid)
        rel = where.relative_to(folder)
        if outs.get(rel.as_posix()) and matches(outs[rel.as_posix()]):
            return True
        for above in list(rel.parents)[:-1]:  # a folder output holding the file
            for tree in outs.get(above.as_posix(), ()):
                listed = _listed(root, tree, rel.relative_to(above).as_posix())
                if listed and matches(listed):
                    return True
    return False


def _listed(root: Path, tree: str, relpath: str) -> set[str]:
    """The md5 DVC's `.dir` manifest `tree` (in the project's cache, `.dvc/cache/files/md5`)
    lists for `relpath`; empty when the manifest is absent, not what its name says, or too big."""
    if not tree.endswith(".dir") or len(tree) != 36 or not all(c in "0123456789abcdef" for c in tree[:32]):
        return set()
    manifest = root / ".dvc" / "cache" / "files" / "md5" / tree[:2] / tree[2:]
    try:
        fd = os.open(manifest, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return set()
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > LOCK_BYTES:
            return set()
        try:
            body = fh.read(LOCK_BYTES + 1)
        except OSError:
            return set()
    if hashlib.md5(body, usedforsecurity=False).hexdigest() != tree[:32]:
        return set()
    try:
        entries = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return set()
    if not isinstance(entries, list):
        return set()
    return {
        e["md5"]
        for e in entries
        if isinstance(e, dict) and e.get("relpath") == relpath and isinstance(e.get("md5"), str)
    }


def _md5(path: Path) -> str:
    h = hashlib.md5(usedforsecurity=False)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
    record: dict = {"command": command, "sha256": sha256, "tool": "medsimp"}
    try:
        old = digest(path)
    except OSError:
        old = None
    if old is not None and old != sha256 and _owns(path, old):
        record["replacing"] = [old]
    _write_record(path, record)


def _write_record(path: Path, record: dict) -> None:
    """Write `record` (its `path` set to the name its place records) where `path`'s record is
    written first (`_places`)."""
    target, name = _places(path)[0]
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:  # a file or a dangling link in the way, a read-only or full disk
        state = target.parent == state_dir() / "owned"
        raise UsageError(
            f"medsimp's {'state' if state else 'record'} folder {target.parent}: cannot record what "
            f"medsimp writes ({exc.strerror or exc}){f'; {_FIX}' if state else ''}"
        ) from None
    body = json.dumps({**record, "path": name}, sort_keys=True).encode("utf-8")
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


def adopt(root: str | Path) -> int:
    """Move into the store of the DVC project at `root` the records an older medsimp kept in the
    state folder (by absolute path) for files of this project that still match them, so that they
    travel with it from now on (`refresh` calls this first); the number moved. A record of a
    file changed since, of another project or of a temp file stays where it is."""
    try:
        check_state_folder()
    except UsageError:
        return 0
    root = Path(root).resolve()
    moved = 0
    for record_file in sorted((state_dir() / "owned").glob("*.json")):
        record = _recorded(record_file)
        name = record.get("path") if record else None
        if record is None or not isinstance(name, str) or record_file.name != f"{_name_hash(name)}.json":
            continue
        path = Path(name)
        if root not in path.parents or "temp_of_pid" in record or project_root(path) != root:
            continue
        place = _project_place(path)
        try:
            sha = digest(path)
        except OSError:
            continue
        if place is None or _recorded(place[0]) is not None or sha not in _hashes(record):
            continue
        _write_record(path, {**{k: v for k, v in record.items() if k != "replacing"}, "sha256": sha})
        with contextlib.suppress(OSError):
            record_file.unlink()
        moved += 1
    return moved


def claim_temp(path: str | Path, pid: int) -> None:
    """Record that process `pid` of medsimp created the temp file `path` (before it writes
    to it), so that after a kill only this file, not a user's file of the same name, is
    swept (`medsimp.atomic.sweep_stale_file`). `forget` drops the record."""
    _write_record(Path(path), {"temp_of_pid": pid, "tool": "medsimp"})


def is_temp(path: str | Path, pid: int) -> bool:
    """True if `path` is a temp file that medsimp's process `pid` recorded (`claim_temp`)."""
    return any(record.get("temp_of_pid") == pid for record in _records(Path(path)))


def writer(path: str | Path) -> str | None:
    """The command that wrote the file `path`, if medsimp did and nobody changed it since
    (as its record says: a file known only from dvc.lock names no command)."""
    path = Path(path)
    try:
        sha = digest(path)
    except OSError:
        return None
    for record in _records(path):
        if sha in _hashes(record):
            command = record.get("command")
            return command if isinstance(command, str) else None
    return None


def settle(path: str | Path) -> None:
    """After `path` was renamed into place: the record owns only the new content (the one it
    replaced is dropped), and a record an older version left (beside the file, or in the state
    folder for a file the project's store now records) is removed."""
    path = Path(path)
    (first, name), *older = _places(path)
    record = _recorded(first)
    if record is not None and record.get("path") == name and "replacing" in record:
        record.pop("replacing")
        with contextlib.suppress(OSError):  # a full disk now: the old hash stays owned, harmless
            _write_record(path, record)
    if record is not None:
        for old, _ in older:
            with contextlib.suppress(OSError):
                old.unlink()
    with contextlib.suppress(OSError):
        _legacy(path).unlink()


def forget(path: str | Path) -> None:
    """Drop the records of `path` (after medsimp removed the file itself)."""
    for record_file, _ in _places(Path(path)):
        with contextlib.suppress(OSError):
            record_file.unlink()
    with contextlib.suppress(OSError):
        _legacy(Path(path)).unlink()
