"""Length and number anchors appended to Vecalign's overlap embeddings.

Vecalign scores a block by the cosine of its two overlap embeddings. We append two unit-norm
feature blocks, weighted by `length_weight` (w_l) and `number_weight` (w_n), to every
(unit-norm) semantic vector e, so that the cosine Vecalign computes becomes

    (e . e' + w_l * len_kernel + w_n * num_cosine) / (1 + w_l + w_n)

when both texts hold digits (without digits on one side, that side's norm lacks the w_n term).

- length: Gaussian bumps over log(characters / the side's length unit), so two texts agree
  when their relative lengths agree (Gale & Church's signal; the unit, characters per sentence
  of the pair, absorbs the languages' different character rates);
- numbers: hashed counts of digit runs (any script's digits read as ASCII), so shared figures
  pull a block together and figures on one side only push it apart. A text without digits
  gets a zero block: two such texts are compared on the other parts alone.

Both are exact for a concatenation of k sentences (its own length and digit runs), which
sentence encoders with bag-like pooling do not see: gluing a short caption or a figure
line to a good 1-1 pair barely moves their embedding, but moves these features.
With both weights 0 nothing is appended.
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


def length_features(lengths: Sequence[float], unit: float, sigma: float) -> np.ndarray:
    """Rows of Gaussian bumps over log(length / unit), unit norm."""
    x = np.log(np.maximum(np.asarray(lengths, dtype=np.float64), 1.0) / max(unit, 1.0))[:, None]
    f = np.exp(-((x - LENGTH_CENTRES[None, :]) ** 2) / (2.0 * sigma**2)) + 1e-12
    return f / np.linalg.norm(f, axis=1, keepdims=True)


def number_features(texts: Sequence[str]) -> np.ndarray:
    """Rows of hashed digit-run counts, unit norm (all zero for a text without digits)."""
    out = np.zeros((len(texts), NUMBER_BUCKETS), dtype=np.float64)
    for i, text in enumerate(texts):
        for run in DIGITS.findall(text):
            out[i, zlib.crc32(ascii_digits(run).encode()) % NUMBER_BUCKETS] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def with_anchors(
    semantic: np.ndarray,
    texts: Sequence[str],
    length_unit: float,
    *,
    length_weight: float,
    number_weight: float,
    length_sigma: float,
) -> np.ndarray:
    """`semantic` rows (unit norm) for `texts`, with the weighted anchor blocks appended."""
    parts = [np.asarray(semantic, dtype=np.float64)]
    if length_weight > 0:
        parts.append(
            np.sqrt(length_weight) * length_features([len(t) for t in texts], length_unit, length_sigma)
        )
    if number_weight > 0:
        parts.append(np.sqrt(number_weight) * number_features(texts))
    return np.hstack(parts).astype(np.float32)
