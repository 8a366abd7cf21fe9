"""DVC as refresh drives it: the DAG and its status, `dvc repro` with parsed outcomes, restores.

`dvc repro` and `dvc checkout` run as subprocesses (own process group, signals forwarded);
the DAG and `dvc status` are read in-process with DVC's own loader, which saves a DVC
start-up on every no-op run.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DVC_LOCK_BUSY = "Unable to acquire lock"

_RUNNING = re.compile(r"^Running stage '(?P<stage>[^']+)':")
_SKIPPED = re.compile(r"^Stage '(?P<stage>[^']+)' didn't change, skipping")
_CACHED = re.compile(r"^Stage '(?P<stage>[^']+)' is cached - skipping run, checking out outputs")
_FAILED = re.compile(r"failed to reproduce '(?P<stage>[^']+)'")
_LOCK_WRITTEN = re.compile(r"^(Updating|Generating) lock file ")


class LockHeld(RuntimeError):
    """Another refresh (or a DVC command) holds the lock."""


class DvcError(RuntimeError):
    """A DVC command failed outside a stage (bad dvc.yaml, missing cache, ...)."""


def dvc_command(*args: str) -> list[str]:
    """`dvc ARGS` with the DVC of this interpreter's environment."""
    return [sys.executable, "-m", "dvc", *args]


def _dvc_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DVC_NO_ANALYTICS", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


@dataclass
class StageOutcome:
    """What `dvc repro` did, parsed from its output."""

    stages: dict[str, str] = field(default_factory=dict)  # name -> ran|restored|skipped|failed
    returncode: int = 0
    interrupted: bool = False
    lock_busy: bool = False
    tail: list[str] = field(default_factory=list)


class ReproParser:
    """Turns `dvc repro` output lines into per-stage outcomes."""

    def __init__(self) -> None:
        self.outcome = StageOutcome()
        self._current: str | None = None
        self._from_run_cache = False

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        stages = self.outcome.stages
        if m := _RUNNING.match(line) or _CACHED.match(line):
            self._current = m["stage"]
            self._from_run_cache = m.re is _CACHED
            stages[self._current] = "failed"  # until its lock entry is written
        elif m := _SKIPPED.match(line):
            stages[m["stage"]] = "skipped"
        elif _LOCK_WRITTEN.match(line) and self._current:
            stages[self._current] = "restored" if self._from_run_cache else "ran"
            self._current = None
        elif m := _FAILED.search(line):
            stages[m["stage"]] = "failed"
        if DVC_LOCK_BUSY in line:
            self.outcome.lock_busy = True
        self.outcome.tail = (self.outcome.tail + [line])[-20:]


def run_repro(root: Path, targets: list[str], extra: list[str], log_path: Path,
              echo: Callable[[str], None]) -> StageOutcome:
    """Run `dvc repro` in its own process group, log and parse its output.

    SIGTERM/SIGINT/SIGHUP to this process are forwarded to the whole group (DVC and
    the stage command it spawned) so no orphan keeps writing outputs after we stop.
    """
    parser = ReproParser()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(dvc_command("repro", *extra, *targets), cwd=root, env=_dvc_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1, start_new_session=True)

    def forward(signum, _frame):
        parser.outcome.interrupted = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)

    handled = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {s: signal.signal(s, forward) for s in handled}
    try:
        with log_path.open("w", encoding="utf-8") as log:
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                log.flush()
                echo(line.rstrip("\n"))
                parser.feed(line)
        proc.wait()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if parser.outcome.interrupted:  # stage commands may leave children behind: end the group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    parser.outcome.returncode = proc.returncode
    return parser.outcome


def restore_outputs(root: Path, stages: list[str], log_path: Path) -> bool:
    """Check out the `dvc.lock` versions of these stages' outs from the DVC cache."""
    if not stages:
        return True
    proc = subprocess.run(dvc_command("checkout", "--force", *stages), cwd=root, env=_dvc_env(),
                          capture_output=True, text=True, check=False)
    with log_path.open("a", encoding="utf-8") as log:
        log.write(f"\n# restore: dvc checkout --force {' '.join(stages)} -> {proc.returncode}\n")
        log.write(proc.stdout + proc.stderr)
    return proc.returncode == 0


@dataclass
class Dag:
    """Stages in DAG order (upstream first), their metrics files, direct upstream, targets' scope."""

    names: list[str]
    metrics: dict[str, list[str]]
    upstream: dict[str, set[str]]
    scope: set[str]


def read_dag(root: Path, targets: list[str]) -> tuple[Dag, dict[str, Any]]:
    """The DAG, read by DVC's own loader (params interpolation, foreach stages), and
    `dvc status` of the targets with their upstream: {} when everything is up to date.

    In-process: it saves a DVC start-up (most of a no-op refresh's time).
    """
    import networkx as nx
    from dvc.exceptions import DvcException
    from dvc.lock import LockError
    from dvc.repo import Repo

    try:
        with Repo(str(root)) as repo:
            graph = repo.index.graph  # edges point from a stage to the stages it depends on
            position = {s: i for i, s in enumerate(repo.index.stages)}  # dvc.yaml order
            order = list(nx.lexicographical_topological_sort(graph.reverse(copy=False),
                                                             key=position.__getitem__))
            metrics = {s.addressing: [os.path.relpath(o.fs_path, root) for o in s.outs if o.metric]
                       for s in order}
            upstream = {s.addressing: {d.addressing for d in graph.successors(s)} for s in order}
            names = [s.addressing for s in order]
            scope = ({s.addressing for t in targets for s in repo.stage.collect(t, with_deps=True)}
                     if targets else set(names))
            status = repo.status(targets=targets or None, with_deps=True)
    except LockError as exc:
        raise LockHeld(f"a dvc command holds DVC's lock: {exc}") from exc
    except DvcException as exc:
        raise DvcError(f"cannot read the DAG: {exc}") from exc
    return Dag(names, metrics, upstream, scope), status


def stages_to_run(dag: Dag, changed: set[str]) -> list[str]:
    """Stages `dvc repro` may run: the changed ones and everything downstream, in DAG order.

    DVC skips a downstream stage whose inputs came out byte-identical, so this is an upper bound.
    """
    will: list[str] = []
    for name in dag.names:
        if name in dag.scope and (name in changed or dag.upstream.get(name, set()) & set(will)):
            will.append(name)
    return will
