"""CIDEr-D (Vedantam et al. 2015) as pycocoevalcap 1.2 / nlg-eval compute it, on whitespace tokens."""

from __future__ import annotations

import math
from collections.abc import Sequence

from medsimp.metrics.base import Metric


class CIDEr(Metric):
    name = "cider"
    scale = "0-10"
    label = "medsimp-cider-d=pycocoevalcap-1.2"
    tokenizer = "nltk-treebank-lc-joined"
    has_sentence = False  # document frequencies make it corpus-level only
    order = 35

    def corpus(self, data, done=None):
        h_join = [" ".join(t) for t in data.hyp_tokens]
        r_join = [[" ".join(t) for t in rs] for rs in data.ref_tokens]
        return {"cider": cider(h_join, r_join)}


def cider(hyps: Sequence[str], refs: Sequence[Sequence[str]], n: int = 4, sigma: float = 6.0) -> float:
    """CIDEr-D (Vedantam et al. 2015) as pycocoevalcap 1.2's `Cider` / nlg-eval compute it on
    whitespace tokens, with its arithmetic in its order (the same float), faster: the idf
    logarithm once per document frequency, no numpy per n-gram. As there, the length in the
    Gaussian penalty counts bigrams. tests/test_metrics.py checks it equals pycocoevalcap's."""
    import numpy as np

    if not any(r.split() for rs in refs for r in rs):
        return 0.0  # no reference n-gram: pycocoevalcap fails on max() of an empty df table
    if len(hyps) != len(refs) or any(not rs for rs in refs):
        raise ValueError("CIDEr needs one hypothesis and at least one reference per sentence")

    def precook(text: str) -> dict[tuple[str, ...], int]:
        words = text.strip().split()
        counts: dict[tuple[str, ...], int] = {}
        for k in range(1, n + 1):
            for gram in zip(*(words[i:] for i in range(k))):
                counts[gram] = counts.get(gram, 0) + 1
        return counts

    crefs = [[precook(r) for r in rs] for rs in refs]
    ctest = [precook(h) for h in hyps]
    document_frequency: dict[tuple[str, ...], float] = {}
    for cref in crefs:
        for gram in {g for ref in cref for g in ref}:
            document_frequency[gram] = document_frequency.get(gram, 0.0) + 1.0
    if len(ctest) < max(document_frequency.values()):
        raise ValueError("CIDEr: a document frequency above the number of sentences")
    ref_len = float(np.log(float(len(crefs))))
    idf: dict[float, float] = {}  # document frequency -> ref_len - log(max(1, df))

    def counts2vec(cnts: dict[tuple[str, ...], int]) -> tuple[list[dict], list[float], int]:
        vec: list[dict[tuple[str, ...], float]] = [{} for _ in range(n)]
        norm = [0.0] * n
        length = 0
        for gram, term_freq in cnts.items():
            df = document_frequency.get(gram, 0.0)
            weight = idf.get(df)
            if weight is None:
                weight = idf[df] = ref_len - float(np.log(max(1.0, df)))
            k = len(gram) - 1
            value = float(term_freq) * weight
            vec[k][gram] = value
            norm[k] += pow(value, 2)
            if k == 1:
                length += term_freq
        return vec, [math.sqrt(x) for x in norm], length

    penalty: dict[float, float] = {}  # length difference -> Gaussian penalty

    def sim(
        vec_hyp: list[dict], vec_ref: list[dict], norm_hyp: list[float], norm_ref: list[float], delta: float
    ) -> list[float]:
        factor = penalty.get(delta)
        if factor is None:
            factor = penalty[delta] = np.e ** (-(delta**2) / (2 * sigma**2))
        val = [0.0] * n
        for k in range(n):
            ref_k = vec_ref[k]
            for gram, value in vec_hyp[k].items():
                other = ref_k.get(gram)
                if other is not None:
                    val[k] += min(value, other) * other
            if norm_hyp[k] != 0 and norm_ref[k] != 0:
                val[k] /= norm_hyp[k] * norm_ref[k]
            val[k] *= factor
        return val

    scores = []
    for test, cref in zip(ctest, crefs):
        vec, norm, length = counts2vec(test)
        score = [0.0] * n
        for ref in cref:
            vec_ref, norm_ref, length_ref = counts2vec(ref)
            for k, v in enumerate(sim(vec, vec_ref, norm, norm_ref, float(length - length_ref))):
                score[k] += v
        score_avg = np.mean(np.array(score))
        score_avg /= len(cref)
        score_avg *= 10.0
        scores.append(score_avg)
    return float(np.mean(np.array(scores)))
