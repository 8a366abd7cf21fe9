"""Write synthetic inputs for benchmarks and smoke runs (no real data involved).

`medsimp synth notes --rows N --output FILE[.gz] --seed S` writes a MIMIC-III-format
NOTEEVENTS file with MIMIC-III's category mix (about 2.9% discharge summaries).
"""

from __future__ import annotations

import argparse

HELP = "write synthetic inputs (notes: a MIMIC-III-format NOTEEVENTS of any size)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    notes = kinds.add_parser("notes", help="synthetic NOTEEVENTS.csv(.gz)")
    notes.add_argument("--rows", type=int, required=True, help="number of notes")
    notes.add_argument("--output", required=True, help="output file (.gz compresses)")
    notes.add_argument("--seed", type=int, default=0, help="random seed (the same seed writes the same file)")


def run(args: argparse.Namespace) -> int:
    import time

    from medsimp.outputs import atomic_file
    from medsimp.pipelines import synth_notes

    start = time.perf_counter()
    with atomic_file(args.output) as tmp:  # refuses to replace a file medsimp did not write
        synth_notes.write_file(str(tmp), args.rows, args.seed)
    print(f"wrote {args.rows} notes to {args.output} in {time.perf_counter() - start:.1f}s")
    return 0
