"""Vecalign (Thompson & Koehn 2019) over our encoders: overlap embeddings + Thompson's DP.

The DP, normalisation and deletion penalty are Thompson's code as packaged by `sentalign`
(`sentalign.dp_utils.vecalign`); this module builds the overlap embeddings itself so that
only the overlap levels the alignment types need are embedded (`alignment_max_size - 1`;
sentalign's wrapper embeds one more), each level is one cached encoder call,
and the embedding time is measured apart from the DP time.

`overlap_mode`: `encode` embeds each concatenation of k consecutive sentences, as the
paper does; `mean` approximates it by the length-weighted mean of the sentence vectors
(it embeds each sentence once).

`center` removes each side's mean vector; `length_weight` / `number_weight` append length and
number anchors to every overlap embedding (`alignment.anchors`); `del_percentile_of` says how
the deletion knob is read. `center: false`, both weights 0 and `del_percentile_of: random` is
Vecalign exactly as published.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sentalign.dp_utils import layer, make_alignment_types, preprocess_line, vecalign

from alignment.anchors import with_anchors
from alignment.encoders import Encoder
from alignment.gold import Block
from medsimp.numerics import require_blas_pinned
from medsimp.params_schema import Vecalign, updated

# Thompson & Koehn (2019) as published (vecalign.py's defaults: --alignment_max_size 4,
# --del_percentile_frac 0.2, deletion penalty over random pairs, plain sentence embeddings):
# the defaults of params `align.vecalign` (medsimp.params_schema.Vecalign).
_GLOBAL_RNG = threading.Lock()  # random and np.random: one seeded alignment at a time per process
# Named option sets. `medsimp` is our improvement (docs/alignment.md: strict F1 0.872 vs
# 0.797 plain Vecalign with USE on the Bleualign dev file); a preset sets these keys over
# whatever else params give.
PRESETS: dict[str, dict[str, Any]] = {
    "published": {
        "alignment_max_size": 4,
        "del_percentile_frac": 0.2,
        "del_percentile_of": "random",
        "center": False,
        "length_weight": 0.0,
        "number_weight": 0.0,
    },
    "medsimp": {
        "alignment_max_size": 5,
        "del_percentile_frac": 0.1,
        "del_percentile_of": "unmatched",
        "center": True,
        "length_weight": 0.6,
        "number_weight": 0.3,
    },
}


def resolve(params: Vecalign | None) -> Vecalign:
    """The given params (none: the schema's defaults) with the named `preset`'s keys set over
    them (if any)."""
    p = params or Vecalign()
    return updated(p, PRESETS[p.preset]) if p.preset else p


@dataclass
class VecalignResult:
    blocks: list[Block]
    scores: list[float]  # Vecalign cost of each block (lower is better; 0 for empty blocks)
    timing: dict[str, float] = field(default_factory=dict)


def side_vectors(clean: Sequence[str], semantic: np.ndarray, p: Vecalign, length_unit: float) -> np.ndarray:
    """One side's overlap vectors as the DP gets them: centred when `center` (its level-1 mean
    removed from every level; Libovický et al. 2020: the mean carries language, not meaning),
    then with the length/number anchors of `alignment.anchors` appended. Sides of fewer than
    three sentences are not centred."""
    if p.center and len(clean) >= 3:  # a side of 1-2 sentences is mostly its own mean
        semantic = semantic - semantic[0].mean(axis=0)[None, None, :]
        semantic = semantic / (np.linalg.norm(semantic, axis=2, keepdims=True) + 1e-8)
    if p.length_weight <= 0 and p.number_weight <= 0:
        return np.ascontiguousarray(semantic, dtype=np.float32)
    layers = [
        with_anchors(
            semantic[k - 1],
            layer(clean, k),
            length_unit,
            length_weight=float(p.length_weight),
            number_weight=float(p.number_weight),
            length_sigma=float(p.length_sigma),
        )
        for k in range(1, semantic.shape[0] + 1)
    ]
    return np.ascontiguousarray(np.stack(layers), dtype=np.float32)


def length_units(clean_src: Sequence[str], clean_tgt: Sequence[str]) -> tuple[float, float]:
    """Each side's characters per sentence of the pair: its total length over the mean sentence
    count of both sides, so that relative lengths are comparable across the two languages
    (Gale & Church's character ratio) and unaffected by how many short lines one side adds."""
    n = (len(clean_src) + len(clean_tgt)) / 2.0
    return sum(len(s) for s in clean_src) / n, sum(len(s) for s in clean_tgt) / n


def overlap_embeddings(
    clean: Sequence[str], levels: int, encoder: Encoder, lang: str | None, mode: str
) -> np.ndarray:
    """Array (levels, n, dim): row [k-1, i] embeds sentences i-k+1..i (front-padded).
    `clean`: sentences through Vecalign's `preprocess_line` (as for the functions above)."""
    clean = list(clean)
    n = len(clean)
    if mode == "encode":
        layers = [encoder.encode([t[:10000] for t in layer(clean, k)], lang) for k in range(1, levels + 1)]
        return np.ascontiguousarray(np.stack(layers), dtype=np.float32)
    if mode != "mean":
        raise ValueError(f"overlap_mode must be 'encode' or 'mean', got {mode!r}")
    base = np.asarray(encoder.encode(clean, lang), dtype=np.float32)
    weights = np.array([max(len(s.split()), 1) for s in clean], dtype=np.float32)[:, None]
    out = np.empty((levels, n, base.shape[1]), dtype=np.float32)
    pad = np.asarray(encoder.encode(["PAD"], lang), dtype=np.float32)[0]
    weighted = base * weights
    csum = np.vstack([np.zeros((1, base.shape[1]), np.float32), np.cumsum(weighted, axis=0)])
    for k in range(1, levels + 1):
        for i in range(n):
            out[k - 1, i] = pad if i < k - 1 else csum[i + 1] - csum[i + 1 - k]
    return out


def deletion_percentile(p: Vecalign, n: int, m: int) -> float:
    """Vecalign's knob: the deletion penalty is this percentile of the costs of random pairs.
    `del_percentile_of: random` passes it as published. `unmatched` (default) reads it as a
    percentile of the costs of unmatched pairs: about 1 random pair in max(n, m) is a true
    match and costs less than any unmatched one, so the knob becomes 1/k + frac * (1 - 1/k),
    k = max(n, m). This matters only for short documents (3 x 3: 0.4 instead of 0.1; 468 x 554:
    0.1016), where otherwise the matches themselves set the penalty."""
    frac = float(p.del_percentile_frac)
    if p.del_percentile_of == "random":
        return frac
    share = 1.0 / max(n, m, 1)
    return share + frac * (1.0 - share)


def align(
    src: Sequence[str],
    tgt: Sequence[str],
    encoder: Encoder,
    *,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    params: Vecalign | None = None,
) -> VecalignResult:
    """Align two sentence lists; blocks are `(src indices, tgt indices)` in document order."""
    require_blas_pinned()  # the overlap embeddings' cosines go through numpy's BLAS
    p = resolve(params)
    if not src or not tgt:
        blocks: list[tuple[tuple[int, ...], tuple[int, ...]]] = [((i,), ()) for i in range(len(src))] + [
            ((), (j,)) for j in range(len(tgt))
        ]
        return VecalignResult(blocks, [0.0] * len(blocks), {"embed_s": 0.0, "dp_s": 0.0})
    max_size = max(p.alignment_max_size, 2)
    types = make_alignment_types(max_size)
    levels = max(max(x, y) for x, y in types)
    t0 = time.perf_counter()
    clean0, clean1 = [preprocess_line(s) for s in src], [preprocess_line(s) for s in tgt]
    unit0, unit1 = length_units(clean0, clean1)
    v0 = side_vectors(clean0, overlap_embeddings(clean0, levels, encoder, src_lang, p.overlap_mode), p, unit0)
    v1 = side_vectors(clean1, overlap_embeddings(clean1, levels, encoder, tgt_lang, p.overlap_mode), p, unit1)
    t1 = time.perf_counter()
    # sentalign samples with the global RNGs (np.random.choice): seeded here, and held by one
    # thread at a time, or two documents aligned at once in one worker (Beam runs bundles on
    # several threads) draw from each other's sequence and the scores move with the timing.
    with _GLOBAL_RNG, np.errstate(invalid="ignore"):  # sentalign casts an uninitialised np.empty to int
        random.seed(p.seed)
        np.random.seed(p.seed)
        stack = vecalign(
            vecs0=v0,
            vecs1=v1,
            final_alignment_types=types,
            del_percentile_frac=deletion_percentile(p, len(src), len(tgt)),
            width_over2=math.ceil(max_size / 2.0) + p.search_buffer_size,
            max_size_full_dp=p.max_size_full_dp,
            costs_sample_size=p.costs_sample_size,
            num_samps_for_norm=p.num_samps_for_norm,
        )
    t2 = time.perf_counter()
    blocks = [(tuple(int(i) for i in a), tuple(int(j) for j in b)) for a, b in stack[0]["final_alignments"]]
    scores = [float(s) for s in stack[0]["alignment_scores"]]
    return VecalignResult(blocks, scores, {"embed_s": t1 - t0, "dp_s": t2 - t1})
