"""Benchmark the notes Beam job against a naive single-process baseline on one synthetic file.

    python scripts/bench_notes.py --rows 1000000 [--repeat 3] [--gz] [--workdir /tmp/medsimp-bench]

Both read the same generated MIMIC-III-format file (medsimp synth notes) and do the same
work: keep discharge summaries (not ISERROR), extract sections, split sentences, score
them with Algorithm 1, write parquet. The baseline is the obvious script: `csv.reader` on
`io.TextIOWrapper(newline='')`, every row parsed, one process. The limit is CSV parsing and
writing alone: pyarrow's multi-threaded C++ reader on the job's worker count, the same rows
kept, their columns written as parquet, no sections or sentences. Prints wall time, notes/s,
peak memory (RSS summed over the whole process tree, sampled every 0.1 s) and the ratios;
with `--repeat N` each command runs N times, interleaved (baseline, job, limit, baseline, ...),
so that a shared machine's load falls on all three alike, and the medians are compared.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

import benchtools

ROOT = Path(__file__).resolve().parents[1]


def baseline(path: str, out: str, tokenizer: str) -> dict:
    """The naive single-process version of the job (`tokenizer`: "stock" = NLTK's
    NLTKWordTokenizer as shipped, "fast" = the job's stdlib-re build of it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from medsimp.config import load_params
    from medsimp.schemas import NOTES_SENTENCES
    from pipelines.sources.noteevents import Note
    from pipelines.text.notes import NoteProcessor, section_record
    from pipelines.text.sections import extractor_from_params
    from pipelines.text.selection import load_lexicons

    if tokenizer == "stock":
        from nltk.tokenize import NLTKWordTokenizer

        from medsimp.text import words

        stock = NLTKWordTokenizer()
        words.word_tokenizer = lambda: stock  # type: ignore[assignment]
    params = load_params(str(ROOT / "params.yaml"), []).notes
    extractor = extractor_from_params(params)
    processor = NoteProcessor(params, *load_lexicons(params, ROOT))
    csv.field_size_limit(1 << 30)
    raw = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    rows, read, notes = [], 0, 0
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        for r in reader:
            read += 1
            if len(r) != 11 or r[6].strip() != "Discharge summary" or r[9] == "1":
                continue
            note = Note(r[0], int(r[1]), int(r[2]) if r[2] else None, r[6], r[7], r[3], r[10], "")
            notes += 1
            rows += processor.sentence_rows(section_record(note, extractor))
    pq.write_table(pa.Table.from_pylist(rows, schema=NOTES_SENTENCES), out)
    return {"rows_read": read, "notes": notes, "sentences": len(rows)}


def limit(path: str, out: str, threads: str) -> dict:
    """CSV parsing and writing alone: every row parsed by pyarrow's C++ reader on `threads`
    threads, the job's rows kept (discharge summaries, ISERROR not 1), written as parquet."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    pa.set_cpu_count(int(threads))
    pa.set_io_thread_count(int(threads))
    table = pcsv.read_csv(
        path,
        parse_options=pcsv.ParseOptions(newlines_in_values=True),
        convert_options=pcsv.ConvertOptions(column_types={"ISERROR": pa.string(), "TEXT": pa.string()}),
        read_options=pcsv.ReadOptions(block_size=1 << 24),
    )
    keep = pc.and_(
        pc.equal(pc.utf8_trim_whitespace(table["CATEGORY"]), "Discharge summary"),
        pc.invert(pc.fill_null(pc.equal(table["ISERROR"], "1"), False)),
    )
    kept = table.filter(keep)
    pq.write_table(kept, out, compression="zstd")
    return {"rows_read": table.num_rows, "notes": kept.num_rows}


def measure(cmd: list[str]) -> tuple[float, float, float, str]:
    """Run `cmd` from the repository; (seconds, CPU seconds, peak RSS MiB of the process tree, stdout)."""
    m = benchtools.measure(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if m.returncode:
        raise SystemExit(f"{cmd[:3]} failed with exit code {m.returncode}")
    return m.wall_s, m.cpu_s, m.peak_rss_mb, m.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--gz", action="store_true", help="gzip input (one reader; not splittable)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", default="/tmp/medsimp-bench")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--beam-arg", action="append", default=[])
    parser.add_argument(
        "--baseline-tokenizer",
        choices=["stock", "fast"],
        default="stock",
        help="stock: NLTK as shipped (the naive script); fast: the job's build",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each command (medians compared)")
    parser.add_argument("--workers", type=int, default=2, help="Beam workers (and the limit's threads)")
    parser.add_argument("--skip-limit", action="store_true")
    parser.add_argument("--_baseline", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--_limit", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._baseline:
        print(json.dumps(baseline(*args._baseline)))
        return 0
    if args._limit:
        print(json.dumps(limit(*args._limit)))
        return 0
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"notes-{args.rows}-{args.seed}.csv{'.gz' if args.gz else ''}"
    if not data.exists():
        from pipelines.sources.synth_notes import write_file

        t = time.perf_counter()
        write_file(str(data), args.rows, args.seed)
        print(f"generated {data} ({data.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t:.1f}s")
    commands: dict[str, list[str]] = {}
    if not args.skip_baseline:
        commands[f"baseline-{args.baseline_tokenizer}"] = [
            sys.executable,
            __file__,
            "--_baseline",
            str(data),
            str(work / "baseline.parquet"),
            args.baseline_tokenizer,
        ]
    commands["beam"] = [
        sys.executable,
        "-m",
        "medsimp.cli",
        "--set",
        f"beam.num_workers={args.workers}",  # params.yaml's sample profile runs one
        "notes",
        "--input",
        str(data),
        "--output",
        str(work / "notes"),
        *[f"--beam-arg={a}" for a in args.beam_arg],
    ]
    if not args.skip_limit:
        commands["limit"] = [
            sys.executable,
            __file__,
            "--_limit",
            str(data),
            str(work / "limit.parquet"),
            str(args.workers),
        ]
    runs: dict[str, list[tuple[float, float, float, dict]]] = {name: [] for name in commands}
    loads = [os.getloadavg()]
    for _ in range(args.repeat):
        for name, cmd in commands.items():
            secs, cpu, peak, out = measure(cmd)
            if name == "beam":
                stats = json.loads((work / "notes" / "stats.json").read_text())
                counts = {"rows_read": stats["read"], "notes": stats["kept"], "sentences": stats["sentences"]}
            else:
                counts = json.loads(out.strip().splitlines()[-1])
            runs[name].append((secs, cpu, peak, counts))
            loads.append(os.getloadavg())
    print(
        f"load average (1, 5, 15 min) before: {loads[0]}, after: {loads[-1]}, highest 1-min: {max(load[0] for load in loads):.2f}"
    )
    median = {name: statistics.median(r[0] for r in rs) for name, rs in runs.items()}
    for name, rs in runs.items():
        secs, counts = median[name], rs[-1][3]
        extra = " ".join(f"{k}={v}" for k, v in counts.items() if k != "rows_read")
        print(
            f"{name:15s} {secs:7.1f}s wall (median of {len(rs)}: {', '.join(f'{r[0]:.1f}' for r in rs)}) "
            f"{statistics.median(r[1] for r in rs):7.1f}s CPU  {counts['rows_read'] / secs:9.0f} notes/s  "
            f"peak RSS {max(r[2] for r in rs):7.0f} MiB  rows_read={counts['rows_read']} {extra}"
        )
    for name in runs:
        if name.startswith("baseline"):
            per_run = ", ".join(f"{b[0] / j[0]:.2f}" for b, j in zip(runs[name], runs["beam"]))
            print(f"speed-up beam/{name}: wall {median[name] / median['beam']:.2f}x (per run: {per_run})")
    if "limit" in runs:
        print(f"beam / limit (CSV parsing and writing alone): wall {median['beam'] / median['limit']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
