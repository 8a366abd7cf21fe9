"""Write synthetic inputs for benchmarks and smoke runs (no real data involved).

`medsimp synth notes --rows N --output FILE[.gz] --seed S` writes a MIMIC-III-format
NOTEEVENTS file with MIMIC-III's category mix (about 2.9% discharge summaries).
`medsimp synth cochrane --reviews N --output FILE.jsonl --seed S` writes canonical Cochrane
JSONL at corpus scale: an English abstract of 20-40 sentences and summaries of 8-25 sentences
in en/es/fr/fa per review (`scripts/bench_scale.py` runs the chain on it).
"""

from __future__ import annotations

import argparse
import time

from medsimp.cli.args import global_options

HELP = "write synthetic inputs (a MIMIC-III-format NOTEEVENTS, Cochrane reviews in four languages)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    notes = kinds.add_parser("notes", help="synthetic NOTEEVENTS.csv(.gz)", parents=[global_options(2)])
    notes.add_argument("--rows", type=int, required=True, help="number of notes")
    notes.add_argument("--output", required=True, help="output file (.gz compresses)")
    notes.add_argument("--seed", type=int, default=0, help="random seed (the same seed writes the same file)")
    cochrane = kinds.add_parser(
        "cochrane",
        help="synthetic Cochrane reviews (canonical JSONL, en/es/fr/fa)",
        parents=[global_options(2)],
    )
    cochrane.add_argument("--reviews", type=int, required=True, help="number of reviews")
    cochrane.add_argument("--output", required=True, help="output file (.jsonl)")
    cochrane.add_argument(
        "--seed", type=int, default=0, help="random seed (the same seed writes the same file)"
    )


def run(args: argparse.Namespace) -> int:

    from medsimp.atomic import atomic_file
    from medsimp.errors import UsageError
    from pipelines.sources import synth_cochrane, synth_notes

    count = args.rows if args.kind == "notes" else args.reviews
    if count < 1:
        raise UsageError(f"--{'rows' if args.kind == 'notes' else 'reviews'} must be at least 1, got {count}")
    start = time.perf_counter()
    with atomic_file(args.output) as tmp:  # refuses to replace a file medsimp did not write
        if args.kind == "notes":
            synth_notes.write_file(str(tmp), count, args.seed)
        else:
            with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
                fh.writelines(synth_cochrane.lines(count, args.seed))
    what = "notes" if args.kind == "notes" else "reviews (en/es/fr/fa)"
    print(f"wrote {count} {what} to {args.output} in {time.perf_counter() - start:.1f}s")
    return 0
