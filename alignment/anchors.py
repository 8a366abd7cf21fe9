"""Length and number anchors appended to Vecalign's overlap embeddings.

Vecalign scores a block by the cosine of its two overlap embeddings. We append two unit-norm
feature blocks, weighted by `length_weight` (w_l) and `number_weight` (w_n), to every
(unit-norm) semantic vector e, so that the cosine Vecalign computes becomes

    (e . e' + w_l * len_kernel + w_n * num_cosine) / (1 + w_l + w_n)

- length: Gaussian bumps over log(characters / mean sentence length of that document side),
  so two texts agree when their relative lengths agree (Gale & Church's signal; the
  per-side mean absorbs the languages' different character rates);
- numbers: hashed counts of digit runs (any script's digits read as ASCII), plus one
  "no number" slot, so shared figures pull a block together and missing ones push it apart.

Both are exact for a concatenation of k sentences (its own length and digit runs), which
sentence encoders with bag-like pooling do not see: gluing a short caption or a figure
line to a good 1-1 pair barely moves their embedding, but moves these features.
With both weights 0 the vectors are returned unchanged (Vecalign as published).
"""
from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Sequence

import numpy as np

DIGITS = re.compile(r"\d+")
NUMBER_BUCKETS = 128
LENGTH_CENTRES = np.arange(-4.0, 4.0 + 1e-9, 0.25)


def ascii_digits(run: str) -> str:
    return "".join(str(unicodedata.digit(c)) for c in run)


def length_features(lengths: Sequence[float], mean: float, sigma: float) -> np.ndarray:
    """Rows of Gaussian bumps over log relative length, unit norm."""
    x = np.log(np.maximum(np.asarray(lengths, dtype=np.float64), 1.0) / max(mean, 1.0))[:, None]
    f = np.exp(-((x - LENGTH_CENTRES[None, :]) ** 2) / (2.0 * sigma ** 2)) + 1e-12
    return f / np.linalg.norm(f, axis=1, keepdims=True)


def number_features(texts: Sequence[str]) -> np.ndarray:
    """Rows of hashed digit-run counts (+ a "no number" slot), unit norm."""
    out = np.zeros((len(texts), NUMBER_BUCKETS + 1), dtype=np.float64)
    for i, text in enumerate(texts):
        runs = DIGITS.findall(text)
        if not runs:
            out[i, NUMBER_BUCKETS] = 1.0
        for run in runs:
            out[i, zlib.crc32(ascii_digits(run).encode()) % NUMBER_BUCKETS] += 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def with_anchors(semantic: np.ndarray, texts: Sequence[str], mean_length: float, *,
                 length_weight: float, number_weight: float, length_sigma: float) -> np.ndarray:
    """`semantic` rows (unit norm) for `texts`, with the weighted anchor blocks appended."""
    parts = [np.asarray(semantic, dtype=np.float64)]
    if length_weight > 0:
        parts.append(np.sqrt(length_weight) * length_features([len(t) for t in texts], mean_length, length_sigma))
    if number_weight > 0:
        parts.append(np.sqrt(number_weight) * number_features(texts))
    return np.hstack(parts).astype(np.float32)
