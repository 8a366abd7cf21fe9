"""What a refresh will cost before it runs (issue 55 §3, `refresh --dry-run`): for each stage
that would rerun, the documents it will read, how many of them it will compute, and the CPU
seconds that takes, from the runs measured here.

The model, per stage, is the plain one a cluster is sized with: CPU = a + b x work, where work
is the documents a run computes (its document cache's misses when the stage has a cache, else
the documents it read). `a` (start-up, model loading, reading what the cache holds) and `b` (per
document) are fitted on the stage's last runs here, which each run record keeps
(`medsimp.stats.write_metrics`: `history`). With one run, or runs that all computed the same
number, there is nothing to fit: the forecast is that run scaled by the work (proportional, an
upper bound when the work grows: start-up does not) or, when the work shrinks, the run itself as
an upper bound ("at most").

The expected work comes from the inputs. Each stage's data inputs (its deps that are not code,
`.py` files or anything under the packages) are weighed in bytes, now against what `dvc.lock` recorded; an input that an
upstream stage will rewrite is taken to grow as that stage's inputs do. The documents grow in
proportion. With a document cache, only the growth is computed, unless the stage's own code or
params changed, or an upstream stage reruns for such a change: then every document may be new to
the cache and the forecast is an upper bound. A forecast is an estimate, never a promise: a
refresh report records what each stage did cost (`stages.<name>.cost`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medsimp.refresh.dvc import Dag
from medsimp.stats import RUN_SUFFIX

CODE_FOLDERS = ("medsimp/", "pipelines/", "alignment/", "training/")  # code and packaged resources


@dataclass(frozen=True)
class Forecast:
    """One stage's expected run: documents read and computed, CPU seconds, and how it was
    estimated (`basis`). `bound` marks an upper bound rather than an estimate."""

    stage: str
    documents: float | None
    work: float | None
    cpu_seconds: float | None
    basis: str
    bound: bool = False

    def line(self) -> str:
        if self.cpu_seconds is None:
            return f"  {self.stage}: {self.basis}"
        docs = f"{self.documents:.0f} documents, " if self.documents is not None else ""
        work = f"{self.work:.0f} to compute, " if self.work is not None else ""
        cpu = f"{'at most ' if self.bound else 'about '}{self.cpu_seconds:.3g} s CPU"
        return f"  {self.stage}: {docs}{work}{cpu} ({self.basis})"


def fit(points: Iterable[tuple[float, float]]) -> tuple[float, float] | None:
    """Least squares CPU = a + b x work over (work, cpu) points, a and b at least 0; None when the
    points hold fewer than two distinct work values."""
    pts = [(float(w), float(c)) for w, c in points]
    if len({w for w, _ in pts}) < 2:
        return None
    n = len(pts)
    mw, mc = sum(w for w, _ in pts) / n, sum(c for _, c in pts) / n
    spread = sum((w - mw) ** 2 for w, _ in pts)
    if not spread > 0:  # work values too close to tell apart
        return None
    b = sum((w - mw) * (c - mc) for w, c in pts) / spread
    if b <= 0:
        return mc, 0.0
    a = mc - b * mw
    if a < 0:  # through the origin
        return 0.0, sum(w * c for w, c in pts) / sum(w * w for w, _ in pts)
    return a, b


def _figure(value: Any) -> bool:
    """A usable measured figure: a finite number at least 0 (not a bool)."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    )


def cpu_for(history: list[Mapping[str, Any]], work: float) -> tuple[float | None, str, bool]:
    """(CPU seconds, basis, upper bound?) for `work` documents computed, from a run history."""
    usable = [p for p in history if _figure(p.get("work")) and _figure(p.get("cpu_seconds"))]
    if usable:  # runs on the last run's runner only: a portable run's record sees the launcher alone
        runner = usable[-1].get("runner")
        usable = [p for p in usable if p.get("runner") == runner]
    points = [(p["work"], p["cpu_seconds"]) for p in usable]
    if not points:
        return None, "no record of an earlier run here", False
    line = fit(points)
    if line is not None:
        a, b = line
        return a + b * work, f"fit of {len(points)} runs here: {a:.3g} s + {b:.3g} s per document", False
    last_work, last_cpu = points[-1]
    if last_work > 0 and work >= last_work:
        return last_cpu * work / last_work, f"the last run here ({last_cpu:g} s) scaled by the work", False
    if last_work > 0 or work == 0:
        return last_cpu, f"the last run here computed {last_work:g}; one run gives no start-up cost", True
    return None, "no run here computed a document: no cost per document to go on", False


def _size(path: Path) -> int | None:
    """Bytes of a file or a folder's files (links not followed); None if absent."""
    try:
        if path.is_file() and not path.is_symlink():
            return path.stat().st_size
        if path.is_dir() and not path.is_symlink():
            total = 0
            for folder, _dirs, files in os.walk(path):
                for name in files:
                    f = Path(folder) / name
                    if not f.is_symlink():
                        total += f.stat().st_size
            return total
    except OSError:
        return None
    return None


def _run_record(root: Path, metric_paths: list[str]) -> dict[str, Any]:
    """A stage's run records merged: the summed history (by run position) and the last counts."""
    history: list[dict[str, Any]] = []
    last: dict[str, Any] = {}
    for rel in metric_paths:
        try:
            data = json.loads((root / (rel + RUN_SUFFIX)).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        last.update(data)
        past = [p for p in data.get("history", []) if isinstance(p, dict)]
        if not history:
            history = [dict(p) for p in past]
        else:  # a stage with several metrics files: its runs' figures add up, newest aligned
            for mine, theirs in zip(reversed(history), reversed(past), strict=False):
                for key in ("cpu_seconds", "work", "documents"):
                    if isinstance(theirs.get(key), int | float):
                        mine[key] = mine.get(key, 0) + theirs[key]
    last["history"] = history
    return last


def _invalidating(entries: Iterable[Any]) -> bool:
    """True when a stage's `dvc status` entries name a changed params or code/resource dep."""
    for entry in entries:
        if not isinstance(entry, dict):
            return True  # "always changed" and the like: assume the worst
        for kind, changed in entry.items():
            if kind == "changed deps" and isinstance(changed, dict):
                for path in changed:
                    if path.endswith((".py", ".yaml", ".yml")) or path.startswith(CODE_FOLDERS):
                        return True
            elif kind != "changed outs":
                return True
    return False


def forecast(root: Path, dag: Dag, status: Mapping[str, Any], stages: list[str]) -> list[Forecast]:
    """The expected cost of each stage in `stages` (DAG order), as the module docstring says."""
    import yaml

    try:
        lock = (yaml.safe_load((root / "dvc.lock").read_text(encoding="utf-8")) or {}).get("stages", {})
    except (OSError, yaml.YAMLError):
        lock = {}
    produced = {
        out["path"]: name
        for name, stage in lock.items()
        for out in stage.get("outs", []) or []
        if isinstance(out, dict) and "path" in out
    }
    scale: dict[str, float] = {}
    invalid: set[str] = set()
    result = []
    for name in stages:
        recorded = lock.get(name, {})
        before = now = 0.0
        for dep in recorded.get("deps", []) or []:
            path, size = dep.get("path", ""), dep.get("size")
            code = path.endswith(".py") or path.startswith(CODE_FOLDERS)
            if not isinstance(size, int) or (code and path not in produced):
                continue
            upstream = produced.get(path)
            if upstream in scale:
                expected = size * scale[upstream]
            else:
                current = _size(root / path)
                expected = size if current is None else current
            before, now = before + size, now + expected
        scale[name] = now / before if before else 1.0
        if _invalidating(status.get(name, [])) or dag.upstream.get(name, set()) & invalid:
            invalid.add(name)
        run = _run_record(root, dag.metrics.get(name, []))
        documents = run.get("documents")
        expected_docs = documents * scale[name] if isinstance(documents, int | float) else None
        hits, misses = run.get("cache_hits"), run.get("cache_misses")
        work: float | None
        if isinstance(hits, int) and isinstance(misses, int):
            units = (hits + misses) * scale[name]
            work = units if name in invalid else max(units - (hits + misses), 0.0)
        else:
            work = expected_docs
        if work is None:
            result.append(Forecast(name, None, None, None, "no record of an earlier run here"))
            continue
        cpu, basis, bound = cpu_for(run["history"], work)
        if cpu is None:
            result.append(Forecast(name, expected_docs, work, None, basis))
            continue
        all_new = isinstance(hits, int) and name in invalid  # some may still be in the cache
        result.append(Forecast(name, expected_docs, work, cpu, basis, bound or all_new))
    return result


def plan_lines(root: Path, dag: Dag, status: Mapping[str, Any], stages: list[str]) -> list[str]:
    """The dry run's lines: one per stage that would run, then their CPU together."""
    found = forecast(root, dag, status, stages)
    lines = [f.line() for f in found]
    known = [f.cpu_seconds for f in found if f.cpu_seconds is not None]
    if known:
        some = "" if len(known) == len(found) else f" ({len(found) - len(known)} stages unknown)"
        lines.append(f"  together: about {sum(known):.3g} s CPU expected{some}")
    return lines
