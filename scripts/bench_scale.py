"""Scale benchmark: cochrane -> link -> align -> filter -> build on N synthetic reviews.

For each N (default 100, 400, 1600) it writes `medsimp synth cochrane --reviews N` (four
languages per review) into a scratch folder and runs the chain there with the installed CLI,
each stage a separate process, as `dvc repro` runs them. Per stage it prints wall time, CPU
time (user + system of the stage's process tree) and peak RSS (the tree's summed resident
memory, sampled every 0.1 s), per review too; then the growth exponent between sizes
(log t2/t1 over log N2/N1) and the projection to MultiCochrane's 7,755 reviews.

Cold caches: every size gets a fresh document cache (`--set cache.dir=<scratch>/cache-N`), so
no embedding, link or alignment is reused across sizes or from the repository. What is built
once per machine and kept warm is model set-up, not per-document work: the QuickUMLS index of
the embedded starter vocabulary (built untimed in the scratch folder), the CRF aligner model
(trained untimed there from the embedded gold), the installed encoders in MEDSIMP_CACHE.

    python scripts/bench_scale.py [--sizes 100 400 1600] [--workdir DIR] [--keep] [--json OUT]
                                  [--set KEY=VALUE ...] [--stages STAGE ...]

`--stages build` measures that stage again on the corpora of an earlier `--keep` run in the
same `--workdir` (after a change to it, without aligning again). The report ends with each
stage's peak RSS at the largest N over the smallest.

`--workers 1 2` measures parallelism instead (issue 36): `align corpus` on ONE input file of N
reviews (`cochrane.num_shards=1`) with each number of Beam workers (cold document cache each
time), checks the outputs are byte-identical, and prints the speed-up, the parallel efficiency,
and, from two sizes, each worker count's fixed start-up and wall time per review, and the
projection for MultiCochrane's 7,755 reviews on 1, 2, 16 and 64 workers:

    python scripts/bench_scale.py --sizes 2 16 --workers 1 2

`--set` passes a params override to every timed stage (e.g. `--set
align.vecalign.overlap_mode=mean` measures memory in a quarter of the time: the Farsi encoder
is most of the wall time and none of the growth in N).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import benchtools

REPO = Path(__file__).resolve().parents[1]
FULL = 7755  # MultiCochrane's aligned abstract/PLS pairs
STAGES = ("cochrane", "link", "align", "filter", "build")
MEDSIMP = [sys.executable, "-m", "medsimp.cli"]  # the CLI of the Python that runs this script


def run_stage(cmd: list[str], log: Path) -> dict:
    """Run one CLI command (output appended to `log`); wall, CPU and peak RSS of its process tree."""
    with log.open("ab") as fh:
        m = benchtools.measure(cmd, cwd=log.parent, log=fh)
    if m.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:]
        raise SystemExit(
            f"bench_scale: {' '.join(cmd[:2])} failed (exit {m.returncode}): {tail[0] if tail else ''}"
        )
    return {"wall_s": m.wall_s, "cpu_s": m.cpu_s, "peak_rss_mb": m.peak_rss_mb}


def prepare(work: Path, log: Path) -> dict[str, Path]:
    """Untimed set-up shared by all sizes: the QuickUMLS index and the CRF aligner model."""
    index, model = work / "umls", work / "crf_aligner"
    base = ["--set", f"cache.dir={work / 'cache-setup'}"]
    if not index.exists():
        run_stage(
            [
                *MEDSIMP,
                *base,
                "umls-index",
                "--mrconso",
                str(REPO / "data/sample/umls/MRCONSO.RRF"),
                "--mrsty",
                str(REPO / "data/sample/umls/MRSTY.RRF"),
                "--output",
                str(index),
            ],
            log,
        )
    if not model.exists():
        run_stage(
            [
                *MEDSIMP,
                "--params",
                str(REPO / "params.yaml"),
                *base,
                "--set",
                f"align.gold={REPO / 'data/sample/align_gold.jsonl'}",
                "--set",
                "align.self_training.enabled=false",  # a model for the stages timed, not itself timed
                "align",
                "train",
                "--output",
                str(model),
            ],
            log,
        )
    return {"index": index, "model": model}


def run_size(
    n: int, work: Path, shared: dict[str, Path], sets: list[str] | None = None, only: tuple[str, ...] = STAGES
) -> dict:
    d = work / f"n{n}"
    log = d / "bench.log"
    data = d / "cochrane.jsonl"
    if only[0] == STAGES[0]:  # a fresh corpus; otherwise the stages before `only` ran here already
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        synth = subprocess.run(
            [*MEDSIMP, "synth", "cochrane", "--reviews", str(n), "--output", str(data)],
            capture_output=True,
            text=True,
        )
        if synth.returncode:
            raise SystemExit(f"bench_scale: synth failed: {synth.stderr.strip().splitlines()[-1:]}")
    elif not d.is_dir():
        raise SystemExit(f"bench_scale: --stages {only[0]} needs {d} from an earlier run (--workdir, --keep)")
    # two worker processes, as docs/refresh.md measured (params.yaml's sample profile runs one)
    common = [*MEDSIMP, "--params", str(REPO / "params.yaml"), "--set", f"cache.dir={d / 'cache'}"]
    common += ["--set", "beam.num_workers=2"]
    for kv in sets or []:
        common += ["--set", kv]
    build_sets = [
        "--set",
        f"build.multicochrane.pairs={d / 'filter' / 'pairs'}",
        "--set",
        f"build.multicochrane.sentences={d / 'cochrane' / 'sentences'}",
        "--set",
        f"build.multicochrane.linked={d / 'linked'}",
    ]
    commands = {
        "cochrane": ["cochrane", "--input", str(data), "--output", str(d / "cochrane")],
        "link": [
            "link",
            "--input",
            str(d / "cochrane"),
            "--output",
            str(d / "linked"),
            "--index",
            str(shared["index"]),
        ],
        "align": [
            "align",
            "corpus",
            "--input",
            str(d / "cochrane"),
            "--output",
            str(d / "align"),
            "--model",
            str(shared["model"]),
        ],
        "filter": ["filter", "--input", str(d / "align"), "--output", str(d / "filter")],
        "build": [*build_sets, "build", "multicochrane", "--output", str(d / "builder")],
    }
    stages = {}
    for name in only:
        stages[name] = run_stage([*common, *commands[name]], log)
        print(f"  n={n:>5} {name:<9} {stages[name]['wall_s']:8.1f} s wall", file=sys.stderr, flush=True)
    stats = (
        json.loads((d / "align" / "stats.json").read_text()) if (d / "align" / "stats.json").exists() else {}
    )
    return {"reviews": n, "stages": stages, "align_stats": stats.get("counters", stats)}


def _tree_bytes(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def run_workers(n: int, work: Path, shared: dict[str, Path], workers: list[int], sets: list[str]) -> dict:
    """`align corpus` on one input file of `n` reviews with each worker count: wall, CPU, and
    whether every run wrote the same bytes."""
    d = work / f"workers-n{n}"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    log, data = d / "bench.log", d / "cochrane.jsonl"
    common = [*MEDSIMP, "--params", str(REPO / "params.yaml")]
    for kv in sets:
        common += ["--set", kv]
    run_stage([*MEDSIMP, "synth", "cochrane", "--reviews", str(n), "--output", str(data)], log)
    one_file = ["--set", "cochrane.num_shards=1", "--set", f"cache.dir={d / 'cache-cochrane'}"]
    run_stage([*common, *one_file, "cochrane", "--input", str(data), "--output", str(d / "cochrane")], log)
    files = sorted((d / "cochrane" / "sentences").glob("*.parquet"))
    if len(files) != 1:
        raise SystemExit(f"bench_scale: expected one sentence file, found {len(files)}")
    runs = {}
    for w in workers:
        cmd = [
            *common,
            *("--set", f"beam.num_workers={w}", "--set", f"cache.dir={d / f'cache-w{w}'}"),
            *("align", "corpus", "--input", str(d / "cochrane"), "--output", str(d / f"align-w{w}")),
            *("--model", str(shared["model"])),
        ]
        runs[w] = run_stage(cmd, log)
        print(f"  n={n} workers={w}: {runs[w]['wall_s']:.1f} s wall", file=sys.stderr, flush=True)
    base = _tree_bytes(d / f"align-w{workers[0]}")
    same = all(_tree_bytes(d / f"align-w{w}") == base for w in workers[1:])
    return {"reviews": n, "runs": runs, "identical": same}


def workers_report(results: list[dict], workers: list[int]) -> str:
    """Speed-up and efficiency per size; with two sizes, the fixed start-up and the per-review
    time of each worker count (a line through the two), and the projection to 7,755 reviews."""
    w0 = workers[0]
    lines = [
        "align corpus on ONE input file (cold document cache each run)",
        f"{'reviews':>7} {'workers':>7} {'wall s':>8} {'cpu s':>8} {'speed-up':>9} {'efficiency':>10} {'same bytes':>10}",
    ]
    for r in results:
        base = r["runs"][w0]["wall_s"]
        for w in workers:
            run = r["runs"][w]
            speed = base / run["wall_s"]
            lines.append(
                f"{r['reviews']:>7} {w:>7} {run['wall_s']:>8.1f} {run['cpu_s']:>8.1f} {speed:>9.2f} "
                f"{speed * w0 / w:>10.2f} {r['identical']!s:>10}"
            )
    if len(results) < 2:
        lines.append("(give two --sizes, e.g. 2 16, for the start-up / per-review split and the projection)")
        return "\n".join(lines)
    small, large = results[0], results[-1]
    dn = large["reviews"] - small["reviews"]
    per_review = {w: (large["runs"][w]["wall_s"] - small["runs"][w]["wall_s"]) / dn for w in workers}
    fixed = {w: large["runs"][w]["wall_s"] - per_review[w] * large["reviews"] for w in workers}
    lines.append("")
    for w in workers:
        lines.append(
            f"{w} worker(s): start-up {fixed[w]:.1f} s (imports, models, pipeline), then {per_review[w]:.2f} s "
            f"wall per review (per-review speed-up {per_review[w0] / per_review[w]:.2f})"
        )
    wl = workers[-1]
    eff = per_review[w0] * w0 / (per_review[wl] * wl)
    lines.append(f"per-review parallel efficiency at {wl} workers: {eff:.2f} (assumed to hold beyond it)")
    for w in (1, 2, 16, 64):
        wall = fixed[w0] + FULL * per_review[w0] * w0 / (w * (eff if w > w0 else 1.0))
        lines.append(f"projection, {FULL} reviews on {w:>2} workers: {wall / 3600:6.2f} h wall")
    return "\n".join(lines)


def report(results: list[dict]) -> str:
    lines = []
    head = f"{'stage':<9} {'N':>6} {'wall s':>9} {'cpu s':>9} {'peak MB':>8} {'ms/review':>10} {'exp':>5}"
    lines.append(head)
    lines.append("-" * len(head))
    measured = [name for name in STAGES if name in results[0]["stages"]]
    for name in [*measured, "total"]:
        prev = None
        for r in results:
            if name == "total":
                s = {
                    "wall_s": sum(v["wall_s"] for v in r["stages"].values()),
                    "cpu_s": sum(v["cpu_s"] for v in r["stages"].values()),
                    "peak_rss_mb": max(v["peak_rss_mb"] for v in r["stages"].values()),
                }
            else:
                s = r["stages"][name]
            exp = ""
            if prev is not None and prev[1] > 0 and s["wall_s"] > 0:
                exp = f"{math.log(s['wall_s'] / prev[1]) / math.log(r['reviews'] / prev[0]):.2f}"
            lines.append(
                f"{name:<9} {r['reviews']:>6} {s['wall_s']:>9.1f} {s['cpu_s']:>9.1f} {s['peak_rss_mb']:>8.0f} "
                f"{1000 * s['wall_s'] / r['reviews']:>10.1f} {exp:>5}"
            )
            prev = (r["reviews"], s["wall_s"])
    if len(results) > 1:
        lines.append("")
        first, final = results[0], results[-1]
        lines.append(
            f"peak RSS at N={final['reviews']} / N={first['reviews']} (flat: at most 1.20): "
            + ", ".join(
                f"{name} {final['stages'][name]['peak_rss_mb'] / first['stages'][name]['peak_rss_mb']:.2f}"
                for name in measured
            )
        )
    last = results[-1]
    total = sum(v["wall_s"] for v in last["stages"].values())
    linear = total / last["reviews"] * FULL
    lines.append("")
    lines.append(
        f"projection to {FULL} reviews (linear from N={last['reviews']}): {linear / 60:.1f} min wall"
    )
    if len(results) > 1:
        first = results[-2]
        t0 = sum(v["wall_s"] for v in first["stages"].values())
        b = math.log(total / t0) / math.log(last["reviews"] / first["reviews"])
        lines.append(
            f"projection with the measured exponent {b:.2f}: {total * (FULL / last['reviews']) ** b / 60:.1f} min wall"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1600])
    ap.add_argument("--workdir", help="scratch folder (default: a new temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument(
        "--stages",
        nargs="+",
        choices=STAGES,
        default=list(STAGES),
        help="measure only these stages (in order; later ones need an earlier --keep run's --workdir)",
    )
    ap.add_argument("--json", help="also write the raw numbers here")
    ap.add_argument(
        "--workers",
        type=int,
        nargs="+",
        help="measure align on one input file with these Beam worker counts (first: the baseline)",
    )
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="params override for every stage"
    )
    args = ap.parse_args()
    if min(args.sizes) < 1 or len(set(args.sizes)) != len(args.sizes):
        ap.error("--sizes: distinct positive numbers of reviews")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="medsimp-scale-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        print(f"bench_scale: scratch {work}; set-up (untimed)", file=sys.stderr, flush=True)
        shared = prepare(work, work / "setup.log")
        if args.workers:
            runs = [run_workers(n, work, shared, args.workers, args.set) for n in sorted(args.sizes)]
            print(workers_report(runs, args.workers))
            if args.json:
                Path(args.json).write_text(json.dumps(runs, indent=1) + "\n")
            return 0
        only = tuple(name for name in STAGES if name in args.stages)
        results = [run_size(n, work, shared, args.set, only) for n in sorted(args.sizes)]
        print(report(results))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
