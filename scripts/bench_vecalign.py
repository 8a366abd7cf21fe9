#!/usr/bin/env python
"""Vecalign speed on the shared Bleualign de-fr dev file, against a baseline.

For each set-up it aligns a 150-sentence German document with its French side (the dev
file cut at the gold block that covers German sentence 150) with a cold embedding cache,
then again with the warm cache, and reports embedding time and DP time apart, plus strict
F1 on that cut. The baseline is the first shipped default (multilingual-e5-small,
alignment_max_size 4, no anchors). Then it times the params' set-up on growing prefixes of
the file (cold cache each time) to show how the cost grows with document length.

    python scripts/bench_vecalign.py --data ../shared/data [--sizes 75,150,300,468]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from alignment import vecalign  # noqa: E402
from alignment.encoders import PairEncoders  # noqa: E402
from alignment.gold import Block, read_blocks  # noqa: E402
from alignment.score import vecalign_scores  # noqa: E402
from medsimp.params_schema import Vecalign, encoder_spec, section_of  # noqa: E402

BASELINE = {
    "encoder": [{"kind": "e5", "prefix": "query"}],
    "alignment_max_size": 4,
    "del_percentile_frac": 0.2,
    "del_percentile_of": "random",
    "length_weight": 0,
    "number_weight": 0,
}


def prefix(src: list[str], tgt: list[str], gold: list[Block], n: int):
    """The first n source sentences, the target sentences the gold aligns to them, their gold."""
    m = 1 + max(j for a, b in gold if a and a[-1] < n for j in b)
    return src[:n], tgt[:m], [b for b in gold if all(i < n for i in b[0]) and all(j < m for j in b[1])]


def timed(src, tgt, params: dict, cache: str) -> tuple[dict, list[Block]]:
    spec = params.pop("encoder")
    specs = [encoder_spec(s) for s in (spec if isinstance(spec, list) else [spec])]
    encoder = PairEncoders(specs, cache).for_pair("de", "fr")
    t0 = time.perf_counter()
    params = section_of(Vecalign, params)
    res = vecalign.align(src, tgt, encoder, src_lang="de", tgt_lang="fr", params=params)
    cold = {"total_s": time.perf_counter() - t0, **res.timing}
    t0 = time.perf_counter()
    vecalign.align(src, tgt, encoder, src_lang="de", tgt_lang="fr", params=params)
    return {"encoder": encoder.name, "cold": cold, "rerun_s": time.perf_counter() - t0}, res.blocks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--doc-size", type=int, default=150)
    ap.add_argument("--sizes", default="75,150,300,468")
    args = ap.parse_args(argv)
    folder = Path(args.data) / "bleualign"
    if not (folder / "dev.defr").exists():
        print(f"skip: {folder} not found", file=sys.stderr)
        return 0
    from medsimp.config import load_params

    ours = load_params(args.params, args.overrides).align.vecalign.model_dump()
    src = (folder / "dev.de").read_text(encoding="utf-8").splitlines()
    tgt = (folder / "dev.fr").read_text(encoding="utf-8").splitlines()
    gold = read_blocks(folder / "dev.defr")
    s, t, g = prefix(src, tgt, gold, args.doc_size)
    print(f"document pair: {len(s)} x {len(t)} sentences, {len(g)} gold blocks")
    rows = {}
    for name, params in (("baseline", {**ours, **BASELINE}), ("params", ours)):
        with tempfile.TemporaryDirectory(prefix="bench-vecalign-") as cache:
            info, blocks = timed(s, t, dict(params), cache)
        info["f1_strict"] = vecalign_scores([g], [blocks])["f1_strict"]
        rows[name] = info
        c = info["cold"]
        print(
            f"{name:9s} {info['encoder']:22s} cold {c['total_s']:6.2f} s (embed {c['embed_s']:6.2f} s, "
            f"DP {c['dp_s']:.3f} s)  rerun {info['rerun_s']:.3f} s  strict F1 {info['f1_strict']:.3f}"
        )
    ratio = rows["baseline"]["cold"]["total_s"] / rows["params"]["cold"]["total_s"]
    print(f"cold speed-up vs baseline: {ratio:.2f}x")
    print("growth with document length (params, cold cache):")
    for n in [int(x) for x in args.sizes.split(",")]:
        s, t, _ = prefix(src, tgt, gold, min(n, len(src)))
        with tempfile.TemporaryDirectory(prefix="bench-vecalign-") as cache:
            info, _ = timed(s, t, dict(ours), cache)
        c = info["cold"]
        print(
            f"  {len(s):4d} x {len(t):4d}: {c['total_s']:6.2f} s total, {1000 * c['total_s'] / len(s):5.1f} ms "
            f"per source sentence, DP {c['dp_s']:.3f} s"
        )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
