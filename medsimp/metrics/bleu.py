"""BLEU: sacrebleu's corpus BLEU (`bleu`) and MedLane's mean of BLEU-1..4 (`medlane_bleu`).

`bleu` is what a sacrebleu user reads: `sacrebleu.metrics.BLEU()` (13a tokens, mixed case,
exponential smoothing for sentence scores, 0-100) on the raw outputs and the references with
`abbr[full]` expanded, with sacrebleu's own signature. `medlane_bleu` is Luo et al. (2022)'s
BLEU, the mean of cumulative corpus BLEU-1..4 (0-1, no smoothing) on lowercased NLTK tokens;
AScore and the DECLARE evaluate stage use it. `coco_bleu_n` is nlg-eval's BLEU-1..4 (MedLane
compat mode).
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
from collections.abc import Sequence

import numpy as np

from medsimp.metrics.base import Inputs, Metric, Tokens, ngram_codes, ngrams


@functools.cache
def sacrebleu_bleu(effective_order: bool = False):
    """sacrebleu's `BLEU()` (one instance per setting: its tokenizer's cache is kept), its 13a
    tokenizer's regex rules applied by `padding_rules` (the same tokens, twice as fast)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    bleu = BLEU(effective_order=effective_order)
    if type(bleu.tokenizer) is Tokenizer13a:
        bleu.tokenizer._post_tokenizer = padding_rules(bleu.tokenizer._post_tokenizer)
    return bleu


# sacrebleu 2.x's 13a rules after the entity replacements (`TokenizerRegexp._re`)
_RULES_13A = [
    (r"([\{-\~\[-\` -\&\(-\+\:-\@\/])", r" \1 "),  # pad these characters
    (r"([^0-9])([\.,])", r"\1 \2 "),  # period and comma unless preceded by a digit
    (r"([\.,])([^0-9])", r" \1 \2"),  # period and comma unless followed by a digit
    (r"([0-9])(-)", r"\1 \2 "),  # dash preceded by a digit
]
_PAD = {".": " . ", ",": " , "}.__getitem__


def padding_rules(stock):
    """sacrebleu's `TokenizerRegexp` (13a's rules after the entity replacements), each rule's
    `re.sub` done as `re.split` on the same pattern (the same matches, with the groups between
    the pieces) and the pieces joined with the replacement's spaces: Python 3.11 expands a
    group template in Python once per match (every space and punctuation mark), which made
    tokenizing most of sacrebleu's time. The stock tokenizer is returned when its rules are not
    the ones this was written for (another sacrebleu). tests/test_metrics.py checks the tokens
    equal sacrebleu's on random lines."""
    rules = getattr(stock, "_re", None)
    if (
        rules is None
        or [(p.pattern, r) for p, r in rules] != _RULES_13A
        or any(p.flags != 32 for p, _ in rules)
    ):
        return stock  # 32: re.UNICODE, a str pattern's default
    pad, before, after, dash = (p for p, _ in rules)

    @functools.lru_cache(maxsize=2**16)
    def tokenize(line: str) -> str:
        line = " ".join(pad.split(line))  # [text, char, text, ...]: " char " between the texts
        parts = before.split(line)  # [text, x, p, text, ...] -> x " p "
        if len(parts) > 1:
            parts[2::3] = map(_PAD, parts[2::3])
            line = "".join(parts)
        parts = after.split(line)  # [text, p, y, text, ...] -> " p " y
        if len(parts) > 1:
            parts[1::3] = map(_PAD, parts[1::3])
            line = "".join(parts)
        parts = dash.split(line)  # [text, digit, "-", text, ...] -> digit " - "
        if len(parts) > 1:
            parts[2::3] = [" - "] * (len(parts) // 3)
            line = "".join(parts)
        return " ".join(line.split())

    return tokenize


def _ref_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """sacrebleu's reference streams; a sentence with fewer references is padded with None."""
    width = max((len(rs) for rs in references), default=0)
    return [[rs[k] if k < len(rs) else None for rs in references] for k in range(width)]


class SacreBLEU(Metric):
    name = "bleu"
    scale = "0-100"
    label = "sacrebleu-bleu"
    dist = "sacrebleu"
    tokenizer = "13a"
    order = 10

    def signature_label(self, data: Inputs | None = None) -> str:
        """sacrebleu's signature inside brackets (its `|` as `,`, the version after `@`)."""
        sig = sacrebleu_signature(data).rsplit("|version:", 1)[0]
        return f"sacrebleu-bleu[{sig.replace('|', ',')}]"

    def corpus(self, data, done=None):
        stats = sacrebleu_stats(data.hyps, data.references)
        if stats is None:  # a sentence without a reference: sacrebleu's own call, its own error
            return {
                "bleu": float(sacrebleu_bleu().corpus_score(data.hyps, _ref_streams(data.references)).score)
            }
        return {"bleu": self.from_stats(stats.sum(axis=0).tolist(), len(data.hyps))}

    def sentence(self, data, i):
        """sacrebleu's `sentence_score` (exponential smoothing, effective order), as `--sentence-level`."""
        refs = list(data.references[i])
        return float(sacrebleu_bleu(True).sentence_score(data.hyps[i], refs).score)

    def stats(self, data):
        """Per sentence: sacrebleu's sufficient statistics (sys_len, ref_len, n-gram matches 1-4,
        n-gram totals 1-4; `sacrebleu_stats`); they sum over any subset."""
        bleu = sacrebleu_bleu()
        stats = sacrebleu_stats(data.hyps, data.references)
        if stats is None:
            rows = []
            for hyp, refs in zip(data.hyps, data.references, strict=True):
                score = bleu.corpus_score([hyp], [[r] for r in refs])
                rows.append([score.sys_len, score.ref_len, *score.counts, *score.totals])
            stats = np.array(rows)
        return stats.astype("float32").reshape(len(data.hyps), 2 + 2 * bleu.max_ngram_order)

    def from_stats(self, summed, n):
        """sacrebleu's public `BLEU.compute_bleu` on summed statistics, with the corpus settings."""
        bleu = sacrebleu_bleu()
        k = bleu.max_ngram_order
        stats = [int(round(float(v))) for v in summed]
        return float(
            bleu.compute_bleu(
                correct=stats[2 : 2 + k],
                total=stats[2 + k :],
                sys_len=stats[0],
                ref_len=stats[1],
                smooth_method=bleu.smooth_method,
                smooth_value=bleu.smooth_value,
                effective_order=bleu.effective_order,
                max_ngram_order=k,
            ).score
        )


def sacrebleu_stats(hyps: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray | None:
    """sacrebleu `BLEU()`'s per-sentence statistics, as its `_extract_corpus_statistics` makes them
    (sys_len, the closest reference length (ties to the shorter), clipped n-gram matches 1..4,
    n-gram totals 1..4, on its preprocessed segments: `_segment`), counted for the whole corpus at once
    in numpy (`base.ngram_codes`; issue 57: about 4x faster than sacrebleu's Counter per segment
    and reference). Its reference n-gram counts are the maximum over the references, a match the
    minimum of the output's count and that. None without outputs or when a sentence has no
    reference (sacrebleu's own call then decides). tests/test_metrics.py checks the integers equal sacrebleu's on random
    and sample lines, 1-4 references, and the BLEU the same float."""
    bleu = sacrebleu_bleu()
    n, k = len(hyps), bleu.max_ngram_order
    if not n or len(references) != n or any(not rs for rs in references):
        return None
    owner = np.repeat(np.arange(n, dtype=np.int64), [len(rs) for rs in references])
    lines = [_segment(bleu, h) for h in hyps]
    lines += [_segment(bleu, r) for rs in references for r in rs]
    sentence = np.concatenate([np.arange(n, dtype=np.int64), owner])
    lengths, orders = ngram_codes(lines, k, len(lines))
    out = np.zeros((n, 2 + 2 * k), dtype=np.int64)
    hyp_len, ref_len = lengths[:n], lengths[n:]
    span = int(ref_len.max(initial=0)) + 1  # closest: the least (distance, length)
    best = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(best, owner, np.abs(hyp_len[owner] - ref_len) * span + ref_len)
    out[:, 0], out[:, 1] = hyp_len, best % span
    for order, (line, codes, size) in enumerate(orders):
        pairs, per_pair = np.unique(line * size + codes, return_inverse=True)
        count = np.bincount(per_pair.reshape(-1), minlength=len(pairs))
        pair_line, pair_code = pairs // size, pairs % size
        keys, per_key = np.unique(sentence[pair_line] * size + pair_code, return_inverse=True)
        per_key = per_key.reshape(-1)
        is_hyp = pair_line < n
        hyp_count = np.bincount(per_key[is_hyp], weights=count[is_hyp], minlength=len(keys))
        ref_max = _group_max(per_key[~is_hyp], count[~is_hyp], len(keys))
        owner_of_key = keys // size
        out[:, 2 + order] = np.bincount(owner_of_key, weights=np.minimum(hyp_count, ref_max), minlength=n)
        out[:, 2 + k + order] = np.bincount(owner_of_key, weights=hyp_count, minlength=n)
    return out


def _group_max(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """`out[i]` = the largest of `values[index == i]` (0 where none): `np.maximum.at` by sorting
    and `reduceat` (numpy 1.26's `maximum.at` took 40 ms of the 4 orders on 1,015 lines x 4
    references, this 8)."""
    out = np.zeros(size)
    if len(index):
        order = np.argsort(index, kind="stable")
        index, values = index[order], values[order]
        starts = np.flatnonzero(np.concatenate(([True], index[1:] != index[:-1])))
        out[index[starts]] = np.maximum.reduceat(values, starts)
    return out


def _segment(bleu, line: str) -> str:
    """A segment as sacrebleu's BLEU preprocesses it (its `_preprocess_segment`), from its public
    `lowercase` and `tokenizer`: lowercased if asked, right-stripped, tokenized."""
    return bleu.tokenizer((line.lower() if bleu.lowercase else line).rstrip())


def sacrebleu_signature(data: Inputs | None) -> str:
    """sacrebleu's own BLEU signature, e.g. `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`
    (`nrefs:var` when sentences have different numbers of references, as sacrebleu writes it)."""
    from sacrebleu.metrics import BLEU

    counts = {len(rs) for rs in data.references} if data is not None else {1}
    bleu = BLEU()
    bleu.num_refs = counts.pop() if len(counts) == 1 else -1
    return str(bleu.get_signature().format())


class MedLaneBLEU(Metric):
    name = "medlane_bleu"
    keys = ("medlane_bleu", "bleu_1", "bleu_2", "bleu_3", "bleu_4")
    label = "medsimp-mean-corpus-bleu1-4+nosmooth"
    medlane_label = "coco-bleu-closest"
    medlane_dist = "pycocoevalcap"
    order = 11

    def corpus(self, data, done=None):
        bleus = corpus_bleu_n(data.hyp_tokens, data.ref_tokens)
        return {"medlane_bleu": sum(bleus) / 4, **{f"bleu_{n}": b for n, b in enumerate(bleus, 1)}}

    def medlane(self, data, done):
        """nlg-eval's BLEU-1..4 (pycocoevalcap, whitespace tokens); their mean floored at 1e-4."""
        from medsimp.metrics.medlane import MEDLANE_FLOOR

        bleus = coco_bleu_n(data.hyps, data.references)
        return {
            **{f"bleu_{n}": b for n, b in enumerate(bleus, 1)},
            "medlane_bleu": max(sum(bleus) / 4, MEDLANE_FLOOR),
        }

    def stats(self, data):
        return np.array(
            [bleu_stats(h, rs) for h, rs in zip(data.hyp_tokens, data.ref_tokens, strict=True)], dtype=float
        )

    def from_stats(self, summed, n):
        return sum(bleu_from_stats(list(summed))) / 4


def corpus_bleu_n(hyps: Sequence[Tokens], refs: Sequence[Sequence[Tokens]], max_n: int = 4) -> list[float]:
    """Cumulative corpus BLEU-1..max_n (Papineni et al. 2002), multi-reference, no smoothing.

    Clipped n-gram counts and lengths are summed over the corpus; the brevity
    penalty uses, per sentence, the closest reference length (ties -> shorter).
    """
    totals = [0] * (2 * max_n + 2)
    for hyp, rs in zip(hyps, refs, strict=True):
        totals = [t + s for t, s in zip(totals, bleu_stats(hyp, rs, max_n))]
    return bleu_from_stats(totals, max_n)


def bleu_stats(hyp: Tokens, rs: Sequence[Tokens], max_n: int = 4) -> list[int]:
    """One sentence's BLEU sufficient statistics: [hyp_len, closest ref_len, matches x max_n, totals x max_n]."""
    out = [len(hyp), min((abs(len(r) - len(hyp)), len(r)) for r in rs)[1]]
    match, total = [], []
    for n in range(1, max_n + 1):
        counts = ngrams(hyp, n)
        best: dict = {}
        for r in rs:
            for g, c in ngrams(r, n).items():
                if c > best.get(g, 0):
                    best[g] = c
        match.append(sum(min(c, best.get(g, 0)) for g, c in counts.items()))
        total.append(max(len(hyp) - n + 1, 0))
    return out + match + total


def bleu_from_stats(stats: Sequence[float], max_n: int = 4) -> list[float]:
    """Cumulative BLEU-1..max_n from summed `bleu_stats`."""
    hyp_len, ref_len = stats[0], stats[1]
    match, total = stats[2 : 2 + max_n], stats[2 + max_n : 2 + 2 * max_n]
    bp = 1.0 if hyp_len > ref_len else (math.exp(1 - ref_len / hyp_len) if hyp_len else 0.0)
    scores = []
    log_sum = 0.0
    for n in range(1, max_n + 1):
        if match[n - 1] == 0 or total[n - 1] == 0:
            scores.extend([0.0] * (max_n - n + 1))
            break
        log_sum += math.log(match[n - 1] / total[n - 1])
        scores.append(bp * math.exp(log_sum / n))
    return scores


def coco_bleu_n(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> list[float]:
    """BLEU-1..4 as nlg-eval computes them: pycocoevalcap Bleu(4) on whitespace tokens."""
    from pycocoevalcap.bleu.bleu import Bleu

    gts, res = coco_inputs(hyps, refs)
    with contextlib.redirect_stdout(io.StringIO()):
        scores, _ = Bleu(4).compute_score(gts, res)
    return [float(s) for s in scores]


def coco_inputs(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> tuple[dict, dict]:
    """pycocoevalcap's inputs: {i: [stripped references]}, {i: [stripped output]}."""
    gts = {i: [r.strip() for r in rs] for i, rs in enumerate(refs)}
    res = {i: [h.strip()] for i, h in enumerate(hyps)}
    return gts, res
