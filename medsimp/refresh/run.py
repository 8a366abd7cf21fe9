"""Scheduled refresh: one lock, `dvc status`, `dvc repro`, restore on failure, a run report.

DVC does the incremental work: only stages whose deps, params or outs changed rerun,
and document-level caches (`medsimp.doccache`) make a rerun stage redo only new documents.
DVC deletes a stage's outs before running it (unless `persist: true`), so when a stage
fails or the run is interrupted, refresh puts the outs of the unfinished stage back from
the DVC cache (`dvc checkout --force <stage>`): they are the versions `dvc.lock` still
records, i.e. the previously published builders. Stages that finished keep their new
outputs (`dvc.lock` already records them), so the next run resumes where this one stopped.
The stages' `cache: false` metrics files, which DVC deletes but cannot check out, are put
back from a copy taken before `dvc repro`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medsimp import ownership
from medsimp.config import load_params, params_hash
from medsimp.errors import EXIT_FAILED as EXIT_STAGE_FAILED
from medsimp.errors import EXIT_LOCKED as EXIT_LOCK_HELD  # EX_TEMPFAIL: try again later
from medsimp.errors import EXIT_OK, UsageError
from medsimp.errors import EXIT_REFUSED as EXIT_NOTHING_TO_DO
from medsimp.errors import EXIT_USAGE as EXIT_ERROR  # setup outside a stage: dvc.yaml, DVC, --set
from medsimp.locks import Busy, Foreign, exclusive
from medsimp.params_schema import Params, Refresh
from medsimp.places import check_writable_folder
from medsimp.refresh import report as rr
from medsimp.refresh.dvc import (
    Dag,
    DvcError,
    LockHeld,
    find_root,
    read_dag,
    restore_outputs,
    run_repro,
    stages_to_run,
)
from medsimp.refresh.plan import plan_lines
from medsimp.refresh.report import write_report


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
    def from_params(
        cls,
        section: Refresh,
        root: Path,
        report_dir: str | None = None,
        targets: list[str] | None = None,
    ) -> RefreshConfig:

        def rooted(value: str) -> Path:
            path = Path(value)
            return path if path.is_absolute() else root / path

        return cls(
            root=root,
            report_dir=rooted(report_dir or section.report_dir),
            lock=rooted(section.lock),
            targets=list(targets if targets else section.targets),
            builders_dir=rooted(section.builders_dir),
            repro_args=list(section.repro_args),
            restore_on_failure=section.restore_on_failure,
            keep_reports=section.keep_reports,
        )


LOCK_SIGNATURE = "medsimp refresh lock "  # the lock file's content: this, then the holder as JSON


@contextlib.contextmanager
def refresh_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive, non-blocking lock on `path`; raise LockHeld naming the holder if taken.

    The holder (pid, start time) is written in the lock file itself, nothing beside it; a file
    at `path` that is neither empty nor a refresh lock is the user's and is refused untouched."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_dir():
        raise UsageError(f"refresh.lock {path} is a folder or a link; name a file medsimp may create")
    note = LOCK_SIGNATURE + json.dumps({"pid": os.getpid(), "started_at": utc_now()})
    held = contextlib.ExitStack()
    try:
        held.enter_context(exclusive(path, note, signature=LOCK_SIGNATURE))
    except Busy as exc:
        holder = ""
        with contextlib.suppress(ValueError, KeyError, TypeError):
            data = json.loads(exc.holder.removeprefix(LOCK_SIGNATURE))
            holder = f" (pid {data['pid']}, started {data['started_at']})"
        raise LockHeld(f"another refresh is running{holder}; lock: {path}") from None
    except Foreign:
        raise UsageError(
            f"refresh.lock {path} is a file medsimp did not write; name another lock path"
        ) from None
    with held:
        yield


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class RunResult:
    """What one refresh did: its exit code, per-stage statuses and failure details."""

    exit_code: int
    status: str
    stages: dict[str, str]
    failed: list[str] = field(default_factory=list)
    restored: bool | None = None
    message: str = ""


def _repro(
    cfg: RefreshConfig, dag: Dag, changed: set[str], log_path: Path, echo: Callable[[str], None]
) -> RunResult:
    # DVC deletes a stage's metrics before running it and cannot check out `cache: false`
    # files, so keep their bytes to put back for stages that do not finish.
    saved = {
        rel: (cfg.root / rel).read_bytes()
        for name in dag.scope
        for rel in dag.metrics[name]
        if (cfg.root / rel).is_file()
    }
    outcome = run_repro(
        cfg.root, cfg.targets, cfg.repro_args, log_path, echo, dag, stages_to_run(dag, changed)
    )
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
    return RunResult(
        EXIT_STAGE_FAILED,
        status,
        stages,
        failed,
        restored,
        f"refresh {status}: stage(s) {', '.join(failed) or '?'}; dvc said:\n{tail}",
    )


def _report(
    cfg: RefreshConfig, dag: Dag, result: RunResult, params: dict[str, Any], t0: float, stamp: str
) -> dict[str, Any]:
    previous = rr.load_previous(cfg.report_dir)
    fingerprints = rr.fingerprint_builders(cfg.builders_dir)
    stages = rr.stage_entries(cfg.root, result.stages, dag.metrics, previous)
    counted = [e["cache"] for e in stages.values() if "cache" in e]
    tally = {
        s: sum(1 for v in result.stages.values() if v == s)
        for s in ("ran", "restored", "skipped", "failed", "not_run")
    }
    return {
        "status": result.status,
        "exit_code": result.exit_code,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
        "finished_at": utc_now(),
        "duration_s": round(time.time() - t0, 3),
        "targets": cfg.targets,
        "git": rr.git_info(cfg.root),
        **ran_with(params_hash(params), stages),
        "summary": ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in tally.items() if v),
        "stage_order": dag.names,
        "stages": stages,
        "failed_stages": result.failed,
        "restored": result.restored,
        "cache": {"hits": sum(c["hits"] for c in counted), "misses": sum(c["misses"] for c in counted)},
        "fingerprints": fingerprints,
        "fingerprints_changed": rr.fingerprint_changes(previous, fingerprints),
        "previous_report": (previous or {}).get("report"),
        "report": f"{stamp}.json",
        "log": f"{stamp}.log" if (cfg.report_dir / f"{stamp}.log").exists() else None,
    }


def ran_with(at_start: str, stages: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The report's `params_hash`: the params the stages that ran recorded (each stage's run
    record), the file as read at the start when none ran. When params.yaml changed while the
    refresh ran, the stages ran with other params than the start's, or with several: then
    `params_hash` is null and `params_changed_during_run` names each stage's hash."""
    used = {name: e["params_hash"] for name, e in stages.items() if e.get("params_hash")}
    if not used or set(used.values()) == {at_start}:
        return {"params_hash": at_start}
    return {"params_hash": None, "params_changed_during_run": {"at_start": at_start, "stages": used}}


def run_refresh(
    cfg: RefreshConfig, params: dict[str, Any], dry_run: bool = False, echo: Callable[[str], None] = print
) -> tuple[int, dict[str, Any] | None]:
    """One scheduled run: lock, decide, repro, restore on failure, report. -> (exit code, report).

    `cfg.root` is the DVC repository root (`medsimp.refresh.dvc.find_root`); a `dry_run` takes
    no lock and writes no report."""
    if not (cfg.root / ".dvc").is_dir():  # never create .dvc/tmp where it would make a DVC root
        raise UsageError(f"{cfg.root} is not a DVC repository root (no .dvc/ folder)")
    t0 = time.time()
    try:
        if dry_run:  # read only: no lock, no report (DVC's status takes its own lock in .dvc/tmp)
            dag, status = read_dag(cfg.root, cfg.targets)
            would = stages_to_run(dag, set(status))
            echo(
                "nothing to do: every stage is up to date" if not would else "would run: " + ", ".join(would)
            )
            for line in plan_lines(cfg.root, dag, status, would):
                echo(line)
            return (EXIT_OK if would else EXIT_NOTHING_TO_DO), None
        with refresh_lock(cfg.lock):
            ownership.adopt(cfg.root)  # older records, by absolute path, into the project (issue 55)
            dag, status = read_dag(cfg.root, cfg.targets)
            stamp = _free_stamp(cfg.report_dir, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t0)))
            if status:
                result = _repro(cfg, dag, set(status), cfg.report_dir / f"{stamp}.log", echo)
            else:
                result = RunResult(
                    EXIT_NOTHING_TO_DO,
                    "nothing_to_do",
                    {n: "skipped" if n in dag.scope else "not_run" for n in dag.names},
                    message="nothing to do: every stage is up to date",
                )
            report = _report(cfg, dag, result, params, t0, stamp)
            path = write_report(cfg.report_dir, report, stamp, cfg.keep_reports)
            echo(result.message or f"refresh {result.status}: {report['summary']}")
            echo(f"report: {path}")
            return result.exit_code, report
    except LockHeld as exc:
        echo(f"refresh: {exc}")
        return EXIT_LOCK_HELD, None


def _free_stamp(report_dir: Path, stamp: str) -> str:
    """`stamp`, or `stamp-N` when a report with that name exists (runs within one second)."""
    candidate, n = stamp, 1
    while any((report_dir / f"{candidate}{suffix}").exists() for suffix in (".json", ".md", ".log")):
        n += 1
        candidate = f"{stamp}-{n}"
    return candidate


@dataclass(frozen=True)
class Request:
    """What `medsimp refresh` was asked: the params file (`params_named`: named by --params or
    MEDSIMP_PARAMS, else the implicit params.yaml), the --set overrides, --report-dir, --targets
    and --dry-run."""

    params_file: str
    params_named: bool
    overrides: list[str]
    report_dir: str | None
    targets: list[str] | None
    dry_run: bool


def refresh(request: Request, params_data: Params) -> int:
    """The `medsimp refresh` stage, from the DVC root (found from the current folder; from a
    subfolder it runs as from the root): `params_data` is the params the command loaded. -> the
    exit code (`run_refresh`'s, or EXIT_ERROR with one line on stderr)."""
    foreign = [o for o in request.overrides if not o.strip().startswith("refresh.")]
    if foreign:
        print(
            f"refresh: --set {foreign[0]!r} would not reach the stages: dvc repro reads "
            f"{request.params_file} from disk; edit it instead (only refresh.* may be overridden)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    here = Path.cwd()
    root = find_root(here)  # before anything is written: never a .dvc/ of our own making
    report_dir = str(here / request.report_dir) if request.report_dir else None  # as typed, from here
    # from a subfolder, refresh runs as from the root (stage names, the params.yaml DVC reads)
    with contextlib.chdir(root):
        if request.params_named:  # as named: never the implicit rule
            params = load_params(here / request.params_file, required=True)
        else:  # the root's params.yaml (the one DVC reads), by the implicit rule
            if root != here:
                params_data = load_params(request.params_file, request.overrides)
            params = load_params(request.params_file, required=False)
        cfg = RefreshConfig.from_params(params_data.refresh, root, report_dir, request.targets)
        if not request.dry_run:  # before any stage runs, not when the report is written after them
            try:
                check_writable_folder(
                    cfg.report_dir, "--report-dir" if request.report_dir else "refresh.report_dir"
                )
            except UsageError as exc:
                print(f"refresh: {exc}", file=sys.stderr)
                return EXIT_ERROR
        try:
            code, _report = run_refresh(
                cfg,
                params.raw,
                request.dry_run,
                echo=lambda line: print(line, flush=True),
            )
        except DvcError as exc:
            print(f"refresh: {exc}", file=sys.stderr)
            return EXIT_ERROR
    return code
