"""Scratch space on disk for a builder whose corpus need not fit in memory.

A builder that joins pairs with their sentences and writes them grouped by config and split
would otherwise hold the whole corpus. `Scratch` keeps it in one SQLite file (the standard
library's) in a private temporary folder instead: sentence texts and links looked up by id,
and output rows read back one group at a time in a fixed order. Memory is SQLite's page cache
and one batch of rows, whatever the corpus size; the folder (private, in TMPDIR: on a tmpfs
/tmp it costs memory, so point TMPDIR at a disk for a large build) is removed when the dataset
that owns it is closed, or by the next build if its process was killed. Values go in as JSON, which gives back equal Python values (floats by
their shortest repr, NaN included), so a row read back builds the same Arrow row.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa

from medsimp.atomic import pid_alive

LOOKUP_IDS = 500  # ids per `IN (...)` query (under every SQLite build's variable limit)

_TABLES = """
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA temp_store = FILE;
CREATE TABLE text (id TEXT PRIMARY KEY, text TEXT) WITHOUT ROWID;
CREATE TABLE link (id TEXT PRIMARY KEY, concepts TEXT, readability TEXT) WITHOUT ROWID;
CREATE TABLE row (
    seq INTEGER PRIMARY KEY, grp TEXT, part INTEGER, doc TEXT, num_len INTEGER, num TEXT,
    id TEXT, flag INTEGER, value TEXT
);
"""


PREFIX = "medsimp-build-"  # + pid + "-" + random: the folder in the system's temporary folder


_SCRATCH_NAME = re.compile(rf"{PREFIX}(\d+)-[a-z0-9_]{{8}}")  # tempfile's random part: 8 characters
_SCRATCH_FILE = re.compile(r"scratch\.sqlite(-journal|-wal|-shm)?")


def sweep_stale_scratch() -> None:
    """Remove the scratch folders of builds that were killed (their process no longer runs):
    a SIGKILL or an OOM kill skips the clean-up. Only folders that are plainly one: named as
    `Scratch` names them, this user's, holding nothing but the scratch database."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        found = _SCRATCH_NAME.fullmatch(folder.name)
        if not found or pid_alive(int(found[1])):
            continue
        try:
            st = folder.lstat()
            entries = list(folder.iterdir()) if stat.S_ISDIR(st.st_mode) else None
        except OSError:
            continue
        if entries is None or st.st_uid != os.getuid():
            continue
        if all(_SCRATCH_FILE.fullmatch(e.name) and e.is_file() and not e.is_symlink() for e in entries):
            shutil.rmtree(folder, ignore_errors=True)


def number_key(tail: str) -> tuple[int, str]:
    """Sort key of an item number written in ASCII digits: numeric order, any length; anything
    else sorts first, as (0, '')."""
    if tail.isascii() and tail.isdigit():
        digits = tail.lstrip("0") or "0"
        return len(digits), digits
    return 0, ""


class Scratch:
    """One builder's scratch database; closed (and its folder removed) by `resources`."""

    def __init__(self, resources: ExitStack):
        sweep_stale_scratch()
        folder = resources.enter_context(tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-"))
        self.db = sqlite3.connect(Path(folder) / "scratch.sqlite")
        resources.callback(self.db.close)
        self.db.executescript(_TABLES)

    # sentences -----------------------------------------------------------------------------
    def add_texts(self, tables: Iterable[pa.Table]) -> None:
        """Load `sentence_id` -> `text` (a later row of an id replaces an earlier one)."""
        for table in tables:
            ids, texts = table.column("sentence_id").to_pylist(), table.column("text").to_pylist()
            self.db.executemany("INSERT OR REPLACE INTO text VALUES (?, ?)", zip(ids, texts))

    def add_links(self, tables: Iterable[pa.Table]) -> None:
        """Load `sentence_id` -> (`concepts`, `readability`) of a `medsimp link` output."""
        for table in tables:
            rows = zip(
                table.column("sentence_id").to_pylist(),
                table.column("concepts").to_pylist(),
                table.column("readability").to_pylist(),
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO link VALUES (?, ?, ?)",
                ((sid, json.dumps(c or []), json.dumps(r)) for sid, c, r in rows),
            )

    def _lookup(self, table: str, columns: str, ids: Iterable[str]) -> Iterator[tuple]:
        wanted = sorted({i for i in ids if i is not None})
        for start in range(0, len(wanted), LOOKUP_IDS):
            chunk = wanted[start : start + LOOKUP_IDS]
            marks = ",".join("?" * len(chunk))
            yield from self.db.execute(f"SELECT id, {columns} FROM {table} WHERE id IN ({marks})", chunk)

    def texts(self, ids: Iterable[str]) -> dict[str, str]:
        """sentence_id -> text of those of `ids` that were loaded."""
        return {sid: text for sid, text in self._lookup("text", "text", ids)}

    def links(self, ids: Iterable[str]) -> dict[str, tuple[list[dict], dict | None]]:
        """sentence_id -> (concepts, readability) of those of `ids` that were linked."""
        return {
            sid: (json.loads(c), json.loads(r))
            for sid, c, r in self._lookup("link", "concepts, readability", ids)
        }

    # rows ----------------------------------------------------------------------------------
    def add_row(
        self,
        group: str,
        row: dict[str, Any],
        *,
        part: int = 0,
        doc: str = "",
        number: str = "",
        item: str = "",
        flag: bool = False,
    ) -> None:
        """Keep `row` for `group`. `rows(group)` gives a group's rows ordered by (part, doc,
        number (numerically, see `number_key`), item, the order they were added)."""
        num_len, num = number_key(number)
        self.db.execute(
            "INSERT INTO row (grp, part, doc, num_len, num, id, flag, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (group, part, doc, num_len, num, item, int(flag), json.dumps(row)),
        )

    def rows(self, group: str, flagged_only: bool = False) -> Iterator[dict[str, Any]]:
        """The rows of `group` in their order (only those added with `flag`, when asked)."""
        # built once, by one sort on disk; SQLite keeps it up to date if rows are added later
        self.db.execute("CREATE INDEX IF NOT EXISTS row_order ON row (grp, part, doc, num_len, num, id, seq)")
        query = "SELECT value FROM row WHERE grp = ?" + (" AND flag = 1" if flagged_only else "")
        cursor = self.db.execute(query + " ORDER BY part, doc, num_len, num, id, seq", (group,))
        for (value,) in cursor:
            yield json.loads(value)
