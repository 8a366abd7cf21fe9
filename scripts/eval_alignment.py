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
Cochrane English, held out by review (`--cochrane-test DIR`, Devaraj et al.'s test.source/target):
MultiCochrane's released English test pairs (22 reviews, by DOI) placed in their documents
(`cochrane_gold`); pair P/R/F1 of the CRF trained on params align.gold, of the DAG's recipe
when params align.self_training is on (that CRF self-trained on Devaraj et al.'s validation
reviews, `DIR/cochrane/val.*`, less the 10 dev reviews and the 22), of
each `--model NAME=DIR` (e.g. the PLABA-trained model of scripts/train_real_aligner.py), of the
CRF trained on align.gold plus the other half of the reviews, and of the Jaccard / TF-IDF
baselines tuned on the other half. Overlap filter on real gold (`--only overlap`): how many
MultiCochrane English test pairs and PLABA dev pairs params `filter` would drop. The filter
rules on the aligner's own output (`--only filter`, with `--cochrane-test`): the CRF (the first
`--model`, else trained on params align.gold) aligns the 22 reviews' documents and PLABA dev,
and each rule (no filter, the paper's overlap, overlap or the aligner's probability) is scored
by kept precision and kept recall against the gold.
Speed against the first shipped default: scripts/bench_vecalign.py.

    python scripts/eval_alignment.py --data ../shared/data [--json metrics/eval_alignment.json]
        [--cochrane-test DIR --model plaba=out/models/crf_aligner_real]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import medsimp  # noqa: E402, F401  (first: pins CPU-independent kernels, medsimp.numerics)

# isort: split
import numpy as np  # noqa: E402

from alignment import vecalign  # noqa: E402
from alignment.crf import CRFAligner  # noqa: E402
from alignment.encoders import PairEncoders, make_encoder  # noqa: E402
from alignment.gold import PLABA_SENTENCES, Block, gold_sources, read_blocks, read_golds, read_plaba  # noqa: E402
from alignment.heldout import BASELINES, cochrane_gold, eval_cochrane, jaccard, threshold_pairs, tune  # noqa: E402
from alignment.score import pair_prf, vecalign_scores  # noqa: E402
from alignment.text import STOPWORD_LISTS  # noqa: E402
from medsimp.params_schema import Crf, Vecalign, updated  # noqa: E402


def eval_plaba(
    path: Path, crf: Crf, cache: str, sentences: str = "spacy", stopwords: str | None = None
) -> dict:
    docs = read_plaba(path, sentences=sentences)
    groups = sorted({d.group for d in docs})
    folds = [set(groups[0::2]), set(groups[1::2])]
    encoder = make_encoder(crf.encoder, cache)
    stopwords = stopwords or crf.stopwords  # e.g. sklearn: the list before issue 30 (alignment.text)
    crf_params = updated(crf, {"stopwords": stopwords})
    jaccard_sw = functools.partial(jaccard, stopwords=stopwords)
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
        model.config = updated(model.config, {"merge": "forward"})
        for d in test:
            pred["crf_forward"][d.doc_id] = set(model.align(d.complex, d.simple).pairs)
        for name, fn in {**BASELINES, "jaccard": lambda _: jaccard_sw}.items():
            sim = fn(train)
            t = tune(train, [sim(d) for d in train])
            info["thresholds"][f"{name}_fold{k}"] = t
            for d in test:
                pred[name][d.doc_id] = threshold_pairs(sim(d), t)
    gold = [set(d.pairs) for d in docs]
    for name, p in pred.items():
        info[name] = pair_prf(gold, [p[d.doc_id] for d in docs])
    info["crf_docs_per_s"] = len(docs) / t_align
    return info


def overlap_drop(pairs: list[tuple[str, str]], threshold: float, comparison: str) -> dict:
    """How many real gold pairs the overlap filter (alignment.overlap, params `filter`) drops."""
    from alignment.overlap import overlap_r, passes

    rs = [overlap_r(c, s, "en") for c, s in pairs]
    dropped = sum(not passes(r, threshold, comparison) for r in rs)
    return {
        "gold_pairs": len(rs),
        "dropped": dropped,
        "dropped_fraction": dropped / max(len(rs), 1),
        "median_r": float(np.median(rs)) if rs else None,
        "threshold": threshold,
        "comparison": comparison,
    }


FILTER_RULES = (  # (name, rule, aligner_min, filter.drop_copies)
    ("none", None, None, "none"),
    ("overlap", "overlap", None, "none"),
    ("overlap_or_aligner@0.5", "overlap_or_aligner", 0.5, "none"),
    ("overlap_or_aligner@0.9", "overlap_or_aligner", 0.9, "none"),
    ("overlap+drop_copies=identical", "overlap", None, "identical"),
    ("overlap+drop_copies=near_copy", "overlap", None, "near_copy"),
)


def eval_filter(
    docs: list, model: CRFAligner, threshold: float, comparison: str, copy_overlap: float = 0.9
) -> dict:
    """Kept precision / recall of each filter rule (FILTER_RULES) on the aligner's blocks:
    a block's sides are joined as the corpus rows join them, scored by `filter_row` like
    `medsimp filter`, and a kept block keeps all its (complex, simple) sentence pairs."""
    from alignment.overlap import filter_row

    blocks = []  # (doc index, pairs of the block, row)
    for k, d in enumerate(docs):
        res = model.align(d.complex, d.simple)
        for (cids, sids), score in zip(res.blocks, res.block_scores):
            if cids and sids:
                row = {
                    "language": "en",
                    "complex_text": " ".join(d.complex[i] for i in cids),
                    "simple_text": " ".join(d.simple[j] for j in sids),
                    "crf_score": score,
                }
                blocks.append((k, {(i, j) for i in cids for j in sids}, row))
    gold = [set(d.pairs) for d in docs]
    out = {}
    for name, rule, aligner_min, drop_copies in FILTER_RULES:
        kept: list[set] = [set() for _ in docs]
        for k, pairs, row in blocks:
            if (
                rule is None
                or filter_row(row, threshold, comparison, aligner_min, drop_copies, copy_overlap)["keep"]
            ):
                kept[k] |= pairs
        out[name] = pair_prf(gold, kept)
    return out


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


def eval_bleualign(folder: Path, encoders: PairEncoders, vec_params: Vecalign) -> dict:
    """Whole file with the params and with plain Vecalign (no centring, no anchors, the published
    deletion knob); the same on the file cut into summary-sized documents; and a 2-fold check
    of the anchor weights and deletion knob: chosen on one half, scored on the other.
    A `preset` (e.g. `--set align.vecalign.preset=medsimp`) is resolved into explicit keys
    first, so the plain and grid variants below override it."""
    vec_params = updated(vecalign.resolve(vec_params), {"preset": None})
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
    plain, _ = run(src, tgt, updated(vec_params, PLAIN))
    out["plain_vecalign"] = vecalign_scores([gold], [plain.blocks])
    for size in (8, 20):
        docs = _short_documents(src, tgt, gold, size)
        for name, params in (("params", vec_params), ("plain_vecalign", updated(vec_params, PLAIN))):
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
                    updated(
                        vec_params,
                        {"length_weight": k[0], "number_weight": k[1], "del_percentile_frac": k[2]},
                    ),
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
        float(vec_params.length_weight),
        float(vec_params.number_weight),
        float(vec_params.del_percentile_frac),
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
            "params": vec_params.model_dump(exclude={"encoder"}),
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
    for spec in specs if isinstance(specs, list) else [specs]:
        encoder = make_encoder(spec, cache)
        sims = encoder.encode(en, "en") @ encoder.encode(fr, "fr").T
        gold = np.arange(len(data))
        out[encoder.name] = {
            "p_at_1_en_fr": float((sims.argmax(1) == gold).mean()),
            "p_at_1_fr_en": float((sims.argmax(0) == gold).mean()),
        }
    return out


def self_training_pool(data: Path, gold: list, max_documents: int):
    """The unlabelled reviews the DAG's recipe self-trains on, here: Devaraj et al.'s validation
    reviews (`DIR/cochrane/val.*`) as `choose_pool` takes them (not the 10 dev reviews nor the
    22 test reviews); None without the files."""
    if not (data / "cochrane" / "val.source").exists():
        return None
    from aligner_designs import real_reviews

    from alignment.selftrain import choose_pool

    return choose_pool(real_reviews(data / "cochrane"), gold, max_documents)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument(
        "--only", choices=["plaba", "bleualign", "multicochrane", "cochrane", "overlap", "filter"]
    )
    ap.add_argument(
        "--cochrane-test",
        default=None,
        help="folder with Devaraj et al.'s test.source/test.target (data-1024, or MultiCochrane's "
        "copy code/anno_viewer/make-alignment-file/test.{source,target}.txt): scores the CRF and the "
        "baselines on the MultiCochrane English test reviews (held out by DOI)",
    )
    ap.add_argument(
        "--model",
        dest="models",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="also score this trained CRF model on the Cochrane documents (repeatable)",
    )
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--cache", default=None, help="embedding cache dir (default: a fresh temp dir)")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument(
        "--plaba-sentences",
        choices=PLABA_SENTENCES,
        default="spacy",
        help="how PLABA's adaptations are split into gold sentences (alignment.gold.plaba_sentences)",
    )
    ap.add_argument(
        "--stopwords",
        choices=STOPWORD_LISTS,
        default=None,
        help="PLABA: stop-word list of the CRF's and Jaccard's content tokens (alignment.text; "
        "default: params align.crf.stopwords)",
    )
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not data.is_dir():
        print(f"skip: {data} not found", file=sys.stderr)
        return 0
    from medsimp.config import load_params, resolve_path

    align = load_params(args.params, args.overrides).align
    cache = args.cache or tempfile.mkdtemp(prefix="eval-align-cache-")
    results: dict = {"cache": "fresh temp dir" if args.cache is None else args.cache}
    if args.only in (None, "plaba") and (data / "plaba" / "dev.json").exists():
        results["plaba"] = eval_plaba(
            data / "plaba" / "dev.json", align.crf, cache, args.plaba_sentences, args.stopwords
        )
    if args.only in (None, "bleualign") and (data / "bleualign" / "dev.defr").exists():
        encoders = PairEncoders(align.vecalign.encoder, cache)
        results["bleualign_de_fr"] = eval_bleualign(data / "bleualign", encoders, align.vecalign)
    en_pairs = data / "multicochrane" / "en-test-with-doi.json"
    if args.only in (None, "overlap"):
        params = load_params(args.params, args.overrides)
        real: dict[str, list[tuple[str, str]]] = {}
        if en_pairs.exists():
            rows = json.loads(en_pairs.read_text(encoding="utf-8"))
            real["multicochrane_en_test"] = [(r["input"], r["gold"]) for r in rows]
        if (data / "plaba" / "dev.json").exists():
            plaba = read_plaba(data / "plaba" / "dev.json", sentences=args.plaba_sentences)
            real["plaba_dev"] = [(d.complex[c], d.simple[s]) for d in plaba for c, s in sorted(d.pairs)]
        results["overlap_filter_on_real_gold"] = {
            name: overlap_drop(p, params.filter.threshold, params.filter.comparison)
            for name, p in real.items()
        }
    if args.only in (None, "cochrane") and en_pairs.exists() and args.cochrane_test:
        docs, info = cochrane_gold(en_pairs, Path(args.cochrane_test))
        base_dir = Path(args.params).resolve().parent
        base = read_golds([resolve_path(g, base_dir) for g in gold_sources(align.gold)], align.gold_format)
        models = dict(m.split("=", 1) for m in args.models)
        recipe: dict = {}
        if align.self_training.enabled:
            pool = self_training_pool(data, base, align.self_training.max_documents)
            if pool is None:
                info["self_training_pool"] = f"skipped: no {data}/cochrane/val.* (the unlabelled reviews)"
            else:
                info["self_training_pool"] = pool.stats()
                recipe = {"self_training": align.self_training, "pool": pool.documents}
        info.update(eval_cochrane(docs, align.crf, cache, base, models, **recipe))
        results["cochrane_en_heldout"] = info
    if args.only in (None, "filter") and en_pairs.exists() and args.cochrane_test:
        params = load_params(args.params, args.overrides)
        docs, _ = cochrane_gold(en_pairs, Path(args.cochrane_test))
        encoder = make_encoder(align.crf.encoder, cache)
        if args.models:
            name, path = args.models[0].split("=", 1)
            model = CRFAligner.load(path, encoder, align.crf.merge)
        else:
            name = "crf_base_gold"
            base_dir = Path(args.params).resolve().parent
            base = read_golds(
                [resolve_path(g, base_dir) for g in gold_sources(align.gold)], align.gold_format
            )
            model = CRFAligner.train(base, encoder, align.crf)
        where = {"cochrane_en_test_22": docs}
        if (data / "plaba" / "dev.json").exists():
            where["plaba_dev"] = read_plaba(data / "plaba" / "dev.json", sentences=args.plaba_sentences)
        results["filter_rules"] = {
            "model": name,
            **{
                k: eval_filter(
                    v, model, params.filter.threshold, params.filter.comparison, params.filter.copy_overlap
                )
                for k, v in where.items()
            },
        }
    pairs = data / "multicochrane" / "fr-pairs.json"
    if args.only in (None, "multicochrane") and pairs.exists():
        results["multicochrane_en_fr_retrieval"] = eval_retrieval(pairs, align.vecalign.encoder, cache)
    text = json.dumps(results, indent=2, sort_keys=True)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
