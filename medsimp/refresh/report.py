"""The refresh run report: per-stage counts and their change, cache hits, fingerprints.

A report is `<report_dir>/<UTC start>.json` + `.md` (+ `.log`, DVC's output), copied to
`latest.json` / `latest.md`; the next run diffs its counts against `latest.json`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medsimp import ownership
from medsimp.atomic import write_json, write_text
from medsimp.stats import RUN_SUFFIX

CARD = "README.md"
MAX_SHOWN = 8  # changed counts per stage in the Markdown summary


def flatten_numbers(obj: Any, prefix: str = "") -> dict[str, int | float]:
    """Numeric leaves of nested dicts as {"a.b": n} (bools and strings dropped)."""
    out: dict[str, int | float] = {}
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            out.update(flatten_numbers(value, f"{prefix}{key}."))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out[prefix[:-1]] = obj
    return out


def read_metrics(root: Path, paths: list[str]) -> dict[str, int | float]:
    """Flattened numbers of a stage's metrics files (file stem prefix when it has several)."""
    flat: dict[str, int | float] = {}
    for rel in paths:
        try:
            data = json.loads((root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        prefix = f"{Path(rel).stem}." if len(paths) > 1 else ""
        flat.update(flatten_numbers(data, prefix))
    return dict(sorted(flat.items()))


def ran_params(root: Path, paths: list[str]) -> str | None:
    """The `params_hash` a stage's run records (`<metrics>.run.json`) say it ran with; None when
    they say nothing (an older medsimp). Several different ones are joined with `+`."""
    found = set()
    for rel in paths:
        try:
            data = json.loads((root / (rel + RUN_SUFFIX)).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict) and isinstance(data.get("params_hash"), str):
            found.add(data["params_hash"])
    return "+".join(sorted(found)) or None


def count_changes(
    previous: Mapping[str, Any] | None, current: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """{key: {previous, current, delta}} for every count that differs from the previous run
    ({} when there is no previous run to compare with)."""
    if previous is None:
        return {}
    changes: dict[str, dict[str, Any]] = {}
    for key in sorted(set(previous) | set(current)):
        before, after = previous.get(key), current.get(key)
        if before != after:
            delta = after - before if before is not None and after is not None else None
            if isinstance(delta, float):
                delta = round(delta, 6)
            changes[key] = {"previous": before, "current": after, "delta": delta}
    return changes


def cache_counts(flat: Mapping[str, int | float]) -> dict[str, int] | None:
    """Sums of every `cache_hits` / `cache_misses` count (top level or nested); None if absent."""
    found = {"hits": 0, "misses": 0}
    seen = False
    for key, value in flat.items():
        name = key.rsplit(".", 1)[-1]
        if name in ("cache_hits", "cache_misses"):
            found[name.removeprefix("cache_")] += int(value)
            seen = True
    return found if seen else None


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint_builders(builders_dir: Path) -> dict[str, dict[str, Any]]:
    """Per builder folder: data files, bytes and a sha256 over (path, file sha256) pairs.

    The card (README.md) is left out: it names the git revision, so it changes on every
    commit even when the data do not. Hidden entries (atomic-write temp dirs) are skipped.
    """
    prints: dict[str, dict[str, Any]] = {}
    if not builders_dir.is_dir():
        return prints
    for builder in sorted(p for p in builders_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        digest, files, size = hashlib.sha256(), 0, 0
        for path in sorted(builder.rglob("*")):
            rel = path.relative_to(builder)
            if (
                not path.is_file()
                or rel.as_posix() == CARD
                or any(part.startswith(".") for part in rel.parts)
            ):
                continue
            digest.update(f"{rel.as_posix()}\0{_file_sha256(path)}\n".encode())
            files += 1
            size += path.stat().st_size
        prints[builder.name] = {"files": files, "bytes": size, "sha256": digest.hexdigest()}
    return prints


def git_info(root: Path) -> dict[str, Any]:
    """HEAD revision and whether tracked files differ from it (None outside git). Read only:
    `--no-optional-locks` keeps `git status` from rewriting the index."""

    def git(*args: str) -> str | None:
        with contextlib.suppress(OSError):
            proc = subprocess.run(
                ["git", "--no-optional-locks", *args], cwd=root, capture_output=True, text=True, check=False
            )
            if proc.returncode == 0:
                return proc.stdout.strip()
        return None

    revision = git("rev-parse", "HEAD")
    porcelain = git("status", "--porcelain", "--untracked-files=no") if revision else None
    return {"revision": revision, "dirty": bool(porcelain) if porcelain is not None else None}


def load_previous(report_dir: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        return json.loads((report_dir / "latest.json").read_text(encoding="utf-8"))
    return None


COST_KEYS = ("wall_seconds", "cpu_seconds", "documents", "workers")  # medsimp.stats.cost, record_run


def stage_entries(
    root: Path,
    statuses: Mapping[str, str],
    metric_paths: Mapping[str, list[str]],
    previous: Mapping[str, Any] | None,
) -> dict[str, dict[str, Any]]:
    """Per stage: status, counts, their changes vs the previous report, cache use if it ran."""
    prev_stages = (previous or {}).get("stages", {})
    out: dict[str, dict[str, Any]] = {}
    for name, status in statuses.items():
        counts = read_metrics(root, metric_paths.get(name, []))
        run = read_metrics(root, [p + RUN_SUFFIX for p in metric_paths.get(name, [])])
        entry: dict[str, Any] = {
            "status": status,
            "counts": counts,
            "changes": count_changes(prev_stages.get(name, {}).get("counts"), counts),
        }
        if status == "ran" and (used := cache_counts({**counts, **run})) is not None:
            entry["cache"] = used
        if status == "ran" and (spent := {k: run[k] for k in COST_KEYS if k in run}):
            entry["cost"] = spent  # wall and CPU seconds, documents, Beam workers (its run record)
        ran_with = ran_params(root, metric_paths.get(name, [])) if status == "ran" else None
        if ran_with:
            entry["params_hash"] = ran_with  # what the stage ran with, as its run record says
        out[name] = entry
    return out


def fingerprint_changes(
    previous: Mapping[str, Any] | None, current: Mapping[str, dict[str, Any]]
) -> list[str] | None:
    """Builders whose fingerprint differs from the previous report's; None without one (a first
    report has nothing to compare with, so it marks nothing changed)."""
    if previous is None:
        return None
    before = previous.get("fingerprints", {})
    return sorted(
        name
        for name in set(before) | set(current)
        if before.get(name, {}).get("sha256") != current.get(name, {}).get("sha256")
    )


def render_markdown(report: Mapping[str, Any]) -> str:
    """A short human summary of one report."""
    cache = report["cache"]
    lines = [
        f"# medsimp refresh: {report['status'].replace('_', ' ')} (exit {report['exit_code']})",
        "",
        f"- started {report['started_at']}, finished {report['finished_at']} ({report['duration_s']:.1f} s)",
        f"- git {report['git']['revision'] or 'n/a'}{' (dirty)' if report['git']['dirty'] else ''}, "
        f"params hash {report['params_hash'] or 'none: params.yaml changed during the run (see each stage)'}",
        f"- stages: {report['summary']}",
        f"- document cache (stages that ran): {cache['hits']} hits, {cache['misses']} misses",
    ]
    if report.get("failed_stages"):
        restored = report.get("restored")
        lines.append(
            f"- failed: {', '.join(report['failed_stages'])}; previous outputs "
            f"{'restored' if restored else 'NOT restored'} from the DVC cache"
        )
    order = report.get("stage_order") or list(report["stages"])
    by_status: dict[str, list[str]] = {}
    for name in order:
        by_status.setdefault(report["stages"][name]["status"], []).append(name)
    for status, label in (("skipped", "up to date"), ("not_run", "not run")):
        if by_status.get(status):
            lines.append(f"- {label}: {', '.join(by_status[status])}")
    worked = [n for n in order if report["stages"][n]["status"] not in ("skipped", "not_run")]
    if worked:
        lines += [
            "",
            "| stage | status | changes vs previous run | cache hits / misses | wall / CPU s, documents, workers |",
            "|---|---|---|---|---|",
        ]
    for name in worked:
        entry = report["stages"][name]
        shown = [
            f"{k} {v['delta']:+g}"
            if isinstance(v["delta"], (int, float))
            else f"{k} {v['previous']}->{v['current']}"
            for k, v in entry["changes"].items()
        ]
        if len(shown) > MAX_SHOWN:
            shown = shown[:MAX_SHOWN] + [f"... {len(shown) - MAX_SHOWN} more in the JSON"]
        changes = ", ".join(shown) or "-"
        used = entry.get("cache")
        cache_cell = f"{used['hits']} / {used['misses']}" if used else "-"
        spent = entry.get("cost") or {}
        cost_cell = (
            f"{spent.get('wall_seconds', '-')} / {spent.get('cpu_seconds', '-')}, "
            f"{spent.get('documents', '-')}, {spent.get('workers', '-')}"
            if spent
            else "-"
        )
        lines.append(f"| {name} | {entry['status']} | {changes} | {cache_cell} | {cost_cell} |")
    if report["fingerprints"]:
        lines += ["", "| builder | files | bytes | sha256 | changed |", "|---|---|---|---|---|"]
        changed = report["fingerprints_changed"]
        for name, fp in report["fingerprints"].items():
            mark = "first report" if changed is None else "yes" if name in changed else "no"
            lines.append(f"| {name} | {fp['files']} | {fp['bytes']} | {fp['sha256'][:16]} | {mark} |")
    return "\n".join(lines) + "\n"


# The name of a report refresh writes: its UTC start, `-N` when several start in one second.
STAMP = re.compile(r"^(\d{8}T\d{6}Z)(?:-(\d+))?$")


def _reports_written(report_dir: Path) -> list[Path]:
    """`<stamp>.json` reports in `report_dir` that refresh wrote (named as a stamp, with an
    ownership record matching their bytes), oldest first. Anything else is the user's."""
    found = []
    for path in report_dir.glob("*.json"):
        match = STAMP.match(path.stem)
        if match and path.is_file() and not path.is_symlink() and ownership.owned(path):
            found.append(((match.group(1), int(match.group(2) or 1)), path))
    return [path for _, path in sorted(found)]


def write_report(report_dir: Path, report: dict[str, Any], stamp: str, keep: int) -> Path:
    """Write `<stamp>.json/.md` and `latest.json/.md`; keep the newest `keep` reports.

    Pruning removes only reports refresh wrote (`_reports_written`), with their `.md`/`.log`,
    and never the one just written."""
    report_dir.mkdir(parents=True, exist_ok=True)
    markdown = render_markdown(report)
    path = report_dir / f"{stamp}.json"
    write_json(path, report)
    write_text(report_dir / f"{stamp}.md", markdown)
    write_json(report_dir / "latest.json", report)
    write_text(report_dir / "latest.md", markdown)
    if keep > 0:
        others = [p for p in _reports_written(report_dir) if p != path]
        for stale in others[: max(0, len(others) - (keep - 1))]:
            companions = [stale.with_suffix(".log")]
            if ownership.owned(stale.with_suffix(".md")):
                companions.append(stale.with_suffix(".md"))
            for file in (stale, *companions):
                with contextlib.suppress(OSError):
                    file.unlink()
                ownership.forget(file)
    return path
