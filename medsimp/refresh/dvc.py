"""DVC as refresh drives it: the DAG and its status, `dvc repro` classified from DVC's records, restores.

`dvc repro` and `dvc checkout` run as subprocesses (own process group, signals forwarded);
the DAG and `dvc status` are read in-process with DVC's own loader, which saves a DVC
start-up on every no-op run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medsimp.errors import UsageError

DVC_LOCK_BUSY = "Unable to acquire lock"


class LockHeld(RuntimeError):
    """Another refresh (or a DVC command) holds the lock."""


class DvcError(RuntimeError):
    """A DVC command failed outside a stage (bad dvc.yaml, missing cache, ...)."""


def find_root(start: Path) -> Path:
    """The DVC repository `start` is in, found as `dvc root` finds it (DVC's own
    `Repo.find_root`: the nearest folder at or above `start` holding a `.dvc/` folder, up to the
    mount point). Nothing is written: a folder with no `.dvc/` above it is a one-line UsageError,
    so refresh never creates `.dvc/tmp` where it would make (or move) a DVC root."""
    from dvc.exceptions import NotDvcRepoError
    from dvc.repo import Repo

    try:
        return Path(Repo.find_root(str(start)))
    except NotDvcRepoError:
        raise UsageError(
            f"{start} is not inside a DVC repository (no .dvc/ folder in it or above it); run "
            "refresh inside one (`dvc root` names it), or create one with `dvc init`"
        ) from None


def dvc_command(*args: str) -> list[str]:
    """`dvc ARGS` with the DVC of this interpreter's environment."""
    return [sys.executable, "-m", "dvc", *args]


# The group leader between refresh and `dvc repro` (`python -c`, no imports of ours). DVC runs
# in its own session so that a Ctrl-C reaches it only through refresh; if refresh itself dies
# (SIGKILL, OOM kill) nothing would stop DVC and the stage it runs. The kernel tells this
# guard (PR_SET_PDEATHSIG -> SIGUSR2); it then ends its whole process group: SIGTERM (the
# stage unwinds and removes its temp outputs), then SIGKILL after a grace period. A SIGTERM
# refresh forwards to the group reaches DVC directly; the guard waits for DVC's exit status.
_GUARD = r"""
import ctypes, os, signal, subprocess, sys, time
parent, grace = int(sys.argv[1]), float(sys.argv[2])
def others():
    me, group, n = os.getpid(), os.getpgrp(), 0
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != me:
            try:
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            n += int(fields[2]) == group and fields[0] != b"Z"
    return n
def reap(signum=None, frame=None):
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and others():  # DVC, once dead, is a zombie: not counted
        time.sleep(0.1)
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGUSR2, reap)
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGUSR2)  # PR_SET_PDEATHSIG
except (AttributeError, OSError):
    pass
if os.getppid() != parent:
    reap()
child = subprocess.Popen(sys.argv[3:], preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
code = child.wait()
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""
GUARD_GRACE_S = 10.0


def guarded(cmd: list[str], grace: float = GUARD_GRACE_S) -> list[str]:
    """`cmd` under the guard that ends its process group when this process dies; start it
    with `start_new_session=True` (the guard must lead its own group)."""
    return [sys.executable, "-c", _GUARD, str(os.getpid()), str(grace), *cmd]


def _dvc_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DVC_NO_ANALYTICS", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


@dataclass
class StageOutcome:
    """What `dvc repro` did: per stage ran|restored|skipped|failed|not_run (`classify`)."""

    stages: dict[str, str] = field(default_factory=dict)
    returncode: int = 0
    interrupted: bool = False
    lock_busy: bool = False
    tail: list[str] = field(default_factory=list)


@dataclass
class Snapshot:
    """DVC's records of what ran: `dvc.lock` entries and the run-cache entries (stage records)."""

    lock: dict[str, Any]
    run_cache: dict[str, Any]  # run-cache file -> its stage record (cmd, deps, outs)


def _record(entry: dict[str, Any]) -> tuple[Any, ...]:
    """A stage record's identity: command and the hashes of its deps and outs."""

    def files(key: str) -> frozenset[tuple[str, str | None]]:
        return frozenset((f["path"], f.get("md5")) for f in entry.get(key) or [])

    return entry.get("cmd"), files("deps"), files("outs")


def snapshot(root: Path) -> Snapshot:
    """`dvc.lock` and the run cache (`<cache>/runs`, DVC's stage-record store) as they are now."""
    import yaml
    from dvc.repo import Repo

    lock_path = root / "dvc.lock"
    lock = (
        (yaml.safe_load(lock_path.read_text(encoding="utf-8")) or {}).get("stages", {})
        if lock_path.is_file()
        else {}
    )
    with Repo(str(root)) as repo:
        runs = Path(repo.stage_cache.cache_dir)
    entries = {}
    for path in runs.rglob("*") if runs.is_dir() else []:
        if path.is_file():
            entries[str(path)] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return Snapshot(lock, entries)


def classify(
    dag: Dag, will: list[str], before: Snapshot, after: Snapshot, still_changed: set[str]
) -> dict[str, str]:
    """Per-stage outcome from DVC's records, not its log. A stage `dvc status` still reports
    changed did not finish: the first such (no unfinished upstream) failed, the rest did not run.
    A finished stage whose lock entry changed ran, or was restored when a run-cache record with
    its exact cmd, deps and outs existed before this repro; an unchanged one was skipped."""
    known = {_record(e) for e in before.run_cache.values()}
    out: dict[str, str] = {}
    for name in dag.names:
        if name not in dag.scope:
            out[name] = "not_run"
        elif name not in will:
            out[name] = "skipped"
        elif name in still_changed:
            blocked = dag.upstream.get(name, set()) & still_changed
            out[name] = "not_run" if blocked else "failed"
        elif after.lock.get(name) == before.lock.get(name):
            out[name] = "skipped"
        else:
            out[name] = "restored" if _record(after.lock.get(name) or {}) in known else "ran"
    return out


def run_repro(
    root: Path,
    targets: list[str],
    extra: list[str],
    log_path: Path,
    echo: Callable[[str], None],
    dag: Dag,
    will: list[str],
) -> StageOutcome:
    """Run `dvc repro` in its own process group (output logged), then classify its stages from
    `dvc.lock`, the run cache and `dvc status` (`classify`).

    SIGTERM/SIGINT/SIGHUP to this process are forwarded to the whole group (DVC and
    the stage command it spawned) so no orphan keeps writing outputs after we stop; if this
    process is killed outright, the group's guard (`guarded`) ends the group.
    """
    outcome = StageOutcome()
    before = snapshot(root)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        guarded(dvc_command("repro", *extra, *targets)),
        cwd=root,
        env=_dvc_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        start_new_session=True,
    )

    def forward(signum, _frame):
        outcome.interrupted = True
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
                outcome.lock_busy |= DVC_LOCK_BUSY in line  # DVC's own lock error: no stage ran
                outcome.tail = (outcome.tail + [line.rstrip("\n")])[-20:]
        proc.wait()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if outcome.interrupted:  # stage commands may leave children behind: end the group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    outcome.returncode = proc.returncode
    if not outcome.lock_busy:
        _, status = read_dag(root, targets)
        outcome.stages = classify(dag, will, before, snapshot(root), set(status))
    return outcome


def restore_outputs(root: Path, stages: list[str], log_path: Path) -> bool:
    """Check out the `dvc.lock` versions of these stages' outs from the DVC cache."""
    if not stages:
        return True
    proc = subprocess.run(
        dvc_command("checkout", "--force", *stages),
        cwd=root,
        env=_dvc_env(),
        capture_output=True,
        text=True,
        check=False,
    )
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
            order = list(
                nx.lexicographical_topological_sort(graph.reverse(copy=False), key=position.__getitem__)
            )
            metrics = {
                s.addressing: [os.path.relpath(o.fs_path, root) for o in s.outs if o.metric] for s in order
            }
            upstream = {s.addressing: {d.addressing for d in graph.successors(s)} for s in order}
            names = [s.addressing for s in order]
            scope = (
                {s.addressing for t in targets for s in repo.stage.collect(t, with_deps=True)}
                if targets
                else set(names)
            )
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
