#!/usr/bin/env python
"""Alignment evaluation on the shared real data (skips cleanly when it is absent).

PLABA dev (English abstract -> adaptation): pair P/R/F1 of the neural CRF and of the
Jaccard- and TF-IDF-threshold baselines, in 2-fold cross-validation by question (the
CRF is trained and the thresholds are tuned on one fold, scored on the other; the two
test folds are pooled). Bleualign de-fr dev: Vecalign strict/lax P/R/F1 with the params and
as published (no centring, no anchors), on the whole file and on summary-sized cuts of it,
embedding and DP time reported apart, a second run to show the cache, and a 2-fold check of
the anchor weights (chosen on one half of the file, scored on the other).
MultiCochrane en-fr PLS pairs: sentence retrieval P@1 of each Vecalign encoder.
Speed against the first shipped default: scripts/bench_vecalign.py.

    python scripts/eval_alignment.py --data ../shared/data [--json metrics/eval_alignment.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from medsimp.alignment import vecalign  # noqa: E402
from medsimp.alignment.crf import CRFAligner  # noqa: E402
from medsimp.alignment.encoders import PairEncoders, make_encoder  # noqa: E402
from medsimp.alignment.gold import Block, read_blocks, read_plaba  # noqa: E402
from medsimp.alignment.score import pair_prf, vecalign_scores  # noqa: E402
from medsimp.alignment.text import content_tokens  # noqa: E402


def _jaccard(doc) -> np.ndarray:
    c = [content_tokens(t) for t in doc.complex]
    s = [content_tokens(t) for t in doc.simple]
    return np.array([[len(a & b) / max(len(a | b), 1) for b in s] for a in c])


def _tfidf_fn(train_docs):
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(lowercase=True).fit([t for d in train_docs for t in d.complex + d.simple])

    def sim(doc):
        return (vec.transform(doc.complex) @ vec.transform(doc.simple).T).toarray()

    return sim


def _threshold_pairs(sim: np.ndarray, t: float) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(sim >= t))}


def _tune(docs, sims) -> float:
    grid = np.round(np.arange(0.02, 0.95, 0.01), 2)
    f1 = [pair_prf([set(d.pairs) for d in docs], [_threshold_pairs(s, t) for s in sims])["f1"] for t in grid]
    return float(grid[int(np.argmax(f1))])


def eval_plaba(path: Path, crf_params: dict, cache: str) -> dict:
    docs = read_plaba(path)
    groups = sorted({d.group for d in docs})
    folds = [set(groups[0::2]), set(groups[1::2])]
    encoder = make_encoder(crf_params.get("encoder", {"kind": "minilm"}), cache)
    pred = {"crf": {}, "crf_forward": {}, "jaccard": {}, "tfidf": {}}
    info = {"documents": len(docs), "gold_pairs": sum(len(d.pairs) for d in docs), "thresholds": {}}
    t_align = 0.0
    for k, test_groups in enumerate(folds):
        train = [d for d in docs if d.group not in test_groups]
        test = [d for d in docs if d.group in test_groups]
        model = CRFAligner.train(train, encoder, crf_params)
        t0 = time.perf_counter()
        for d in test:
            res = model.align(d.complex, d.simple)
            pred["crf"][d.doc_id] = set(res.pairs)
        t_align += time.perf_counter() - t0
        model.config["merge"] = "forward"
        for d in test:
            pred["crf_forward"][d.doc_id] = set(model.align(d.complex, d.simple).pairs)
        for name, fn in (("jaccard", lambda _: _jaccard), ("tfidf", _tfidf_fn)):
            sim = fn(train)
            t = _tune(train, [sim(d) for d in train])
            info["thresholds"][f"{name}_fold{k}"] = t
            for d in test:
                pred[name][d.doc_id] = _threshold_pairs(sim(d), t)
    gold = [set(d.pairs) for d in docs]
    for name, p in pred.items():
        info[name] = pair_prf(gold, [p[d.doc_id] for d in docs])
    info["crf_docs_per_s"] = len(docs) / t_align
    return info


def _halves(src: list[str], tgt: list[str], gold: list[Block]):
    """The file cut in two at the gold block nearest its middle (indices re-based)."""
    cut = next(k for k, (a, b) in enumerate(gold) if a and b and a[0] >= len(src) // 2)
    s0, t0 = gold[cut][0][0], gold[cut][1][0]
    second = [(tuple(i - s0 for i in a), tuple(j - t0 for j in b)) for a, b in gold[cut:]]
    return [(src[:s0], tgt[:t0], gold[:cut]), (src[s0:], tgt[t0:], second)]


def _short_documents(src: list[str], tgt: list[str], gold: list[Block], size: int):
    """The file cut at gold block boundaries into documents of >= `size` source sentences,
    about the length of a plain-language summary (indices re-based)."""
    groups, current = [], []
    for block in gold:
        current.append(block)
        if sum(len(a) for a, _ in current) >= size and block[0] and block[1]:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    docs = []
    for group in groups:
        s0 = min((i for a, _ in group for i in a), default=0)
        s1 = max((i + 1 for a, _ in group for i in a), default=s0)
        t0 = min((j for _, b in group for j in b), default=0)
        t1 = max((j + 1 for _, b in group for j in b), default=t0)
        docs.append(
            (src[s0:s1], tgt[t0:t1], [(tuple(i - s0 for i in a), tuple(j - t0 for j in b)) for a, b in group])
        )
    return docs


PLAIN = {"center": False, "length_weight": 0, "number_weight": 0, "del_percentile_of": "random"}
ANCHOR_GRID = [
    (lw, nw, dp) for lw in (0.0, 0.3, 0.6, 1.0) for nw in (0.0, 0.3, 0.6, 1.0) for dp in (0.05, 0.1, 0.2)
]


def eval_bleualign(folder: Path, encoders: PairEncoders, vec_params: dict) -> dict:
    """Whole file with the params and with plain Vecalign (no centring, no anchors, the published
    deletion knob); the same on the file cut into summary-sized documents; and a 2-fold check
    of the anchor weights and deletion knob: chosen on one half, scored on the other.
    A `preset` (e.g. `--set align.vecalign.preset=medsimp`) is resolved into explicit keys
    first, so the plain and grid variants below override it."""
    vec_params = {**vecalign.resolve(vec_params), "preset": None}
    src = (folder / "dev.de").read_text(encoding="utf-8").splitlines()
    tgt = (folder / "dev.fr").read_text(encoding="utf-8").splitlines()
    gold = read_blocks(folder / "dev.defr")
    encoder = encoders.for_pair("de", "fr")

    def run(s, t, params):
        t0 = time.perf_counter()
        res = vecalign.align(s, t, encoder, src_lang="de", tgt_lang="fr", params=params)
        return res, {"total_s": time.perf_counter() - t0, **res.timing}

    res, first = run(src, tgt, vec_params)
    _, rerun = run(src, tgt, vec_params)
    out = vecalign_scores([gold], [res.blocks])
    plain, _ = run(src, tgt, {**vec_params, **PLAIN})
    out["plain_vecalign"] = vecalign_scores([gold], [plain.blocks])
    for size in (8, 20):
        docs = _short_documents(src, tgt, gold, size)
        for name, params in (("params", vec_params), ("plain_vecalign", {**vec_params, **PLAIN})):
            blocks = [run(s, t, params)[0].blocks for s, t, _ in docs]
            out[f"short_documents_{size}_{name}"] = {
                "documents": len(docs),
                **vecalign_scores([g for _, _, g in docs], blocks),
            }
    halves = _halves(src, tgt, gold)
    f1 = {
        (k, h): vecalign_scores(
            [g],
            [
                run(
                    s,
                    t,
                    {**vec_params, "length_weight": k[0], "number_weight": k[1], "del_percentile_frac": k[2]},
                )[0].blocks
            ],
        )["f1_strict"]
        for k in ANCHOR_GRID
        for h, (s, t, g) in enumerate(halves)
    }
    folds = []
    for h in (0, 1):
        best = max(ANCHOR_GRID, key=lambda k: (f1[k, h], k))
        folds.append(
            {
                "chosen_on_half": h,
                "length_weight": best[0],
                "number_weight": best[1],
                "del_percentile_frac": best[2],
                "f1_strict_chosen_half": f1[best, h],
                "f1_strict_other_half": f1[best, 1 - h],
            }
        )
    mine = (
        float(vec_params["length_weight"]),
        float(vec_params["number_weight"]),
        float(vec_params["del_percentile_frac"]),
    )
    out.update(
        {
            "src_sentences": len(src),
            "tgt_sentences": len(tgt),
            "first_run": first,
            "rerun": rerun,
            "docs_per_s_first": 1 / first["total_s"],
            "cache_hits": encoder.hits,
            "cache_misses": encoder.misses,
            "params": vec_params,
            "encoder": encoder.name,
            "two_fold": folds,
            "two_fold_mean_f1_strict": float(np.mean([f["f1_strict_other_half"] for f in folds])),
            "params_f1_strict_per_half": [f1[mine, h] for h in (0, 1)]
            if mine in {k for k, _ in f1}
            else None,
        }
    )
    return out


def eval_retrieval(path: Path, specs, cache: str) -> dict:
    """MultiCochrane's en-fr PLS sentence pairs (independently written summaries, so loose
    translations): how often each encoder of the list ranks the paired French sentence first
    among all 215 (P@1, both directions)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    en, fr = [d["old_gold"] for d in data], [d["gold"] for d in data]
    out = {"pairs": len(data)}
    for spec in [specs] if isinstance(specs, dict) else specs or [{"kind": "use"}, {"kind": "e5"}]:
        encoder = make_encoder(spec, cache)
        sims = encoder.encode(en, "en") @ encoder.encode(fr, "fr").T
        gold = np.arange(len(data))
        out[encoder.name] = {
            "p_at_1_en_fr": float((sims.argmax(1) == gold).mean()),
            "p_at_1_fr_en": float((sims.argmax(0) == gold).mean()),
        }
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--only", choices=["plaba", "bleualign", "multicochrane"])
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--cache", default=None, help="embedding cache dir (default: a fresh temp dir)")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not data.is_dir():
        print(f"skip: {data} not found", file=sys.stderr)
        return 0
    from medsimp.config import load_params, section

    align = section(load_params(args.params, args.overrides), "align")
    cache = args.cache or tempfile.mkdtemp(prefix="eval-align-cache-")
    results: dict = {"cache": "fresh temp dir" if args.cache is None else args.cache}
    if args.only in (None, "plaba") and (data / "plaba" / "dev.json").exists():
        results["plaba"] = eval_plaba(data / "plaba" / "dev.json", dict(align.get("crf", {})), cache)
    if args.only in (None, "bleualign") and (data / "bleualign" / "dev.defr").exists():
        va = dict(align.get("vecalign", {}))
        encoders = PairEncoders(va.pop("encoder", None), cache)
        results["bleualign_de_fr"] = eval_bleualign(data / "bleualign", encoders, va)
    pairs = data / "multicochrane" / "fr-pairs.json"
    if args.only in (None, "multicochrane") and pairs.exists():
        va = dict(align.get("vecalign", {}))
        results["multicochrane_en_fr_retrieval"] = eval_retrieval(pairs, va.get("encoder"), cache)
    text = json.dumps(results, indent=2, sort_keys=True)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
