"""Benchmark the notes Beam job against a naive single-process baseline on one synthetic file.

    python scripts/bench_notes.py --rows 200000 [--gz] [--workdir /tmp/medsimp-bench]

Both read the same generated MIMIC-III-format file (medsimp synth notes) and do the same
work: keep discharge summaries (not ISERROR), extract sections, split sentences, score
them with Algorithm 1, write parquet. The baseline is the obvious script: `csv.reader` on
`io.TextIOWrapper(newline='')`, every row parsed, one process. Prints wall time, notes/s,
the ratio, and peak memory (RSS summed over the whole process tree, sampled every 0.1 s).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
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
        words.word_tokenizer = lambda: stock
    params = load_params(str(ROOT / "params.yaml"), []).notes
    extractor = extractor_from_params(params)
    processor = NoteProcessor(params, *load_lexicons(params, ROOT))
    csv.field_size_limit(1 << 30)
    raw = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    rows, read = [], 0
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        for r in reader:
            read += 1
            if len(r) != 11 or r[6].strip() != "Discharge summary" or r[9] == "1":
                continue
            note = Note(r[0], int(r[1]), int(r[2]) if r[2] else None, r[6], r[7], r[3], r[10], "")
            rows += processor.sentence_rows(section_record(note, extractor))
    pq.write_table(pa.Table.from_pylist(rows, schema=NOTES_SENTENCES), out)
    return {"rows_read": read, "sentences": len(rows)}


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
    parser.add_argument("--_baseline", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._baseline:
        print(json.dumps(baseline(*args._baseline)))
        return 0
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"notes-{args.rows}-{args.seed}.csv{'.gz' if args.gz else ''}"
    if not data.exists():
        from pipelines.sources.synth_notes import write_file

        t = time.perf_counter()
        write_file(str(data), args.rows, args.seed)
        print(f"generated {data} ({data.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t:.1f}s")
    results = {}
    load0 = os.getloadavg()
    if not args.skip_baseline:
        secs, cpu, peak, out = measure(
            [
                sys.executable,
                __file__,
                "--_baseline",
                str(data),
                str(work / "baseline.parquet"),
                args.baseline_tokenizer,
            ]
        )
        results[f"baseline-{args.baseline_tokenizer}"] = (
            secs,
            cpu,
            peak,
            json.loads(out.strip().splitlines()[-1]),
        )
    cmd = [
        sys.executable,
        "-m",
        "medsimp.cli",
        "--set",
        "beam.num_workers=2",  # as docs/refresh.md measured (params.yaml's sample profile runs one)
        "notes",
        "--input",
        str(data),
        "--output",
        str(work / "notes"),
        *[f"--beam-arg={a}" for a in args.beam_arg],
    ]
    secs, cpu, peak, _ = measure(cmd)
    stats = json.loads((work / "notes" / "stats.json").read_text())
    results["beam"] = (secs, cpu, peak, {"rows_read": stats["read"], "sentences": stats["sentences"]})
    print(f"load average before/after: {load0} / {os.getloadavg()}")
    for name, (secs, cpu, peak, counts) in results.items():
        print(
            f"{name:15s} {secs:7.1f}s wall {cpu:7.1f}s CPU  {counts['rows_read'] / secs:9.0f} "
            f"notes/s  peak RSS {peak:7.0f} MiB  rows_read={counts['rows_read']} "
            f"sentences={counts['sentences']}"
        )
    for name in results:
        if name != "beam":
            print(f"speed-up beam/{name}: wall {results[name][0] / results['beam'][0]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
