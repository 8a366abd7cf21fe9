"""CIDEr-D (Vedantam et al. 2015): pycocoevalcap's `Cider` (nlg-eval's), on whitespace tokens."""

from __future__ import annotations

from collections.abc import Sequence

from medsimp.metrics.base import Metric


class CIDEr(Metric):
    name = "cider"
    scale = "0-10"
    label = "coco-cider-d"
    dist = "pycocoevalcap"
    tokenizer = "nltk-treebank-lc-joined"
    medlane_label = "coco-cider-d"
    medlane_dist = "pycocoevalcap"
    has_sentence = False  # document frequencies make it corpus-level only
    order = 35

    def corpus(self, data, done=None):
        h_join = [" ".join(t) for t in data.hyp_tokens]
        r_join = [[" ".join(t) for t in rs] for rs in data.ref_tokens]
        return {"cider": cider(h_join, r_join)}

    def medlane(self, data, done):
        return {"cider": cider(data.hyps, data.references)}


def cider(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> float:
    """CIDEr-D of whitespace-tokenized sentences, each with its references: pycocoevalcap's
    `Cider().compute_score` (n = 4, sigma = 6; the length in the Gaussian penalty counts bigrams).
    0.0 when no reference has a word (pycocoevalcap fails on an empty document-frequency table)."""
    from pycocoevalcap.cider.cider import Cider

    if len(hyps) != len(refs) or any(not rs for rs in refs):
        raise ValueError("CIDEr needs one hypothesis and at least one reference per sentence")
    if not any(r.split() for rs in refs for r in rs):
        return 0.0
    score, _ = Cider().compute_score(
        {i: list(rs) for i, rs in enumerate(refs)}, {i: [h] for i, h in enumerate(hyps)}
    )
    return float(score)
