"""ROUGE-1/2/L F1 (Lin 2004): rouge-score's `RougeScorer`, on a named tokenization.

`tokenizer` option (`ScoringOptions.rouge_tokenizer`: params `evaluate.rouge_tokenizer`, `--rouge-tokenizer`): `nltk` (default:
lowercased NLTK Treebank tokens, punctuation kept, as every other default-mode metric) or
`rouge-score` (rouge-score's own default: lowercase, every non-[a-z0-9] run a separator, no
stemming). The signature names the one used.

rouge-score's `rouge_scorer` imports NLTK at its top (for `nltk.sent_tokenize` of ROUGE-Lsum and
the Porter stemmer of `use_stemmer=True`), which costs about 1.3 s (NLTK's `__init__` imports
scipy, scikit-learn and pandas). Neither path is taken here (tokens given, ROUGE-L not -Lsum, no
stemming), so `rouge_scorer()` imports the module with NLTK deferred: the names it binds
(`nltk`, `porter`) load the real NLTK on first use (issue 57).
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
import types
from collections.abc import Sequence

from medsimp.metrics.base import Inputs, Metric, ScoringOptions, Tokens
from medsimp.metrics.bleu import coco_inputs

TOKENIZERS = ("nltk", "rouge-score")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def rouge_score_tokens(text: str) -> Tokens:
    """rouge-score 0.1.2's default tokenizer (`tokenize.tokenize(text, None)`)."""
    return [t for t in _NON_ALNUM.sub(" ", text.lower()).split() if t]


def _tokens(data: Inputs) -> tuple[list[Tokens], list[list[Tokens]]]:
    choice = data.options.rouge_tokenizer
    if choice == "rouge-score":
        return [rouge_score_tokens(h) for h in data.hyps], [
            [rouge_score_tokens(r) for r in rs] for rs in data.references
        ]
    if choice != "nltk":
        raise ValueError(f"unknown ROUGE tokenizer {choice!r}: {' or '.join(TOKENIZERS)}")
    return data.hyp_tokens, data.ref_tokens


class _Rouge(Metric):
    kind = "rougeL"
    label = "rouge-score-f1"
    dist = "rouge-score"

    def signature_label(self, data=None):
        choice = data.options.rouge_tokenizer if data is not None else ScoringOptions().rouge_tokenizer
        return f"{self.label}+tok-{'nltk-treebank-lc' if choice == 'nltk' else 'rouge-score-default'}"

    def corpus(self, data, done=None):
        hyps, refs = _tokens(data)
        return {self.name: rouge_f1(hyps, refs, self.kind)}


class Rouge1(_Rouge):
    name = "rouge_1"
    kind = "rouge1"
    order = 30


class Rouge2(_Rouge):
    name = "rouge_2"
    kind = "rouge2"
    order = 31


class RougeL(_Rouge):
    name = "rouge_l"
    medlane_label = "coco-rouge-beta1.2"
    medlane_dist = "pycocoevalcap"
    kind = "rougeL"
    order = 32

    def medlane(self, data, done):
        return {"rouge_l": coco_rouge_l(data.hyps, data.references)}


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists: the bit-parallel
    algorithm of Hyyroe (2004) / Crochemore et al. (2001), one big-integer step per token
    of `b` instead of rouge-score's len(a) x len(b) table (the same integer)."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for token in b:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


_SEP = "\x00"  # joins the tokens for rouge-score: a token may hold spaces (`[**known lastname 123**]`)


class _Given:
    """rouge-score's tokenizer interface over tokens already made (joined by `_SEP`)."""

    def tokenize(self, text: str) -> list[str]:
        return text.split(_SEP) if text else []


class _Deferred(types.ModuleType):
    """Stands for the module of its name until an attribute is read: then imports the real one
    (`importlib.import_module`) and answers from it."""

    def __getattr__(self, attr: str):
        if attr.startswith("__"):  # import machinery probing (__path__, __spec__...): not NLTK's API
            raise AttributeError(attr)
        return getattr(importlib.import_module(self.__name__), attr)


_NLTK_NAMES = ("nltk", "nltk.stem", "nltk.stem.porter")  # what rouge_score imports of NLTK


@functools.cache
def rouge_scorer() -> types.ModuleType:
    """rouge-score's `rouge_scorer` module, imported without importing NLTK when NLTK is not
    loaded yet: while it imports, `nltk`, `nltk.stem` and `nltk.stem.porter` are `_Deferred`
    stand-ins (removed right after, so any later `import nltk` is the real one); the names
    rouge-score kept (`rouge_scorer.nltk`, `tokenizers.porter`) load NLTK when first used
    (ROUGE-Lsum's sentence splitting, `use_stemmer=True`)."""
    if "rouge_score.rouge_scorer" in sys.modules or "nltk" in sys.modules:
        return importlib.import_module("rouge_score.rouge_scorer")
    stand_ins = {name: _Deferred(name) for name in _NLTK_NAMES}
    stand_ins["nltk"].stem = stand_ins["nltk.stem"]  # type: ignore[attr-defined]
    stand_ins["nltk.stem"].porter = stand_ins["nltk.stem.porter"]  # type: ignore[attr-defined]
    sys.modules.update(stand_ins)
    try:
        return importlib.import_module("rouge_score.rouge_scorer")
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def rouge_l_fmeasure(target: Tokens, prediction: Tokens) -> float:
    """rouge-score 0.1.2's `_score_lcs(target, prediction).fmeasure`, the same arithmetic on the
    same integer: LCS / len(prediction), LCS / len(target), their F1 (`scoring.fmeasure`); 0 when
    either side is empty. The LCS is `lcs_length`'s instead of rouge-score's len x len table
    (issue 57: 0.4 s of 1,015 lines x 4 references; tests/test_metrics.py checks the F1 equals
    rouge-score's on random and real lines)."""
    if not target or not prediction:
        return 0
    lcs = lcs_length(target, prediction)
    precision = lcs / len(prediction)
    recall = lcs / len(target)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _as_given(tokens: Tokens) -> Tokens:
    """The tokens rouge-score sees through `_Given` (joined by `_SEP`, split again)."""
    text = _SEP.join(tokens)
    return text.split(_SEP) if text else []


def rouge_f1(hyps: Sequence[Tokens], refs: Sequence[Sequence[Tokens]], kind: str = "rougeL") -> float:
    """ROUGE F1 (Lin 2004) of the given tokens: rouge-score's `RougeScorer([kind]).score_multi`
    (the best reference per sentence), averaged over sentences; `kind`: rougeL, rouge1 or rouge2
    (PLABA's ROUGE-1/2). ROUGE-L is `rouge_l_fmeasure` per reference (rouge-score's value, without
    importing it); score_multi's `np.argmax` keeps the first best reference, whose F1 is the max."""
    if kind not in ("rougeL", "rouge1", "rouge2"):
        raise ValueError(f"unknown ROUGE kind {kind!r}: rougeL, rouge1 or rouge2")
    if kind == "rougeL":
        vals = []
        for h, rs in zip(hyps, refs, strict=True):
            prediction = _as_given(h)
            vals.append(max(rouge_l_fmeasure(_as_given(r), prediction) for r in rs))
        return sum(vals) / len(vals) if vals else 0.0
    scorer = rouge_scorer().RougeScorer([kind], tokenizer=_Given())
    vals = [
        scorer.score_multi([_SEP.join(r) for r in rs], _SEP.join(h))[kind].fmeasure
        for h, rs in zip(hyps, refs, strict=True)
    ]
    return sum(vals) / len(vals) if vals else 0.0


def coco_rouge_l(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> float:
    """ROUGE-L as nlg-eval: pycocoevalcap Rouge (LCS F with beta=1.2, best reference), mean."""
    from pycocoevalcap.rouge.rouge import Rouge

    gts, res = coco_inputs(hyps, refs)
    score, _ = Rouge().compute_score(gts, res)
    return float(score)
