#!/usr/bin/env python
"""Calibrate an English CRF aligner's probabilities on development gold (issue 37 item 3).

The model (default: the DAG's `out/models/crf_aligner`, with params align.crf's encoder and
merge, as `align corpus` runs it) aligns the 10 hand-aligned Devaraj validation reviews of
`scripts/aligner_designs.py` (COCHRANE_DEV, 70 gold pairs; never the 22 MC-CLEAN test reviews).
Each predicted row (an aligned block, as a corpus row) gets its score (mean CRF posterior of
its pairs, the rows' `crf_score`) and its correctness (the share of its pairs in the gold);
`alignment.calibration.Calibration.fit` maps score to correctness by isotonic regression.

It prints the fitted breakpoints, the dev rows' reliability by score bin, and, with
`--cochrane-test DIR` (Devaraj et al.'s test.source/target), how well the calibration
estimates precision on the 22 test reviews: the estimate against the measured row precision
(a check of the estimator only: nothing is fitted or chosen on them). `--write` stores the
calibration under the model's content hash in the packaged
`medsimp/resources/aligner_heldout.json`, which the data report and the dataset card read.

    python scripts/calibrate_aligner.py --data ../shared/data [--model out/models/crf_aligner]
        [--cochrane-test DIR] [--write] [--json OUT]

Skips cleanly (exit 0) when the data folder is absent. Only counts and scores are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import medsimp  # noqa: E402, F401  (first: pins CPU-independent kernels, medsimp.numerics)

# isort: split
import numpy as np  # noqa: E402
from aligner_designs import cochrane_dev, real_reviews  # noqa: E402

from alignment.calibration import HELDOUT, Calibration, row_correctness  # noqa: E402
from alignment.crf import CRFAligner  # noqa: E402
from alignment.encoders import make_encoder  # noqa: E402
from alignment.heldout import cochrane_gold  # noqa: E402

DEV_GOLD = (
    "10 hand-aligned Devaraj et al. validation reviews (scripts/aligner_designs.py COCHRANE_DEV, 70 pairs)"
)
BINS = (0.0, 0.5, 0.7, 0.85, 0.95, 1.0000001)


def scored_rows(model: CRFAligner, docs) -> list[tuple[float, float]]:
    out = []
    for d in docs:
        res = model.align(d.complex, d.simple)
        out += row_correctness(res.pairs, res.blocks, set(d.pairs))
    return out


def reliability(rows: list[tuple[float, float]]) -> list[dict]:
    table = []
    for lo, hi in zip(BINS, BINS[1:]):
        inside = [c for s, c in rows if lo <= s < hi]
        if inside:
            table.append(
                {
                    "scores": f"[{lo:.2f}, {min(hi, 1.0):.2f}]",
                    "rows": len(inside),
                    "correct": round(float(np.mean(inside)), 3),
                }
            )
    return table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--model", default=None, help="CRF model folder (default: params align.model)")
    ap.add_argument(
        "--cochrane-test",
        default=None,
        help="Devaraj test.source/target: check the estimate on the 22 reviews",
    )
    ap.add_argument("--cache", default=None, help="embedding cache dir (default: a fresh temp dir)")
    ap.add_argument(
        "--write", action="store_true", help=f"store the calibration in medsimp/resources/{HELDOUT}"
    )
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "cochrane" / "val.source").exists():
        print(f"skip: {data}/cochrane/val.source not found", file=sys.stderr)
        return 0
    from medsimp.config import load_params, resolve_path
    from medsimp.corpora.writer import content_hash

    params_path = Path(args.params).resolve()
    align = load_params(str(params_path), []).align
    model_dir = args.model or resolve_path(align.model, params_path.parent)
    digest = content_hash(model_dir)
    cache = args.cache or tempfile.mkdtemp(prefix="calibrate-aligner-cache-")
    model = CRFAligner.load(model_dir, make_encoder(align.crf.encoder, cache), align.crf.merge)
    dev_rows = scored_rows(model, cochrane_dev(real_reviews(data / "cochrane")))
    cal = Calibration.fit([s for s, _ in dev_rows], [c for _, c in dev_rows], DEV_GOLD, align.crf.merge)
    result: dict = {
        "model": f"{model_dir} sha256:{digest}",
        "dev": {"rows": len(dev_rows), "precision": round(float(np.mean([c for _, c in dev_rows])), 3)},
        "dev_reliability": reliability(dev_rows),
        "calibration": cal.as_json(),
    }
    en_pairs = data / "multicochrane" / "en-test-with-doi.json"
    if args.cochrane_test and not en_pairs.exists():
        print(f"no test check: {en_pairs} not found", file=sys.stderr)
    if args.cochrane_test and en_pairs.exists():
        test_docs, _ = cochrane_gold(en_pairs, Path(args.cochrane_test))
        test_rows = scored_rows(model, test_docs)
        est = cal.estimate([s for s, _ in test_rows])
        result["test_check"] = {
            "gold": "MultiCochrane MC-CLEAN English test pairs (22 reviews), checked, never fitted",
            "rows": len(test_rows),
            "measured_precision": round(float(np.mean([c for _, c in test_rows])), 3),
            "estimated_precision": round(est["precision"], 3) if est else None,
            "mean_raw_score": round(est["mean_score"], 3) if est else None,
            "reliability": reliability(test_rows),
        }
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.write:
        target = ROOT / "medsimp" / "resources" / HELDOUT
        known = json.loads(target.read_text(encoding="utf-8"))
        if digest not in known:
            print(
                f"no held-out row for {digest} in {target}: measure it first (scripts/eval_alignment.py)",
                file=sys.stderr,
            )
            return 2
        known[digest]["calibration"] = {
            **cal.as_json(),
            "method": "isotonic regression (scikit-learn) of each predicted row's correct share of pairs on its crf_score",
            "command": "python scripts/calibrate_aligner.py --data DIR --write",
        }
        if "test_check" in result:
            tc = result["test_check"]
            known[digest]["calibration"]["check_on_heldout"] = {
                k: tc[k] for k in ("rows", "measured_precision", "estimated_precision", "mean_raw_score")
            }
        target.write_text(json.dumps(known, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote the calibration of {digest} to {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
