#!/usr/bin/env python
"""English CRF aligner designs for real Cochrane reviews (issue 37 item 1), chosen on dev gold.

Each design trains the neural CRF (`alignment.crf.CRFAligner`) from a mix of sources:

- `base` / `base_e5`: params align.gold (the embedded synthetic sample), MiniLM / E5 emissions;
- `self1` / `self2`: self-training on unlabelled real reviews (Devaraj et al.'s validation
  abstracts and summaries, `--data DIR/cochrane/val.*`, split as `medsimp cochrane` splits
  them): the previous model labels each review; a simple sentence is kept when its forward
  decision (a column or NULL) has posterior >= `--tau`, a complex sentence when its reverse
  decision does, and every sentence of a kept pair; the kept sub-document with the confident
  pairs is pseudo-gold, and the CRF is retrained on synthetic + pseudo-gold (`self2`: once more);
- `self1_e5`: `self1` with E5 emissions;
- `selfdoc`: self-training on whole reviews: `base` labels every review of the pool (pairs of
  posterior >= `--doc-min-p`, the rest unaligned) and the CRF is retrained on synthetic + those
  (`selfdoc2`: once more, `selfdoc` labelling);
- `plaba`: PLABA dev alone (the PLABA-trained reference);
- `mix`: synthetic (repeated `--synthetic-repeat` times) + a PLABA subsample
  (`--plaba-docs` documents) + `selfdoc`'s pseudo-gold documents;
- `ft` / `ftdoc` / `ftpool`: the encoder itself fine-tuned (Jiang et al. 2020 fine-tune BERT
  inside their neural CRF), then the CRF trained with its emissions. `finetune_encoder` trains
  the packaged MiniLM as a sentence-transformers bi-encoder, one epoch of
  MultipleNegativesRankingLoss on (simple, complex, in-document unaligned complex) triplets,
  batches holding one pair per document (so no other in-batch candidate is aligned to an
  anchor); `ft` fine-tunes on the synthetic gold + PLABA dev pairs and trains the CRF as
  `base`; `ftdoc` uses `ft`'s encoder and trains the CRF as `selfdoc` (`ft` labels the pool);
  `ftpool` fine-tunes on the synthetic gold + `selfdoc`'s pseudo-gold pairs (no PLABA) and
  trains the CRF as `selfdoc` (the `base` CRF on that encoder labels the pool). Fine-tuned
  encoders are saved in `--models DIR/encoder-<name>` (else a temp dir) and reused from there.
  CPU: torch runs on pinned (non-AVX) kernels here, ~12 s a step of 32 triplets at
  max_seq_length 64, so fine-tuning uses a seeded sample of `--ft-max-pairs` pairs (320: 12 steps).
- recall designs (issue 53 section 6), each on `selfdoc`'s model: `nullprior05` / `nullprior1` /
  `nullprior2` / `nullprior3` decode with a PLS-side deletion prior (the forward CRF's NULL
  emission lowered by 0.5 / 1 / 2 / 3: the product's `align.crf.deletion_prior`); `pairmerge` adds N-1 and 1-N merges scored on the pair as a whole
  (`PairMerge`: an unaligned neighbour joins a predicted pair's block when the joined sentences'
  embedding is closer to the other side, margin `--merge-margin`); `selffill` self-trains as
  `selfdoc` but also labels each PLS sentence its pseudo-labels leave unaligned with its abstract
  sentence of highest forward posterior when that is >= `--fill-min-p` (`fill_documents`).

Development scores (what designs are chosen on): pair P/R/F1 on COCHRANE_DEV, hand-made
alignments of 10 validation reviews drawn at random (seed 37) by the session that wrote this
script (not independent annotators; the indices are below, the text stays in DIR), which
self-training never sees; and on PLABA dev (`DIR/plaba/dev.json`) for the designs that do
not train on it (`plaba` with `--plaba-cv`: 2-fold cross-validation by question). Each design
is also scored on the dev reviews under the decoding variants DECODES (direction merge, minimum
pair posterior), and the best there is its `decode_chosen_on_dev`. `--models DIR` saves every
trained design and loads it on the next run, so the test run scores the very models chosen on dev.
`train_cpu_s` is process CPU time of the design's recipe in that run: designs it builds on that
are already in memory or loaded (e.g. `base` under `self1`) and cached embeddings are not counted.

Test (`--cochrane-test DIR`, Devaraj et al.'s test.source/target): pair P/R/F1 on MultiCochrane's
22 MC-CLEAN English test reviews (`alignment.heldout.cochrane_gold`). They are test data: no
design trains on them (reviews of the unlabelled pool whose DOI or CD number is among them are
dropped) and nothing here is chosen on their scores; score them once, after choosing on dev.

    python scripts/aligner_designs.py --data ../shared/data [--designs base,self1] [--json F]
        [--cochrane-test DIR] [--cache DIR] [--models DIR] [--pool 150]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import medsimp  # noqa: E402, F401  (first: pins CPU-independent kernels, medsimp.numerics)

# isort: split
import numpy as np  # noqa: E402

from alignment import selftrain  # noqa: E402
from alignment.crf import CRFAligner, CRFResult, lattice  # noqa: E402
from alignment.devgold import cochrane_dev, real_reviews  # noqa: E402
from alignment.encoders import make_encoder  # noqa: E402
from alignment.features import pair_features  # noqa: E402
from alignment.gold import DocPair, gold_sources, read_golds, read_plaba  # noqa: E402
from alignment.heldout import cochrane_gold  # noqa: E402
from alignment.score import pair_prf, pairs_to_blocks  # noqa: E402
from medsimp.params_schema import encoder_spec, updated  # noqa: E402
from medsimp.reviews import review_key  # noqa: E402


def pseudo_gold(model: CRFAligner, docs: Sequence[DocPair], tau: float) -> tuple[list[DocPair], dict]:
    """Confident sub-documents: the sentences whose forward (simple) or reverse (complex) CRF
    decision has posterior >= tau, plus both sentences of every confident aligned decision;
    their confident pairs are the gold, re-indexed."""
    stopwords = model.config.stopwords
    out, kept_pairs, kept_c, kept_s, all_c, all_s = [], 0, 0, 0, 0, 0
    for d in docs:
        if not d.complex or not d.simple:
            continue
        f = CRFAligner.featurize(model.encoder, d.complex, d.simple, "en", stopwords)
        fl = lattice(model.forward, f)
        fm, _ = fl.forward_backward()
        rl = lattice(
            model.reverse, np.ascontiguousarray(pair_features(d.complex, d.simple, f[..., 0].T, stopwords))
        )
        rm, _ = rl.forward_backward()
        pairs, keep_c, keep_s = set(), set(), set()
        for s, a in enumerate(fl.viterbi()):
            if fm[s, a] >= tau:
                keep_s.add(s)
                if a:
                    pairs.add((a - 1, s))
        for c, a in enumerate(rl.viterbi()):
            if rm[c, a] >= tau:
                keep_c.add(c)
                if a:
                    pairs.add((c, a - 1))
        keep_c |= {c for c, _ in pairs}
        keep_s |= {s for _, s in pairs}
        all_c, all_s = all_c + len(d.complex), all_s + len(d.simple)
        if len(keep_c) < 2 or len(keep_s) < 2 or not pairs:
            continue
        ci = {c: k for k, c in enumerate(sorted(keep_c))}
        si = {s: k for k, s in enumerate(sorted(keep_s))}
        out.append(
            DocPair(
                d.doc_id,
                [d.complex[c] for c in sorted(keep_c)],
                [d.simple[s] for s in sorted(keep_s)],
                frozenset((ci[c], si[s]) for c, s in pairs),
                d.group,
            )
        )
        kept_pairs, kept_c, kept_s = kept_pairs + len(pairs), kept_c + len(keep_c), kept_s + len(keep_s)
    info = {
        "tau": tau,
        "documents": len(out),
        "of_documents": len(docs),
        "pairs": kept_pairs,
        "complex_kept": kept_c / max(all_c, 1),
        "simple_kept": kept_s / max(all_s, 1),
    }
    return out, info


def pseudo_documents(model: CRFAligner, docs: Sequence[DocPair], min_p: float) -> tuple[list[DocPair], dict]:
    """`selfdoc`'s labelled reviews (`alignment.selftrain.pseudo_documents`, what `align train`
    does with params align.self_training) and their counts."""
    out = selftrain.pseudo_documents(model, [d for d in docs if d.complex and d.simple], min_p)
    return out, {"min_p": min_p, "documents": len(out), "pairs": sum(len(d.pairs) for d in out)}


def score(model: CRFAligner, docs: Sequence[DocPair], merge: str = "union", min_p: float = 0.0) -> dict:
    """Pair P/R/F1 with the given direction merge, pairs below posterior min_p dropped."""
    saved, model.config = model.config, updated(model.config, {"merge": merge})
    try:
        pred = [{k for k, p in model.align(d.complex, d.simple).pairs.items() if p >= min_p} for d in docs]
    finally:
        model.config = saved
    return pair_prf([set(d.pairs) for d in docs], pred)


# Decoding variants scored on the dev reviews: (merge, minimum pair posterior); the first is the default.
DECODES = (("union", 0.0), ("union", 0.5), ("union", 0.8), ("intersection", 0.0), ("intersection", 0.5))


def choose_decode(model: CRFAligner, dev: Sequence[DocPair]) -> tuple[tuple[str, float], dict]:
    """The decoding variant of best dev F1 (ties: the earlier, so the default first) and every score."""
    scores = {f"{m}@{p}": score(model, dev, m, p) for m, p in DECODES}
    best = max(DECODES, key=lambda k: (round(scores[f"{k[0]}@{k[1]}"]["f1"], 6), -DECODES.index(k)))
    return best, scores


def ft_triplets(docs: Sequence[DocPair], seed: int) -> list[tuple[int, str, str, str]]:
    """(document index, simple, complex, negative) for every gold pair: the negative is a complex
    sentence of the same document aligned to no gold pair of that simple sentence (a random one
    of another document when there is none)."""
    rng = random.Random(seed)
    out = []
    for k, d in enumerate(docs):
        for c, s in sorted(d.pairs):
            aligned = {cc for cc, ss in d.pairs if ss == s}
            negs = [i for i in range(len(d.complex)) if i not in aligned]
            if negs:
                neg = d.complex[rng.choice(negs)]
            else:
                other = rng.choice([o for o in docs if o is not d] or [d])
                neg = rng.choice(other.complex)
            out.append((k, d.simple[s], d.complex[c], neg))
    return out


def ft_batches(triplets: list, batch_size: int, seed: int) -> list[list]:
    """Shuffled batches with at most one pair per document (in-batch negatives from other
    documents are then never aligned to an anchor)."""
    rest = list(triplets)
    random.Random(seed).shuffle(rest)
    batches = []
    while rest:
        batch, used, left = [], set(), []
        for t in rest:
            if len(batch) < batch_size and t[0] not in used:
                batch.append(t)
                used.add(t[0])
            else:
                left.append(t)
        batches.append(batch)
        rest = left
    return batches


def finetune_encoder(
    docs: Sequence[DocPair],
    out_dir: Path,
    *,
    epochs: int = 1,
    lr: float = 2e-5,
    batch_size: int = 32,
    max_seq_length: int = 128,
    seed: int = 13,
    threads: int = 1,
    max_pairs: int = 0,
) -> dict:
    """Fine-tune the packaged MiniLM on docs' gold pairs (MultipleNegativesRankingLoss, anchor the
    simple sentence, candidates every complex sentence and in-document hard negative of the
    batch) and save it as a sentence-transformers folder. Returns training info."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from medsimp.numerics import require_pinned
    from medsimp.resources import resolve_model

    require_pinned(torch)
    torch.set_num_threads(threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    t0 = time.process_time()
    model = SentenceTransformer(resolve_model("minilm"), device="cpu")
    model.max_seq_length = max_seq_length
    loss = MultipleNegativesRankingLoss(model)
    triplets = ft_triplets(docs, seed)
    available = len(triplets)
    if max_pairs and available > max_pairs:  # CPU budget: a seeded sample of the pairs
        triplets = random.Random(seed).sample(triplets, max_pairs)
    batches = [b for e in range(epochs) for b in ft_batches(triplets, batch_size, seed + e)]
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, len(batches) // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: min((i + 1) / warmup, max(0.0, (len(batches) - i) / max(1, len(batches) - warmup)))
    )
    model.train()
    losses = []
    for batch in batches:
        feats = [model.preprocess([t[j] for t in batch]) for j in (1, 2, 3)]
        value = loss(feats, None)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(float(value.detach()))
        if len(losses) % 5 == 0:
            print(
                f"  finetune step {len(losses)}/{len(batches)} loss {np.mean(losses[-5:]):.3f} "
                f"cpu {time.process_time() - t0:.0f}s",
                file=sys.stderr,
                flush=True,
            )
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save(str(out_dir))
    k = max(1, len(losses) // 5)
    return {
        "pairs": len(triplets),
        "pairs_available": available,
        "documents": len(docs),
        "steps": len(batches),
        "epochs": epochs,
        "lr": lr,
        "batch_size": batch_size,
        "max_seq_length": max_seq_length,
        "seed": seed,
        "loss_first": float(np.mean(losses[:k])) if losses else None,
        "loss_last": float(np.mean(losses[-k:])) if losses else None,
        "finetune_cpu_s": time.process_time() - t0,
        "folder": str(out_dir),
    }


def plaba_cv(plaba: list[DocPair], train: Callable[[list[DocPair]], CRFAligner]) -> dict:
    """2-fold cross-validation by question on PLABA dev (as scripts/eval_alignment.py's PLABA path)."""
    groups = sorted({d.group for d in plaba})
    gold, pred = [], []
    for test_groups in (set(groups[0::2]), set(groups[1::2])):
        model = train([d for d in plaba if d.group not in test_groups])
        test = [d for d in plaba if d.group in test_groups]
        gold += [set(d.pairs) for d in test]
        pred += [set(model.align(d.complex, d.simple).pairs) for d in test]
    return pair_prf(gold, pred)


def with_null_prior(model: CRFAligner, bias: float) -> CRFAligner:
    """The model decoding with a PLS-side deletion prior (params `align.crf.deletion_prior`)."""
    return CRFAligner(
        model.encoder, updated(model.config, {"deletion_prior": bias}), model.forward, model.reverse
    )


class PairMerge:
    """A model's pairs plus N-1 / 1-N merges scored on the pair as a whole: for each predicted
    pair (c, s), an abstract sentence c+-1 aligned to nothing joins when the embedding of the
    two abstract sentences joined is closer to s than c's alone by more than `margin`, and a PLS
    sentence s+-1 aligned to nothing joins when the two PLS sentences joined are closer to c
    than s alone. A pair added takes the posterior of the pair it extends."""

    def __init__(self, model: CRFAligner, margin: float = 0.0):
        self.model, self.margin = model, margin
        self.added = 0

    @property
    def config(self):
        return self.model.config

    @config.setter
    def config(self, value):
        self.model.config = value

    def align(self, complex_, simple, lang="en") -> CRFResult:
        res = self.model.align(complex_, simple, lang)
        pairs = dict(res.pairs)
        if not pairs:
            return res
        enc = self.model.encoder
        ec, es = enc.encode(list(complex_), lang), enc.encode(list(simple), lang)
        used_c, used_s = {c for c, _ in pairs}, {s for _, s in pairs}
        cand: list[tuple[str, int, int, int, str]] = []  # (side, c, s, neighbour, joined text)
        for (c, s), _ in sorted(pairs.items()):
            for n in (c - 1, c + 1):
                if 0 <= n < len(complex_) and n not in used_c:
                    a, b = sorted((c, n))
                    cand.append(("c", c, s, n, f"{complex_[a]} {complex_[b]}"))
            for n in (s - 1, s + 1):
                if 0 <= n < len(simple) and n not in used_s:
                    a, b = sorted((s, n))
                    cand.append(("s", c, s, n, f"{simple[a]} {simple[b]}"))
        if not cand:
            return res
        joined = enc.encode([t for *_, t in cand], lang)
        for (side, c, s, n, _), e in zip(cand, joined, strict=True):
            alone = float(ec[c] @ es[s])
            whole = float(e @ es[s]) if side == "c" else float(ec[c] @ e)
            key = (n, s) if side == "c" else (c, n)
            if whole > alone + self.margin and key not in pairs:
                pairs[key] = res.pairs[(c, s)]
                self.added += 1
        pairs = dict(sorted(pairs.items()))
        blocks = pairs_to_blocks(pairs, len(complex_), len(simple))
        scores = [
            float(np.mean([pairs[(c, s)] for c in b[0] for s in b[1] if (c, s) in pairs]))
            if b[0] and b[1]
            else 0.0
            for b in blocks
        ]
        return CRFResult(pairs, blocks, scores)


def fill_documents(
    model: CRFAligner, docs: Sequence[DocPair], min_p: float, fill_p: float
) -> tuple[list[DocPair], dict]:
    """`selfdoc`'s labelled reviews plus the pairs they miss: each PLS sentence left unaligned
    by the merged labels (pairs >= min_p) takes the abstract sentence of its highest forward
    posterior when that is >= fill_p."""
    out, added = [], 0
    stopwords = model.config.stopwords
    for d in docs:
        if not d.complex or not d.simple:
            continue
        pairs = {k for k, p in model.align(d.complex, d.simple).pairs.items() if p >= min_p}
        f = CRFAligner.featurize(model.encoder, d.complex, d.simple, "en", stopwords)
        marg, _ = lattice(model.forward, f).forward_backward()
        aligned = {s for _, s in pairs}
        for s in range(len(d.simple)):
            if s not in aligned and marg[s, 1:].max() >= fill_p:
                pairs.add((int(np.argmax(marg[s, 1:])), s))
                added += 1
        out.append(DocPair(d.doc_id, d.complex, d.simple, frozenset(pairs), d.group))
    info = {"min_p": min_p, "fill_p": fill_p, "documents": len(out), "pairs": sum(len(d.pairs) for d in out)}
    return out, {**info, "pairs_added": added}


NULL_PRIORS = {"nullprior05": 0.5, "nullprior1": 1.0, "nullprior2": 2.0, "nullprior3": 3.0}

DESIGNS = (
    "base",
    "base_e5",
    "self1",
    "self2",
    "self1_e5",
    "selfdoc",
    "selfdoc2",
    "plaba",
    "mix",
    "ft",
    "ftdoc",
    "ftpool",
    *NULL_PRIORS,
    "pairmerge",
    "selffill",
)
# designs that decode a trained design's model another way: nothing of their own to save
DECODE_ONLY = {*NULL_PRIORS, "pairmerge"}
# designs whose encoder is fine-tuned: the fine-tuned encoder each uses
FT_ENCODER = {"ft": "ft", "ftdoc": "ft", "ftpool": "ftpool"}
# designs that train (CRF or encoder) on PLABA dev: not scored on it
TRAINS_ON_PLABA = {"plaba", "mix", "ft", "ftdoc"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--params", default=str(Path(__file__).resolve().parents[1] / "params.yaml"))
    ap.add_argument("--designs", default=",".join(DESIGNS), help=f"comma-separated subset of {DESIGNS}")
    ap.add_argument("--tau", type=float, default=0.9, help="posterior a pseudo-gold decision needs")
    ap.add_argument(
        "--doc-min-p",
        type=float,
        default=0.5,
        help="selfdoc: pair posterior kept in the pseudo-gold documents",
    )
    ap.add_argument("--pool", type=int, default=0, help="use only this many unlabelled reviews (0: all)")
    ap.add_argument("--synthetic-repeat", type=int, default=3, help="mix: copies of the synthetic gold")
    ap.add_argument("--plaba-docs", type=int, default=30, help="mix: PLABA documents drawn (seed 13)")
    ap.add_argument("--plaba-cv", action="store_true", help="plaba: also 2-fold CV by question on PLABA dev")
    ap.add_argument("--cochrane-test", default=None, help="Devaraj test.source/target: score the 22 reviews")
    ap.add_argument("--cache", default=None, help="embedding cache dir (default: a fresh temp dir)")
    ap.add_argument(
        "--models",
        default=None,
        help="save each trained design's model in DIR/<design>, and load it from there when present",
    )
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--ft-epochs", type=int, default=1, help="ft*: encoder fine-tuning epochs")
    ap.add_argument("--ft-lr", type=float, default=2e-5, help="ft*: encoder fine-tuning learning rate")
    ap.add_argument("--ft-batch", type=int, default=32, help="ft*: encoder fine-tuning batch size")
    ap.add_argument("--ft-max-len", type=int, default=64, help="ft*: encoder max_seq_length")
    ap.add_argument("--ft-seed", type=int, default=13, help="ft*: fine-tuning seed")
    ap.add_argument(
        "--ft-max-pairs",
        type=int,
        default=320,
        help="ft*: fine-tune on a seeded sample of this many pairs (0: all; CPU: torch's pinned kernels are slow)",
    )
    ap.add_argument("--merge-margin", type=float, default=0.0, help="pairmerge: cosine gain a merge needs")
    ap.add_argument(
        "--fill-min-p", type=float, default=0.25, help="selffill: forward posterior an added pair needs"
    )
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "cochrane" / "val.source").exists():
        print(f"skip: {data}/cochrane/val.source not found", file=sys.stderr)
        return 0
    from medsimp.config import load_params, resolve_path

    align = load_params(args.params, []).align
    cache = args.cache or tempfile.mkdtemp(prefix="aligner-designs-cache-")
    base_gold = read_golds(
        [resolve_path(g, Path(args.params).resolve().parent) for g in gold_sources(align.gold)],
        align.gold_format,
    )
    reviews = real_reviews(data / "cochrane")
    dev = cochrane_dev(reviews)
    test_ids: set[str] = set()
    en_pairs = data / "multicochrane" / "en-test-with-doi.json"
    if en_pairs.exists():  # the 22 test reviews' ids only, to keep them out of the pool
        test_ids = {review_key(r["doi"]) for r in json.loads(en_pairs.read_text(encoding="utf-8"))}
    dev_ids = {d.group for d in dev}
    pool = [d for d in reviews if d.group not in test_ids | dev_ids]
    if args.pool:
        pool = pool[: args.pool]
    plaba = read_plaba(data / "plaba" / "dev.json") if (data / "plaba" / "dev.json").exists() else []
    results: dict = {
        "pool": {"reviews": len(pool), "dropped_test_overlap": sum(d.group in test_ids for d in reviews)},
        "cochrane_dev": {"documents": len(dev), "gold_pairs": sum(len(d.pairs) for d in dev)},
        "designs": {},
    }
    test_docs = None
    if args.cochrane_test and en_pairs.exists():
        test_docs, results["cochrane_test_info"] = cochrane_gold(en_pairs, Path(args.cochrane_test))
    crf = align.crf
    encoders = {"minilm": align.crf.encoder, "e5": encoder_spec({"kind": "e5"})}
    models: dict[str, CRFAligner] = {}
    pseudo: dict[str, list[DocPair]] = {}

    def trainer(enc: str, extra: Callable[[], list[DocPair]] = list):
        encoder = make_encoder(encoders[enc], cache)
        return lambda docs: CRFAligner.train(list(docs) + extra(), encoder, crf)

    def self_train(name: str, prev: CRFAligner, enc: str) -> CRFAligner:
        docs, info = pseudo_gold(prev, pool, args.tau)
        pseudo[name] = docs
        results["designs"].setdefault(name, {})["pseudo_gold"] = info
        return trainer(enc)(base_gold + docs)

    recipes: dict[str, Callable[[], CRFAligner]] = {
        "base": lambda: models.get("base") or trainer("minilm")(base_gold),
        "base_e5": lambda: models.get("base_e5") or trainer("e5")(base_gold),
        "self1": lambda: self_train("self1", models.get("base") or trainer("minilm")(base_gold), "minilm"),
        "self2": lambda: self_train("self2", models.get("self1") or recipes["self1"](), "minilm"),
        "self1_e5": lambda: self_train("self1_e5", models.get("base_e5") or trainer("e5")(base_gold), "e5"),
        "selfdoc": lambda: self_docs("selfdoc", models.get("base") or trainer("minilm")(base_gold)),
        "selfdoc2": lambda: self_docs("selfdoc2", models.get("selfdoc") or recipes["selfdoc"]()),
        "plaba": lambda: trainer("minilm")(plaba),
        "mix": lambda: trainer("minilm")(
            base_gold * args.synthetic_repeat + plaba_sample() + selfdoc_pseudo()
        ),
    }

    def self_docs(name: str, prev: CRFAligner, enc: str = "minilm") -> CRFAligner:
        docs, info = pseudo_documents(prev, pool, args.doc_min_p)
        pseudo[name] = docs
        results["designs"].setdefault(name, {})["pseudo_gold"] = info
        return trainer(enc)(base_gold + docs)

    ft_dir = Path(args.models) if args.models else Path(tempfile.mkdtemp(prefix="aligner-designs-ft-"))
    ft_sources: dict[str, Callable[[], list[DocPair]]] = {
        "ft": lambda: base_gold + plaba,
        "ftpool": lambda: base_gold + selfdoc_pseudo(),
    }

    def ft_encoder(key: str, design: str) -> str:
        """The fine-tuned encoder `key` (trained now, or loaded from its folder), registered in
        `encoders`; its fine-tuning info goes to `design`'s results."""
        if key not in encoders:
            folder = ft_dir / f"encoder-{key}"
            info: dict = {"folder": str(folder)}
            if not (folder / "config_sentence_transformers.json").exists():
                info = finetune_encoder(
                    ft_sources[key](),
                    folder,
                    epochs=args.ft_epochs,
                    lr=args.ft_lr,
                    batch_size=args.ft_batch,
                    max_seq_length=args.ft_max_len,
                    seed=args.ft_seed,
                    threads=crf.threads,
                    max_pairs=args.ft_max_pairs,
                )
            else:
                info["loaded_from"] = str(folder)
            results["designs"].setdefault(design, {})["encoder_finetune"] = info
            print(f"encoder {key}: {json.dumps(info, sort_keys=True)}", file=sys.stderr, flush=True)
            encoders[key] = encoder_spec(
                {**align.crf.encoder.model_dump(), "kind": "st", "model": str(folder)}
            )
        return key

    recipes["ft"] = lambda: trainer(ft_encoder("ft", "ft"))(base_gold)
    recipes["ftdoc"] = lambda: self_docs(
        "ftdoc", models.get("ft") or trainer(ft_encoder("ft", "ftdoc"))(base_gold), "ft"
    )
    recipes["ftpool"] = lambda: self_docs(
        "ftpool", trainer(ft_encoder("ftpool", "ftpool"))(base_gold), "ftpool"
    )

    def selfdoc_model() -> CRFAligner:
        if "selfdoc" not in models:
            saved = Path(args.models, "selfdoc") if args.models else None
            if saved and (saved / "model.pt").exists():
                models["selfdoc"] = CRFAligner.load(saved, make_encoder(encoders["minilm"], cache))
            else:
                models["selfdoc"] = recipes["selfdoc"]()
        return models["selfdoc"]

    def self_fill() -> CRFAligner:
        prev = models.get("base") or trainer("minilm")(base_gold)
        docs, info = fill_documents(prev, pool, args.doc_min_p, args.fill_min_p)
        pseudo["selffill"] = docs
        results["designs"].setdefault("selffill", {})["pseudo_gold"] = info
        return trainer("minilm")(base_gold + docs)

    for key, bias in NULL_PRIORS.items():
        recipes[key] = lambda bias=bias: with_null_prior(selfdoc_model(), bias)
    recipes["pairmerge"] = lambda: PairMerge(selfdoc_model(), args.merge_margin)
    recipes["selffill"] = self_fill

    def plaba_sample() -> list[DocPair]:
        return random.Random(13).sample(plaba, min(args.plaba_docs, len(plaba)))

    def selfdoc_pseudo() -> list[DocPair]:
        if "selfdoc" not in pseudo:
            base = models.get("base") or trainer("minilm")(base_gold)
            pseudo["selfdoc"], info = pseudo_documents(base, pool, args.doc_min_p)
            results["designs"].setdefault("mix", {})["pseudo_gold"] = info
        return pseudo["selfdoc"]

    for name in [d for d in args.designs.split(",") if d]:
        if name not in recipes:
            ap.error(f"unknown design {name!r} ({', '.join(DESIGNS)})")
        out = results["designs"].setdefault(name, {})
        saved = Path(args.models, name) if args.models and name not in DECODE_ONLY else None
        if saved and (saved / "model.pt").exists():
            enc = "e5" if name.endswith("e5") else "minilm"
            if name in FT_ENCODER:
                enc = ft_encoder(FT_ENCODER[name], name)
            models[name] = CRFAligner.load(saved, make_encoder(encoders[enc], cache))
            out["loaded_from"] = str(saved)
        else:
            t0 = time.process_time()
            models[name] = recipes[name]()
            out["train_cpu_s"] = time.process_time() - t0
            if saved:
                models[name].save(saved)
        if isinstance(models[name], PairMerge):
            models[name].added = 0
        out["cochrane_dev"] = score(models[name], dev)
        if isinstance(models[name], PairMerge):
            out["dev_pairs_merged_in"] = models[name].added
        decode, out["cochrane_dev_decodes"] = choose_decode(models[name], dev)
        out["decode_chosen_on_dev"] = f"{decode[0]}@{decode[1]}"
        if plaba and name == "plaba" and args.plaba_cv:
            out["plaba_dev_cv2"] = plaba_cv(plaba, trainer("minilm"))
        elif plaba and name not in TRAINS_ON_PLABA:
            out["plaba_dev"] = score(models[name], plaba)
        elif plaba:
            out["plaba_dev"] = "trains on it"
        if test_docs is not None:
            out["cochrane_test_22"] = score(models[name], test_docs)
            out["cochrane_test_22_dev_decode"] = score(models[name], test_docs, *decode)
        print(name, json.dumps(out, sort_keys=True), file=sys.stderr, flush=True)
    text = json.dumps(results, indent=2, sort_keys=True)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
