"""BERTScore F1 (Zhang et al. 2020): best reference, no idf, no baseline rescaling."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from medsimp.metrics.base import Metric, NotComputable, output_language
from medsimp.numerics import require_pinned


class BERTScore(Metric):
    name = "bertscore"
    keys = ("bertscore_f1",)
    needs = frozenset({"references", "model"})
    label = "bert-score-minilm-l6+noidf+norescale"
    dist = "bert-score"
    tokenizer = "model-wordpiece"
    has_sentence = False  # one model run per corpus
    order = 55

    def corpus(self, data, done=None):
        model = data.options.bertscore_model
        if not model:
            return {"bertscore_f1": None}
        lang = output_language(data)
        if data.options.bertscore_english_only and lang != "en":
            raise NotComputable(
                f"the default BERTScore model (MiniLM) is English and the outputs are {lang}: set "
                "evaluate.bertscore_model to a multilingual model folder to score them"
            )
        return {"bertscore_f1": bertscore_f1(data.hyps, data.references, model)}


def bertscore_f1(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    model_path: str,
    num_layers: int = 6,
    batch_size: int = 32,
) -> float:
    """Mean BERTScore F1 (Zhang et al. 2020), best reference, no idf, no baseline rescaling."""
    import torch

    require_pinned(torch)  # the CPU-independent kernels (oneDNN off even when torch came after medsimp)
    if not hyps:
        return 0.0
    # an empty output (or one with only empty references) scores 0, as bert_score documents
    # ("Empty candidate sentence detected; setting raw BERTscores to 0"); its encoder call for
    # "" fails on transformers 5, so empty texts are not sent to it
    pairs = [(i, h, [r for r in rs if r.strip()]) for i, (h, rs) in enumerate(zip(hyps, refs))]
    scored = [(i, h, rs) for i, h, rs in pairs if h.strip() and rs]
    f1s = [0.0] * len(hyps)
    if scored:
        _, _, f1 = _scorer(model_path, num_layers).score(
            [h for _, h, _ in scored], [rs for _, _, rs in scored], batch_size=batch_size
        )
        if len(scored) == len(hyps):
            return float(f1.mean())
        for (i, _, _), value in zip(scored, f1.tolist()):
            f1s[i] = value
    return float(sum(f1s) / len(f1s))


@functools.lru_cache(maxsize=2)
def _scorer(model_path: str, num_layers: int):
    """bert_score's scorer (tokenizer and model loaded once a process: the evaluate stage scores
    every system with it; `bert_score.score` loaded them again for each). Its `score` runs what
    `bert_score.score` runs, the same numbers. Keyed by the path as given: a model folder
    rewritten in place is not read again by the same process."""
    from bert_score import BERTScorer

    return BERTScorer(model_type=model_path, num_layers=num_layers)
