"""One Cochrane document -> aligned pair rows (docs/architecture.md "Aligned pairs").

English abstract -> English PLS with the CRF; English PLS -> PLS in language X with
Vecalign; the two are chained through the English PLS sentences ("pivots") into
(complex English, simple X) pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from alignment import vecalign
from alignment.crf import CRFAligner
from alignment.encoders import PairEncoders
from medsimp.params_schema import Vecalign


class DocumentError(ValueError):
    """A document that cannot be aligned; `reason` is a short code, the message is safe to log."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def _side(rows: Sequence[Mapping], side: str, lang: str | None = None) -> list[Mapping]:
    got = [r for r in rows if r["side"] == side and (lang is None or r["language"] == lang)]
    return sorted(got, key=lambda r: int(r["sentence_index"]))


def english_sides(rows: Sequence[Mapping]) -> tuple[list[str], list[str]]:
    """The English complex (abstract) and simple (PLS) sentences of one document's rows, in
    order: what the CRF aligns in `align_document`."""
    return [r["text"] for r in _side(rows, "complex", "en")], [r["text"] for r in _side(rows, "simple", "en")]


def _row(
    doi: str,
    lang: str,
    n: int,
    complex_rows,
    simple_rows,
    pivot_rows,
    method: str,
    crf_score: float,
    vec_score: float | None,
) -> dict[str, Any]:
    def ids(rs):
        return [r["sentence_id"] for r in rs]

    def text(rs):
        return " ".join(r["text"] for r in rs)

    return {
        "pair_id": f"{doi}:{lang}:{n}",
        "doi": doi,
        "language": lang,
        "complex_ids": ids(complex_rows),
        "simple_ids": ids(simple_rows),
        "pivot_ids": ids(pivot_rows),
        "complex_text": text(complex_rows),
        "simple_text": text(simple_rows),
        "pivot_text": text(pivot_rows),
        "section": complex_rows[0].get("section", "") or "",
        "method": method,
        "crf_score": float(crf_score),
        "vecalign_score": None if vec_score is None else float(vec_score),
    }


def align_document(
    doi: str, rows: Sequence[Mapping], crf: CRFAligner, encoders: PairEncoders, vec_params: Vecalign
) -> list[dict[str, Any]]:
    """All pair rows of one document (English first, then each language in code order)."""
    complex_rows = _side(rows, "complex", "en")
    pls_en = _side(rows, "simple", "en")
    if not complex_rows:
        raise DocumentError("no_english_complex", "no English complex (abstract) sentences")
    if not pls_en:
        raise DocumentError("no_english_simple", "no English simple (PLS) sentences")
    res = crf.align([r["text"] for r in complex_rows], [r["text"] for r in pls_en], "en")
    en_blocks = [(b, s) for b, s in zip(res.blocks, res.block_scores) if b[0] and b[1]]
    out = [
        _row(doi, "en", n, [complex_rows[i] for i in b[0]], [pls_en[j] for j in b[1]], [], "crf", s, None)
        for n, (b, s) in enumerate(en_blocks)
    ]
    pivot_to_block = {j: k for k, (b, _) in enumerate(en_blocks) for j in b[1]}
    for lang in sorted({r["language"] for r in rows if r["side"] == "simple"} - {"en"}):
        pls_x = _side(rows, "simple", lang)
        try:
            encoder = encoders.for_pair("en", lang)
        except ValueError as exc:
            raise DocumentError("no_encoder_for_language", str(exc)) from exc
        va = vecalign.align(
            [r["text"] for r in pls_en],
            [r["text"] for r in pls_x],
            encoder,
            src_lang="en",
            tgt_lang=lang,
            params=vec_params,
        )
        n = 0
        for (src, tgt), cost in zip(va.blocks, va.scores):
            linked = sorted({pivot_to_block[j] for j in src if j in pivot_to_block})
            if not src or not tgt or not linked:
                continue
            cids = sorted({i for k in linked for i in en_blocks[k][0][0]})
            crf_score = float(np.mean([en_blocks[k][1] for k in linked]))
            out.append(
                _row(
                    doi,
                    lang,
                    n,
                    [complex_rows[i] for i in cids],
                    [pls_x[j] for j in tgt],
                    [pls_en[j] for j in src],
                    "crf+vecalign",
                    crf_score,
                    cost,
                )
            )
            n += 1
    return out
