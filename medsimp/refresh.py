"""Scheduled refresh: one lock, `dvc status`, `dvc repro`, restore on failure, a run report.

DVC does the incremental work: only stages whose deps, params or outs changed rerun,
and document-level caches (`medsimp.doccache`) make a rerun stage redo only new documents.
DVC deletes a stage's outs before running it (unless `persist: true`), so when a stage
fails or the run is interrupted, refresh puts the outs of the unfinished stage back from
the DVC cache (`dvc checkout --force <stage>`): they are the versions `dvc.lock` still
records, i.e. the previously published builders. Stages that finished keep their new
outputs (`dvc.lock` already records them), so the next run resumes where this one stopped.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_NOTHING_TO_DO = 3
EXIT_STAGE_FAILED = 4
EXIT_LOCK_HELD = 75  # EX_TEMPFAIL: another run is active, try again later

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


@dataclass
class RefreshConfig:
    """The `refresh` params section, resolved against the repository root."""

    root: Path
    report_dir: Path
    lock: Path
    targets: list[str] = field(default_factory=list)
    builders_dir: Path = Path("builders")
    repro_args: list[str] = field(default_factory=list)
    restore_on_failure: bool = True
    keep_reports: int = 200

    @classmethod
    def from_params(cls, section: dict[str, Any], root: Path, report_dir: str | None = None,
                    targets: list[str] | None = None) -> RefreshConfig:
        def rooted(value: str) -> Path:
            path = Path(value)
            return path if path.is_absolute() else root / path

        return cls(
            root=root,
            report_dir=rooted(report_dir or section.get("report_dir", "reports/refresh")),
            lock=rooted(section.get("lock", ".dvc/tmp/medsimp-refresh.lock")),
            targets=list(targets if targets else section.get("targets") or []),
            builders_dir=rooted(section.get("builders_dir", "builders")),
            repro_args=[str(a) for a in section.get("repro_args") or []],
            restore_on_failure=bool(section.get("restore_on_failure", True)),
            keep_reports=int(section.get("keep_reports", 200)),
        )


@contextlib.contextmanager
def refresh_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive, non-blocking lock; raise LockHeld naming the holder if taken."""
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    info = path.with_name(path.name + ".json")
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        holder = ""
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(info.read_text(encoding="utf-8"))
            holder = f" (pid {data['pid']}, started {data['started_at']})"
        raise LockHeld(f"another refresh is running{holder}; lock: {path}") from None
    try:
        info.write_text(json.dumps({"pid": os.getpid(), "started_at": utc_now()}), encoding="utf-8")
        yield
    finally:
        with contextlib.suppress(OSError):
            info.unlink()
        lock.release()


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        stages = self.outcome.stages
        if m := _RUNNING.match(line):
            self._current = m["stage"]
            stages[self._current] = "failed"  # until its lock entry is written
        elif m := _CACHED.match(line):
            self._current = m["stage"]
            stages[self._current] = "failed"
        elif m := _SKIPPED.match(line):
            stages[m["stage"]] = "skipped"
        elif _LOCK_WRITTEN.match(line) and self._current:
            stages[self._current] = "ran"
            self._current = None
        elif m := _FAILED.search(line):
            stages[m["stage"]] = "failed"
        if DVC_LOCK_BUSY in line:
            self.outcome.lock_busy = True
        self.outcome.tail = (self.outcome.tail + [line])[-20:]

    def mark_restored(self, lines: list[str]) -> None:
        """Stages restored from DVC's run-cache did not recompute."""
        for line in lines:
            if (m := _CACHED.match(line)) and self.outcome.stages.get(m["stage"]) == "ran":
                self.outcome.stages[m["stage"]] = "restored"


def run_repro(root: Path, targets: list[str], extra: list[str], log_path: Path,
              echo: Callable[[str], None]) -> StageOutcome:
    """Run `dvc repro` in its own process group, log and parse its output.

    SIGTERM/SIGINT/SIGHUP to this process are forwarded to the whole group (DVC and
    the stage command it spawned) so no orphan keeps writing outputs after we stop.
    """
    parser = ReproParser()
    lines: list[str] = []
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
                lines.append(line)
        proc.wait()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    # A stage command killed with the group may leave children: clean the group up.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    parser.mark_restored(lines)
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
            order = list(reversed(list(nx.topological_sort(graph))))
            metrics = {s.addressing: [os.path.relpath(o.fs_path, root) for o in s.outs if o.metric]
                       for s in order}
            upstream = {s.addressing: {d.addressing for d in graph.successors(s)} for s in order}
            names = [s.addressing for s in order]
            scope = ({s.addressing for t in targets for s in repo.stage.collect(t, with_deps=True)}
                     if targets else set(names))
            status = repo.status(targets=targets or None, with_deps=True)
    except LockError as exc:
        raise LockHeld("DVC's repository lock is held by another dvc command") from exc
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


@dataclass
class RunResult:
    """What one refresh did: its exit code, per-stage statuses and failure details."""

    exit_code: int
    status: str
    stages: dict[str, str]
    failed: list[str] = field(default_factory=list)
    restored: bool | None = None
    message: str = ""


def _repro(cfg: RefreshConfig, dag: Dag, log_path: Path, echo: Callable[[str], None]) -> RunResult:
    # DVC deletes a stage's metrics before running it and cannot check out `cache: false`
    # files, so keep their bytes to put back for stages that do not finish.
    saved = {rel: (cfg.root / rel).read_bytes() for name in dag.scope for rel in dag.metrics[name]
             if (cfg.root / rel).is_file()}
    outcome = run_repro(cfg.root, cfg.targets, cfg.repro_args, log_path, echo)
    if outcome.lock_busy:
        raise LockHeld("DVC's repository lock is held by another dvc command")
    stages = {n: outcome.stages.get(n, "not_run") for n in dag.names}
    if outcome.returncode == 0 and not outcome.interrupted:
        return RunResult(EXIT_OK, "success", stages)
    failed = [n for n, s in stages.items() if s == "failed"]
    restored = None
    if cfg.restore_on_failure:
        # unknown culprit (e.g. killed before DVC named the stage): restore every stage in scope
        unfinished = failed or sorted(dag.scope)
        restored = restore_outputs(cfg.root, unfinished, log_path)
        for rel in (r for name in unfinished for r in dag.metrics[name] if r in saved):
            (cfg.root / rel).write_bytes(saved[rel])
    status = "interrupted" if outcome.interrupted else "failed"
    tail = "\n".join(outcome.tail[-8:])
    return RunResult(EXIT_STAGE_FAILED, status, stages, failed, restored,
                     f"refresh {status}: stage(s) {', '.join(failed) or '?'}; dvc said:\n{tail}")


def run_refresh(cfg: RefreshConfig, params: dict[str, Any], dry_run: bool = False,
                echo: Callable[[str], None] = print) -> tuple[int, dict[str, Any] | None]:
    """One scheduled run: lock, decide, repro, restore on failure, report. -> (exit code, report)."""
    from medsimp import refresh_report as rr
    from medsimp.config import params_hash

    t0 = time.time()
    started = utc_now()
    try:
        with refresh_lock(cfg.lock):
            dag, status = read_dag(cfg.root, cfg.targets)
            if dry_run:
                would = stages_to_run(dag, set(status))
                echo("nothing to do: every stage is up to date" if not would
                     else "would run: " + ", ".join(would))
                return (EXIT_OK if would else EXIT_NOTHING_TO_DO), None
            stamp = _free_stamp(cfg.report_dir, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t0)))
            log_path = cfg.report_dir / f"{stamp}.log"
            if not status:
                result = RunResult(EXIT_NOTHING_TO_DO, "nothing_to_do",
                                   {n: "skipped" if n in dag.scope else "not_run" for n in dag.names},
                                   message="nothing to do: every stage is up to date")
            else:
                result = _repro(cfg, dag, log_path, echo)
            previous = rr.load_previous(cfg.report_dir)
            fingerprints = rr.fingerprint_builders(cfg.builders_dir)
            stage_entries = rr.stage_entries(cfg.root, result.stages, dag.metrics, previous)
            counted = [e["cache"] for e in stage_entries.values() if "cache" in e]
            summary = {s: sum(1 for v in result.stages.values() if v == s)
                       for s in ("ran", "restored", "skipped", "failed", "not_run")}
            report = {
                "status": result.status,
                "exit_code": result.exit_code,
                "started_at": started,
                "finished_at": utc_now(),
                "duration_s": round(time.time() - t0, 3),
                "targets": cfg.targets,
                "git": rr.git_info(cfg.root),
                "params_hash": params_hash(params),
                "summary": ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in summary.items() if v),
                "stages": stage_entries,
                "failed_stages": result.failed,
                "restored": result.restored,
                "cache": {"hits": sum(c["hits"] for c in counted),
                          "misses": sum(c["misses"] for c in counted)},
                "fingerprints": fingerprints,
                "fingerprints_changed": rr.fingerprint_changes(previous, fingerprints),
                "previous_report": (previous or {}).get("report"),
                "report": f"{stamp}.json",
                "log": f"{stamp}.log" if log_path.exists() else None,
            }
            path = rr.write_report(cfg.report_dir, report, stamp, cfg.keep_reports)
            echo(result.message or f"refresh {result.status}: {report['summary']}")
            echo(f"report: {path}")
            return result.exit_code, report
    except LockHeld as exc:
        echo(f"refresh: {exc}")
        return EXIT_LOCK_HELD, None


def _free_stamp(report_dir: Path, stamp: str) -> str:
    """`stamp`, or `stamp-N` when a report with that name exists (runs within one second)."""
    candidate, n = stamp, 1
    while (report_dir / f"{candidate}.json").exists() or (report_dir / f"{candidate}.log").exists():
        n += 1
        candidate = f"{stamp}-{n}"
    return candidate
