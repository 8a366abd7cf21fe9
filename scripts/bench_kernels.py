"""What the CPU-independent kernels cost (medsimp.numerics): half a DECLARE epoch on the embedded
MedLane sample under each kernel choice, each in a fresh process, printed as seconds and the
ratio to PyTorch's own choice (the baseline).

    python scripts/bench_kernels.py [--records 80]

The baseline and the other rows undo medsimp's pinning inside their process (before the first
torch kernel), so they measure what a run would cost without it; their weights differ by CPU,
which is why medsimp does not use them. Numbers for a 2-core AMD EPYC: docs/refresh.md
"Same numbers on any CPU".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROWS = [  # (label, environment changes, threads)
    ("ATen AVX2, MKL as dispatched (baseline)", {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": None}, 1),
    ("ATen default, MKL as dispatched", {"MKL_CBWR": None}, 1),
    ("ATen AVX2, MKL COMPATIBLE", {"ATEN_CPU_CAPABILITY": "avx2"}, 1),
    ("ATen default, MKL COMPATIBLE (medsimp)", {}, 1),
    ("the same, train.threads 2 (medsimp's default)", {}, 2),
]

CHILD = """
import json, os, sys, tempfile, time
from pathlib import Path
import medsimp  # pins the kernels in os.environ; the row's changes are applied next
import training.trainer as trainer
from medsimp.params_schema import Train
changes = json.loads(sys.argv[1])
for key, value in changes.items():
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value
if changes:
    trainer.require_pinned = lambda torch: None  # this row measures unpinned kernels on purpose
from training.data import load_medlane
sample = Path(sys.argv[2])
splits = load_medlane(*(str(sample / f"{n}.txt") for n in ("train", "validation", "test")))
dictionary = json.loads((Path(medsimp.__file__).parent / "resources" / "medlane_dictionary.json").read_text())
settings = Train(encoder="minilm", epochs=1, threads=int(sys.argv[4]))
start = time.perf_counter()
with tempfile.TemporaryDirectory() as tmp:
    trainer.train(splits.train[: int(sys.argv[3])], splits.validation, dictionary, settings, Path(tmp), progress=False, device="cpu", mixed_precision="off")
print(time.perf_counter() - start)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=80, help="training records (half the sample: 80)")
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    base = None
    print(f"{'kernels':<48} {'seconds':>8} {'ratio':>6}")
    for label, changes, threads in ROWS:
        start = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                CHILD,
                json.dumps(changes),
                str(ROOT / "data" / "sample" / "medlane"),
                str(args.records),
                str(threads),
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if done.returncode != 0:
            print(f"{label}: failed ({done.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
            return 1
        seconds = (
            float(done.stdout.strip().splitlines()[-1])
            if done.stdout.strip()
            else time.perf_counter() - start
        )
        base = base or seconds
        print(f"{label:<48} {seconds:8.1f} {seconds / base:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
