"""`medsimp evaluate files` against sacrebleu's own CLI on the same files, and start-up (issue 57).

    python scripts/bench_evaluate.py [--lines 1015] [--repeat 5] [--select bleu,sari,rouge_l,fkgl]
                                     [--data /work/shared/data] [--before /path/to/an/older/checkout]
                                     [--startup] [--keep DIR]

Builds, in a temporary folder, a system output of `--lines` lines with 4 references and sources
from the embedded MedLane sample (data/sample/medlane/test.txt: its records repeated with the line
number appended so no two lines are equal; the output is reference i mod 4 with every 7th word
dropped). `--data DIR` adds a second set of real Cochrane text: MultiCochrane's English test pairs
(`DIR/multicochrane/en-test-with-doi.json`: complex sentence, an mT5 system output, the plain gold
sentence; one reference) repeated the same way; skipped when the file is absent. The text stays
in the temporary folder (deleted at the end unless `--keep`).

Each run is a fresh process (after one untimed run of each command: Python's bytecode and
medsimp's cached tables in place, as in a researcher's loop), timed alternately: `sacrebleu REFS
-i HYP` (its CLI, BLEU only) and `python -m medsimp.cli evaluate files --hyp HYP --ref ... --src
SRC --select ...` (with this checkout's code; `--before DIR` adds the same command with DIR's
code: an export, since its bytecode is written into it). Prints the median and
min-max wall time and the median CPU time (user + system) of each, and the ratio of medians
against sacrebleu (issue 57: <= 1.5). `--startup`: also `medsimp --help` and a refused argument
of every command (`medsimp <command ...> --no-such-option`), the slowest of them (target <= 0.3 s).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELECT = "bleu,sari,rouge_l,fkgl"


def _write(folder: Path, src: list[str], hyp: list[str], refs: list[list[str]]) -> dict[str, list[str]]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "src.txt").write_text("\n".join(src) + "\n", encoding="utf-8")
    (folder / "hyp.txt").write_text("\n".join(hyp) + "\n", encoding="utf-8")
    for k, lines in enumerate(refs):
        (folder / f"ref{k}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {
        "hyp": [str(folder / "hyp.txt")],
        "src": [str(folder / "src.txt")],
        "ref": [str(folder / f"ref{k}.txt") for k in range(len(refs))],
    }


def medlane_sample(folder: Path, lines: int) -> dict[str, list[str]]:
    """The embedded MedLane sample repeated to `lines` lines, 4 references."""
    blocks = [
        b.splitlines() for b in (ROOT / "data/sample/medlane/test.txt").read_text().split("\n\n") if b.strip()
    ]
    blocks = [b for b in blocks if len(b) >= 5]
    src, hyp, refs = [], [], [[] for _ in range(4)]  # type: ignore[var-annotated]
    for i in range(lines):
        block = blocks[i % len(blocks)]
        src.append(f"{block[0]} {i}")
        for k in range(4):
            refs[k].append(f"{block[k + 1][2:]} {i}")
        words = refs[i % 4][-1].split()
        hyp.append(" ".join(w for j, w in enumerate(words) if j % 7 != 6))
    return _write(folder, src, hyp, refs)


def multicochrane(folder: Path, data: Path, lines: int) -> dict[str, list[str]] | None:
    """MultiCochrane's English test pairs (real Cochrane sentences, mT5 outputs, gold), 1 reference."""
    path = data / "multicochrane" / "en-test-with-doi.json"
    if not path.is_file():
        return None
    pairs = [p for p in json.loads(path.read_text(encoding="utf-8")) if p["input"].strip()]
    rows = [pairs[i % len(pairs)] for i in range(lines)]
    clean = lambda text: " ".join(text.split())  # noqa: E731 - one line per sentence
    return _write(
        folder,
        [f"{clean(p['input'])} {i}" for i, p in enumerate(rows)],
        [f"{clean(p['output'])} {i}" for i, p in enumerate(rows)],
        [[f"{clean(p['gold'])} {i}" for i, p in enumerate(rows)]],
    )


def _env(code: Path) -> dict[str, str]:
    """The commands' environment: `code` on PYTHONPATH, offline, and Python's bytecode cache on
    (PYTHONDONTWRITEBYTECODE dropped): an installed medsimp, like sacrebleu in site-packages, runs
    from compiled bytecode; compiling its ~150 modules from source every run is not what a
    researcher's loop pays."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(code)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(cmd: list[str], code: Path = ROOT) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of one run of `cmd` with `code` on PYTHONPATH."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        cmd,
        check=True,
        cwd=code,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(code),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - start, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def compare(files: dict[str, list[str]], select: str, repeat: int, before: Path | None) -> None:
    """Alternate sacrebleu's CLI and medsimp on `files`; print medians and the ratio."""
    sacrebleu = [str(Path(sys.executable).with_name("sacrebleu")), *files["ref"], "-i", files["hyp"][0]]
    medsimp = [sys.executable, "-m", "medsimp.cli", "evaluate", "files", "--hyp", files["hyp"][0]]
    medsimp += ["--src", files["src"][0], "--select", select]
    for ref in files["ref"]:
        medsimp += ["--ref", ref]
    runs: dict[str, tuple[list[str], Path]] = {"sacrebleu CLI (BLEU)": (sacrebleu, ROOT)}
    runs[f"medsimp evaluate files --select {select}"] = (medsimp, ROOT)
    if before is not None:
        runs[f"  the same with {before}"] = (medsimp, before)
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    for cmd, code in runs.values():  # untimed: bytecode written, medsimp's cached tables built
        timed(cmd, code)
    for _ in range(repeat):
        for name, (cmd, code) in runs.items():
            wall, cpu = timed(cmd, code)
            walls[name].append(wall)
            cpus[name].append(cpu)
    base_wall = statistics.median(walls["sacrebleu CLI (BLEU)"])
    base_cpu = statistics.median(cpus["sacrebleu CLI (BLEU)"])
    for name in runs:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(
            f"  {wall:6.2f} s wall ({min(walls[name]):.2f}-{max(walls[name]):.2f}) {cpu:6.2f} s CPU  "
            f"x{wall / base_wall:.2f} wall, x{cpu / base_cpu:.2f} CPU  {name}"
        )


def startup(repeat: int) -> None:
    """`medsimp --help` and every command's refusal of an unknown option: best of `repeat` each."""
    sys.path.insert(0, str(ROOT))
    from medsimp.cli.app import build_parser, command_leaves

    cli = [sys.executable, "-m", "medsimp.cli"]
    cases = {"medsimp --help": [*cli, "--help"]}
    for path, _ in command_leaves(build_parser()):
        cases[f"medsimp {' '.join(path)} --no-such-option"] = [*cli, *path, "--no-such-option"]
    best: dict[str, float] = {}
    for name, cmd in cases.items():
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run(
                cmd,
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
                env=_env(ROOT),
            )
            times.append(time.perf_counter() - start)
        best[name] = min(times)
    print(f"  {best['medsimp --help']:6.3f} s  medsimp --help (best of {repeat})")
    slowest = max((n for n in best if n != "medsimp --help"), key=best.__getitem__)
    print(f"  {best[slowest]:6.3f} s  slowest refusal: {slowest} ({len(best) - 1} commands)")
    print(f"  {statistics.median(best.values()):6.3f} s  median over all")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1015)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (medians)")
    parser.add_argument("--select", default=SELECT)
    parser.add_argument("--data", type=Path, help="the shared data folder: adds real MultiCochrane text")
    parser.add_argument("--before", type=Path, help="an older checkout: its code runs the same command too")
    parser.add_argument("--startup", action="store_true", help="also time --help and refused arguments")
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(
        f"{args.lines} lines, fresh process each, medians of {args.repeat}, {os.cpu_count()} cores, load {load:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="medsimp-bench-eval-") as tmp:
        folder = args.keep or Path(tmp)
        print("embedded MedLane sample, 4 references:")
        compare(medlane_sample(folder / "medlane", args.lines), args.select, args.repeat, args.before)
        real = multicochrane(folder / "multicochrane", args.data, args.lines) if args.data else None
        if real is not None:
            print("real Cochrane text (MultiCochrane en test: sources, mT5 outputs, gold), 1 reference:")
            compare(real, args.select, args.repeat, args.before)
        elif args.data:
            print(f"(no {args.data}/multicochrane/en-test-with-doi.json: real text skipped)")
    if args.startup:
        print("start-up:")
        startup(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
