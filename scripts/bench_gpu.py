"""Training speed on each device and precision: DECLARE (or BERT-MT) epochs on the CPU, on CUDA in
full precision, and with fp16 / bf16 mixed precision, as ratios against the CPU in full precision.

    python scripts/bench_gpu.py [--model declare] [--data DIR] [--records 160] [--epochs 1]
                                [--batch-sizes 8 32] [--encoder NAME_OR_PATH] [--json OUT]

Each row is one `medsimp train` in a fresh process with `--set train.device=...
train.mixed_precision=... train.batch_size=...` (the params a GPU user sets), a cold checkpoint
cache and the same data: the embedded MedLane sample by default, or `--data DIR` holding
MedLane-format `train.txt`, `validation.txt`, `test.txt` (e.g. `scripts/train_medlane_real.py`'s
`WORK/data`); `--records` keeps the first N training records. It prints wall seconds, the
ratio to the baseline (CPU, full precision, the first batch size), the best validation loss
(mixed precision should not move it much) and the device line the run reported. Rows this
machine cannot run (no CUDA, no bfloat16) say so and are skipped. `--encoder` sets
`train.encoder` (default: the params value; offline, its MiniLM fallback).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import benchtools

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample" / "medlane"
ROWS = (("cpu", "off"), ("cuda", "off"), ("cuda", "fp16"), ("cuda", "bf16"))


def cut(train: Path, out: Path, records: int) -> None:
    """The first `records` blank-line separated records of a MedLane training file."""
    blocks = [b for b in train.read_text(encoding="utf-8").split("\n\n") if b.strip()][:records]
    out.write_text("\n\n".join(b.strip("\n") for b in blocks) + "\n", encoding="utf-8")


def available(device: str, precision: str) -> str | None:
    """Why a row cannot run here (None: it can)."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        return "no CUDA device"
    if precision == "bf16" and not torch.cuda.is_bf16_supported(including_emulation=False):
        return "no bfloat16 support"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("declare", "bertmt"), default="declare")
    parser.add_argument(
        "--data", type=Path, default=SAMPLE, help="folder of MedLane train/validation/test.txt"
    )
    parser.add_argument("--records", type=int, default=160, help="first N training records")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--encoder", help="train.encoder (default: params)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cut(args.data / "train.txt", work / "train.txt", args.records)
        sets = [
            f"train.data.train={work / 'train.txt'}",
            f"train.data.validation={args.data / 'validation.txt'}",
            f"train.data.test={args.data / 'test.txt'}",
            f"train.epochs={args.epochs}",
            "train.patience=100",  # every epoch runs
            *([f"train.encoder={args.encoder}"] if args.encoder else []),
        ]
        baseline, base_name = None, ""
        for batch in args.batch_sizes:
            for device, precision in ROWS:
                name = f"{device} {precision} batch {batch}"
                why = available(device, precision)
                if why:
                    print(f"{name:<24} skipped: {why}")
                    continue
                run = work / name.replace(" ", "-")
                cmd = [sys.executable, "-m", "medsimp.cli", "--params", str(REPO / "params.yaml")]
                for s in [*sets, f"train.device={device}", f"train.mixed_precision={precision}",
                          f"train.batch_size={batch}", f"cache.dir={run / 'cache'}"]:  # fmt: skip
                    cmd += ["--set", s]
                cmd += ["train", "--model", args.model, "--output", str(run / "model"), "--no-progress"]
                with (work / "log.txt").open("wb") as log:
                    m = benchtools.measure(cmd, log=log)
                text = (work / "log.txt").read_text(encoding="utf-8", errors="replace")
                if m.returncode != 0:
                    print(f"{name:<24} failed (exit {m.returncode}): {text.strip().splitlines()[-1:]}")
                    continue
                line = next((x for x in text.splitlines() if re.search(r"train \w+: device ", x)), "")
                stats = json.loads((run / "model" / "stats.json").read_text(encoding="utf-8"))
                if baseline is None:
                    baseline, base_name = m.wall_s, name
                row = {"device": device, "mixed_precision": precision, "batch_size": batch,
                       "wall_s": round(m.wall_s, 1), "ratio": round(m.wall_s / baseline, 3),
                       "best_val_loss": stats.get("best_val_loss"), "reported": line.split(": ", 1)[-1]}  # fmt: skip
                rows.append(row)
                print(
                    f"{name:<24} {row['wall_s']:8.1f} s  x{row['ratio']:.2f} of {base_name}  "
                    f"val loss {row['best_val_loss']}  [{row['reported']}]"
                )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
