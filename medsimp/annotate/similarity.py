"""Similarity matrices (complex rows x simple columns) the page ranks simple sentences by:
lexical overlap r (MultiCochrane's filter measure), the encoder cosine and the CRF's
posterior probability (English documents; the larger of its two directions, as `align`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from alignment.encoders import PairEncoders, make_encoder
from medsimp.params_schema import Align
from medsimp.text.lemmas import lemma_set

MEASURES = ("overlap", "cosine", "crf")


def overlap_matrix(complex_: Sequence[str], simple: Sequence[str], language: str) -> np.ndarray:
    """r = |Lc ∩ Ls| / |Ls| for every (complex, simple) pair (simple lemmas in `language`)."""
    lc = [lemma_set(t, "en") for t in complex_]
    ls = [lemma_set(t, language) for t in simple]
    out = np.zeros((len(lc), len(ls)))
    for j, s in enumerate(ls):
        if s:
            out[:, j] = [len(c & s) / len(s) for c in lc]
    return out


def cosine_matrix(encoder, complex_: Sequence[str], simple: Sequence[str], language: str) -> np.ndarray:
    if not complex_ or not simple:
        return np.zeros((len(complex_), len(simple)))
    return np.asarray(
        encoder.encode(list(complex_), "en") @ encoder.encode(list(simple), language).T, dtype=np.float64
    )


def crf_matrix(model, complex_: Sequence[str], simple: Sequence[str]) -> np.ndarray:
    """max(forward, reverse) posterior marginal of each pair under a trained `CRFAligner`."""
    from alignment.crf import lattice
    from alignment.features import pair_features

    if not complex_ or not simple:
        return np.zeros((len(complex_), len(simple)))
    stopwords = model.config.stopwords  # the list the model was trained with
    f = model.featurize(model.encoder, complex_, simple, stopwords=stopwords)
    fwd, _ = lattice(model.forward, f).forward_backward()
    rev, _ = lattice(
        model.reverse, np.ascontiguousarray(pair_features(complex_, simple, f[..., 0].T, stopwords))
    ).forward_backward()
    return np.maximum(fwd[:, 1:].T, rev[:, 1:])


class Scorer:
    """Adds `sim: {measure: rows}` to documents, loading each model once."""

    def __init__(
        self,
        measures: Sequence[str],
        align_params: Align,
        cache: str | None = None,
        model_dir: str | None = None,
    ):
        unknown = sorted(set(measures) - set(MEASURES))
        if unknown:
            raise ValueError(
                f"annotate.similarities: unknown measure {unknown[0]!r} (use {', '.join(MEASURES)})"
            )
        self.measures = list(measures)
        self.params = align_params
        self.cache, self.model_dir = cache, model_dir
        self._encoders: tuple[Any, Any] | None = None
        self._crf: Any = None

    def _encoder(self, language: str):
        if self._encoders is None:
            crf, vec = self.params.crf.encoder, self.params.vecalign.encoder
            self._encoders = (make_encoder(crf, self.cache), PairEncoders(vec, self.cache))
        return self._encoders[0] if language == "en" else self._encoders[1].for_pair("en", language)

    def _model(self):
        from alignment.crf import CRFAligner

        if self._crf is None:
            path = self.model_dir or self.params.model
            self._crf = CRFAligner.load(path, self._encoder("en"))
        return self._crf

    def add(self, doc: dict) -> dict:
        c, s, lang = doc["complex"], doc["simple"], doc["language"]
        sim = {}
        for m in self.measures:
            if m == "overlap":
                mat = overlap_matrix(c, s, lang)
            elif m == "cosine":
                mat = cosine_matrix(self._encoder(lang), c, s, lang)
            elif lang == "en":
                mat = crf_matrix(self._model(), c, s)
            else:
                continue  # the CRF aligns English to English only
            sim[m] = [[round(float(v), 4) for v in row] for row in mat]
        return {**doc, "sim": sim}
