#!/usr/bin/env python
"""Check a CRF aligner's calibration on the 22 MC-CLEAN English test reviews (issue 53).

The calibration beside the model (`<model>.calibration.json`, fitted by
`medsimp align calibrate --gold DIR` on development gold, `alignment.calibration`) estimates the
precision of the rows the overlap filter keeps. This script aligns MultiCochrane's 22 MC-CLEAN
English test reviews (`alignment.heldout.cochrane_gold`: the released pairs placed in Devaraj et
al.'s test documents) with the model, as `align corpus` would (params align.crf's encoder and
merge), keeps the rows params `filter` keeps, and prints the estimate and its interval beside
the measured precision of those kept rows. A check of the estimator only: nothing is fitted or
chosen on these reviews, and the script refuses a calibration that is not the model's.

    python scripts/check_calibration.py --data ../shared/data --cochrane-test DIR
        [--model out/models/crf_aligner] [--params params.yaml] [--json OUT]

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

from alignment.calibration import filter_rule, find, score_gold, scoring_key  # noqa: E402
from alignment.crf import CRFAligner  # noqa: E402
from alignment.encoders import make_encoder  # noqa: E402
from alignment.heldout import cochrane_gold  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--cochrane-test", required=True, help="Devaraj et al.'s test.source/target")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--model", default=None, help="CRF model folder (default: params align.model)")
    ap.add_argument("--cache", default=None, help="embedding cache dir (default: a fresh temp dir)")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args(argv)
    pairs = Path(args.data) / "multicochrane" / "en-test-with-doi.json"
    if not pairs.exists():
        print(f"skip: {pairs} not found", file=sys.stderr)
        return 0
    from medsimp.config import load_params, resolve_path

    params_path = Path(args.params).resolve()
    params = load_params(str(params_path), [])
    model_dir = args.model or resolve_path(params.align.model, params_path.parent)
    cache = args.cache or tempfile.mkdtemp(prefix="check-calibration-cache-")
    model = CRFAligner.load(model_dir, make_encoder(params.align.crf.encoder, cache), params.align.crf.merge)
    key = scoring_key(model_dir, model)
    cal, why = find(model_dir, key)
    if cal is None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    rule = filter_rule(params.filter.threshold, params.filter.comparison, params.filter.aligner_floor())
    docs, info = cochrane_gold(pairs, Path(args.cochrane_test))
    rows, prf = score_gold(model, docs, rule)
    kept = [(s, c) for doc in rows for s, c, k in doc if k]
    est = cal.estimate([s for s, _ in kept])
    measured = float(np.mean([c for _, c in kept]))
    result = {
        "model": f"{model_dir} (scoring key {key})",
        "calibration": {"gold": cal.gold, "kept_rows": len(cal.rows), "heldout": dict(cal.heldout)},
        "test": {
            "gold": "MultiCochrane MC-CLEAN English test pairs (22 reviews), checked, never fitted",
            "documents": info["documents"],
            "pair_prf": prf,
            "rows": sum(len(d) for d in rows),
            "kept_rows": len(kept),
            "all_rows_measured_precision": round(float(np.mean([c for d in rows for _, c, _ in d])), 4),
            "kept_measured_precision": round(measured, 4),
            "kept_estimated_precision": round(est["precision"], 4) if est else None,
            "interval": [round(est["low"], 4), round(est["high"], 4)] if est else None,
            "error": round(est["precision"] - measured, 4) if est else None,
            "covered": bool(est and est["low"] <= measured <= est["high"]),
            "filter": rule,
        },
    }
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
