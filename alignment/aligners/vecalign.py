"""`vecalign`: Vecalign (Thompson & Koehn 2019, `alignment.vecalign`) over the sentence
embeddings of params align.vecalign's encoders, for any language pair they cover."""

from __future__ import annotations

from collections.abc import Sequence

from alignment import vecalign
from alignment.encoders import PairEncoders
from alignment.gold import Block
from medsimp.params_schema import Align, Vecalign


class VecalignAligner:
    def __init__(self, encoders: PairEncoders, params: Vecalign):
        self.encoders, self.params = encoders, params

    def check(self, src_lang: str, tgt_lang: str) -> None:
        self.encoders.for_pair(src_lang, tgt_lang)  # ValueError: no encoder covers the pair

    def align(
        self, src: Sequence[str], tgt: Sequence[str], src_lang: str, tgt_lang: str
    ) -> tuple[list[Block], list[float]]:
        encoder = self.encoders.for_pair(src_lang, tgt_lang)
        res = vecalign.align(
            list(src), list(tgt), encoder, src_lang=src_lang, tgt_lang=tgt_lang, params=self.params
        )
        return res.blocks, res.scores


def load(params: Align, model_dir: str | None, cache: str | None) -> VecalignAligner:
    return VecalignAligner(PairEncoders(params.vecalign.encoder, cache), params.vecalign)
