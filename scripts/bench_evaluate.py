"""Benchmark `medsimp evaluate` from a cold process on a 2,000-line, 4-reference file.

    python scripts/bench_evaluate.py [--lines 2000] [--workdir /tmp/medsimp-bench-eval] [--full]
                                     [--before /path/to/an/older/checkout]

The file is built from the embedded MedLane sample (data/sample/medlane/test.txt):
its records are repeated with a line number appended so no two lines are equal; the
hypothesis is the first reference. Prints the wall time of each run (a fresh
`python -m medsimp.cli.app` process each): `before` = every metric but METEOR/BERTScore with
no `--select` (what the command did before lazy loading, with those two turned off),
`after` = `--select` of the text-only set. `--before DIR` runs the `before` command with
DIR's code (an older checkout, e.g. main before issue 15). `--full` also times METEOR + BERTScore.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT_ONLY = "bleu,sari,rouge_l,cider,fkgl,hit,cwr,ascore"


def build(workdir: Path, lines: int) -> list[str]:
    """Write src/hyp/ref0..3 files; return the `--hyp ... --ref ... --src ...` arguments."""
    blocks = [
        b.splitlines() for b in (ROOT / "data/sample/medlane/test.txt").read_text().split("\n\n") if b.strip()
    ]
    blocks = [b for b in blocks if len(b) >= 5]
    src: list[str] = []
    refs: list[list[str]] = [[] for _ in range(4)]
    for i in range(lines):
        block = blocks[i % len(blocks)]
        src.append(f"{block[0]} {i}")
        for k in range(4):
            refs[k].append(f"{block[k + 1][2:]} {i}")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "src.txt").write_text("\n".join(src) + "\n")
    (workdir / "hyp.txt").write_text("\n".join(refs[0]) + "\n")
    for k in range(4):
        (workdir / f"ref{k}.txt").write_text("\n".join(refs[k]) + "\n")
    args = ["--hyp", str(workdir / "hyp.txt"), "--src", str(workdir / "src.txt")]
    for k in range(4):
        args += ["--ref", str(workdir / f"ref{k}.txt")]
    return args


def timed(cmd: list[str], root: Path = ROOT) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        cmd,
        check=True,
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(root)},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - start, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--workdir", default="/tmp/medsimp-bench-eval")
    parser.add_argument("--before", help="checkout whose code runs the `before` command (default: this one)")
    parser.add_argument("--full", action="store_true", help="also time METEOR and BERTScore")
    args = parser.parse_args()
    files = build(Path(args.workdir), args.lines)
    cli = [sys.executable, "-m", "medsimp.cli"]
    off = ["--set", "evaluate.meteor=false", "--set", "evaluate.bertscore=false"]
    runs = {
        "before (all but METEOR/BERTScore, no --select)": [*cli, *off, "evaluate", "files", *files],
        f"after (--select {TEXT_ONLY})": [*cli, "evaluate", "files", *files, "--select", TEXT_ONLY],
        "after (--select bleu,sari)": [*cli, "evaluate", "files", *files, "--select", "bleu,sari"],
    }
    if args.full:
        runs["full (every metric, METEOR + BERTScore)"] = [*cli, "evaluate", "files", *files]
    print(f"{args.lines} lines, 4 references, cold process each, {os.cpu_count()} cores")
    for name, cmd in runs.items():
        root = Path(args.before) if args.before and name.startswith("before") else ROOT
        wall, cpu = timed(cmd, root)
        print(f"{wall:7.2f} s wall {cpu:7.2f} s CPU  {name}{f' [{root}]' if root != ROOT else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
