"""`medsimp align files`' batch file (the aligners themselves: `alignment.aligners`)."""

from __future__ import annotations

from pathlib import Path

from medsimp.atomic import check_file_target
from medsimp.errors import UsageError
from medsimp.inputs import read_lines


def batch_jobs(batch: str) -> list[tuple[str, str, str]]:
    """(src, tgt, out) per line of a batch file, all checked before anything is written: an
    output may not be an input of the batch, repeat another output, or replace a file
    medsimp did not write (UsageError, exit 2)."""
    jobs = []
    for lineno, line in enumerate(read_lines(batch, "--batch"), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise UsageError(f"{batch}:{lineno}: expected src<TAB>tgt<TAB>out")
        jobs.append((parts[0], parts[1], parts[2]))
    inputs = {Path(p).resolve() for src, tgt, _ in jobs for p in (src, tgt)} | {Path(batch).resolve()}
    outs: set[Path] = set()
    for n, (_, _, out) in enumerate(jobs, 1):
        where = Path(out).resolve()
        if where in inputs or where in outs:
            raise UsageError(f"{batch}: output {n} ({out}) is an input or another output of the batch")
        outs.add(where)
        check_file_target(out)
    return jobs
