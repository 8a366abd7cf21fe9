"""`crf`: the neural CRF of Jiang et al. 2020 (`alignment.crf`), English complex -> simple;
the model folder `align train` wrote (params align.model, or `--model`)."""

from __future__ import annotations

from collections.abc import Sequence

from alignment.crf import CRFAligner
from alignment.encoders import make_encoder
from alignment.gold import Block
from medsimp.params_schema import Align


class Crf:
    def __init__(self, model: CRFAligner):
        self.model = model

    def check(self, src_lang: str, tgt_lang: str) -> None:
        """Any pair: the encoder embeds both sides (the CRF was trained on English)."""

    def align(
        self, src: Sequence[str], tgt: Sequence[str], src_lang: str, tgt_lang: str
    ) -> tuple[list[Block], list[float]]:
        res = self.model.align(src, tgt, src_lang)
        return res.blocks, res.block_scores


def load(params: Align, model_dir: str | None, cache: str | None) -> Crf:
    encoder = make_encoder(params.crf.encoder, cache)
    return Crf(CRFAligner.load(model_dir or params.model, encoder, params.crf.merge))
