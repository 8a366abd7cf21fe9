"""What pinning numpy's OpenBLAS to its Haswell kernels costs (medsimp.numerics,
`OPENBLAS_CORETYPE=Haswell`): the numpy work of alignment, timed in a fresh process per kernel
choice and printed as seconds and the ratio to OpenBLAS's own choice for this CPU (the baseline).

    python scripts/bench_openblas.py [--docs 300] [--repeat 3]

The workload is what goes through OpenBLAS in `dvc repro`: Vecalign's dynamic programme over
document pairs of Cochrane size (20 abstract and 12 summary sentences, 384-dimensional vectors:
overlap embeddings and their cosine matrices) and the CRF's cosine matrix, on fixed random
vectors, so no model start-up is counted. Each child sets its kernel choice before numpy loads
OpenBLAS; the baseline's numbers differ by CPU, which is why medsimp does not use it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time, zlib
import numpy as np  # OpenBLAS reads OPENBLAS_CORETYPE here, before medsimp can set it
from threadpoolctl import threadpool_info
import alignment.vecalign as vecalign

docs, repeat = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(13)

class Fixed:
    name = "fixed-random"
    def fingerprint(self, lang=None):
        return self.name
    def encode(self, texts, lang=None):
        out = np.stack([rng_for(t).standard_normal(384) for t in texts]).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

def rng_for(text):
    return np.random.default_rng(zlib.crc32(text.encode()))

pairs = [([f"d{d} c{i}" for i in range(20)], [f"d{d} s{j}" for j in range(12)]) for d in range(docs)]
enc = Fixed()
best = None
for _ in range(repeat):
    t0 = time.perf_counter()
    for c, s in pairs:
        vecalign.align(c, s, enc)
        a, b = enc.encode(c), enc.encode(s)
        (b @ a.T).sum()
    took = time.perf_counter() - t0
    best = took if best is None else min(best, took)
cores = sorted({lib.get("architecture") for lib in threadpool_info() if lib.get("internal_api") == "openblas"})
print(json.dumps({"seconds": best, "openblas": cores}))
"""

ROWS = [  # (label, OPENBLAS_CORETYPE; None = OpenBLAS's own choice for this CPU)
    ("OpenBLAS's choice for this CPU (baseline)", None),
    ("Haswell kernels (medsimp)", "Haswell"),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=300, help="document pairs per repetition")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions; the fastest counts")
    args = ap.parse_args(argv)
    base = None
    for label, core in ROWS:
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        if core:
            env["OPENBLAS_CORETYPE"] = core
        env["PYTHONPATH"] = str(ROOT)
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(args.docs), str(args.repeat)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            print(f"{label}: failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            return 1
        got = json.loads(done.stdout.strip().splitlines()[-1])
        base = base or got["seconds"]
        print(
            f"{label:45s} {got['seconds']:7.2f} s  x{got['seconds'] / base:.2f}  (OpenBLAS {', '.join(got['openblas'])})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
