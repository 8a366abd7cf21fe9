"""Pairwise emission features for the CRF: bi-encoder cosine plus cheap lexical features.

Rows are the sentences being labelled (the CRF's sequence), columns its candidate states.
All features are computed with sparse/dense matrix products, so a 1000 x 1000 document
costs a few matrix multiplications, not a million Python loops.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse

from alignment.text import content_tokens, numbers
from medsimp.text.multilingual import word_tokens

PAIR_FEATURES = (
    "cosine",
    "jaccard",
    "containment_row",
    "containment_col",
    "length_ratio",
    "shared_numbers",
    "row_has_numbers",
    "relative_position",
)
NULL_FEATURES = ("bias", "max_cosine", "max_containment_row")


def _incidence(sets: Sequence[set[str]], vocab: dict[str, int]) -> sparse.csr_matrix:
    rows, cols = [], []
    for i, s in enumerate(sets):
        for t in s:
            rows.append(i)
            cols.append(vocab.setdefault(t, len(vocab)))
    data = np.ones(len(rows), dtype=np.float32)
    return sparse.csr_matrix((data, (rows, cols)), shape=(len(sets), max(len(vocab), 1)))


def _overlap(a: Sequence[set[str]], b: Sequence[set[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    vocab: dict[str, int] = {}
    ma = _incidence(a, vocab)
    mb = _incidence(b, vocab)
    ma = sparse.csr_matrix((ma.data, ma.indices, ma.indptr), shape=(ma.shape[0], len(vocab) or 1))
    inter = (ma @ mb.T).toarray().astype(np.float32)
    return inter, np.array([len(s) for s in a], np.float32), np.array([len(s) for s in b], np.float32)


def pair_features(
    rows: Sequence[str], cols: Sequence[str], cosine: np.ndarray, stopwords: str = "spacy"
) -> np.ndarray:
    """Float32 array (len(rows), len(cols), len(PAIR_FEATURES)); `stopwords` names the stop-word
    list of the lexical features (`alignment.text.STOPWORD_LISTS`)."""
    n, m = len(rows), len(cols)
    out = np.zeros((n, m, len(PAIR_FEATURES)), dtype=np.float32)
    if n == 0 or m == 0:
        return out
    ra = [content_tokens(t, stopwords) for t in rows]
    ca = [content_tokens(t, stopwords) for t in cols]
    inter, la, lb = _overlap(ra, ca)
    out[..., 0] = cosine
    out[..., 1] = inter / np.maximum(la[:, None] + lb[None, :] - inter, 1.0)
    out[..., 2] = inter / np.maximum(la[:, None], 1.0)
    out[..., 3] = inter / np.maximum(lb[None, :], 1.0)
    lr = np.array([len(word_tokens(t)) for t in rows], np.float32)[:, None]
    lc = np.array([len(word_tokens(t)) for t in cols], np.float32)[None, :]
    out[..., 4] = np.minimum(lr, lc) / np.maximum(np.maximum(lr, lc), 1.0)
    ninter, nr, _ = _overlap([numbers(t) for t in rows], [numbers(t) for t in cols])
    out[..., 5] = ninter / np.maximum(nr[:, None], 1.0)
    out[..., 6] = (nr > 0).astype(np.float32)[:, None]
    pr = np.arange(n, dtype=np.float32)[:, None] / max(n - 1, 1)
    pc = np.arange(m, dtype=np.float32)[None, :] / max(m - 1, 1)
    out[..., 7] = np.abs(pr - pc)
    return out


def null_features(feats: np.ndarray) -> np.ndarray:
    """Float32 array (rows, len(NULL_FEATURES)) for the learned NULL emission."""
    n = feats.shape[0]
    out = np.zeros((n, len(NULL_FEATURES)), dtype=np.float32)
    out[:, 0] = 1.0
    if feats.shape[1]:
        out[:, 1] = feats[..., 0].max(axis=1)
        out[:, 2] = feats[..., 2].max(axis=1)
    return out
