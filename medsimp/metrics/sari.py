"""SARI (Xu et al. 2016), three variants under their own names (docs/metrics.md: which paper used which).

- `sari`: EASSE's `corpus_sari` (Alva-Manchego et al. 2019; easse 0.2.4 `easse/sari.py`, defaults:
  lowercase, sacrebleu 13a tokens, n-gram counts summed over the corpus, per-order F1 for add and
  keep, F1 for deletion, macro average over n = 1..4): what the field reports today.
- `sari_xu2016`: the same with deletion precision (`use_f1_for_deletion=False`): Xu et al.'s
  equations with the corpus statistics of their released Java scorer, which their experiments used.
- `sari_sentmean`: the mean of sentence SARI on lowercased NLTK tokens with deletion precision
  (tensor2tensor / HF `evaluate`'s sentence formula, 0/0 := 1): medsimp's SARI before issue 29.
- `sari_cocoxu`: the mean of sentence SARI as Xu's released Python scorer computes it
  (cocoxu/simplification `SARI.py`, `SARIsent`: deletion precision, 0/0 := 0, keep recall the
  mean over the source n-grams found in a reference), on lowercased NLTK tokens: the package
  Cao et al. (2020) name in footnote 7 for their Table 5.

All are 0-100. SARI is undefined when every reference is empty: null, with the reason. All compare
the output's n-grams with the source's: with sources in another language they are refused (null,
with the reason) unless `allow_cross_lingual` asks for them (then flagged; `base.check_needs`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from medsimp.metrics.base import Inputs, Metric, NotComputable, Tokens, check_needs, ngram_codes, ngrams
from medsimp.metrics.bleu import sacrebleu_bleu

NGRAM_ORDER = 4


@functools.cache
def _tokenizer_13a():
    """sacrebleu's 13a tokenizer: the very instance `bleu` tokenizes with when it is 13a, so
    the lines both read alike (lowercase text, as MedLane's) are tokenized once (its cache)."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    shared = sacrebleu_bleu().tokenizer
    return shared if type(shared) is Tokenizer13a else Tokenizer13a()


def normalize(sentence: str) -> str:
    """EASSE's `normalize(sentence, lowercase=True, tokenizer="13a")`: 13a tokens of the lowercased
    line. For an ASCII line without `&`, `<` or a newline (13a's case-sensitive entity and
    `<skipped>` rules) that is the lowercased 13a tokens of the line as BLEU tokenizes it (right
    whitespace stripped), which the shared tokenizer's cache then holds (a test checks the two
    agree on random lines)."""
    tokenizer = _tokenizer_13a()
    if sentence.isascii() and "&" not in sentence and "<" not in sentence and "\n" not in sentence:
        return tokenizer(sentence.rstrip()).lower()
    return tokenizer(sentence.lower())


def stats_table(origs: Sequence[str], syss: Sequence[str], refs: Sequence[Sequence[str]]) -> np.ndarray:
    """EASSE's `compute_ngram_stats` for every sentence (normalized text), one row of 36 counts
    each, in the order add (correct, sys total, ref total) x 4 orders, keep x 4, del x 4.

    EASSE builds them per sentence with Counter arithmetic on the source's and the output's
    n-gram counts times the number of references. Here the whole corpus is counted at once in
    numpy (issue 57: 2.5-4x faster than the same sums per sentence in Python): each n-gram gets
    an integer code (`base.ngram_codes`), each (sentence, n-gram) its counts on the source, output
    and reference side, and the per-n-gram terms (o = source count x refs, s = output count x
    refs, r = the references' count; Counter `&` is min, `-` is the difference floored at 0) are
    summed per sentence. Tests check the integers against
    EASSE's Counter arithmetic, sentence by sentence and for a corpus at once."""
    n = len(origs)
    if len(syss) != n or len(refs) != n:
        raise ValueError(
            f"{n} sources, {len(syss)} outputs and {len(refs)} reference sets: one each per sentence"
        )
    num_refs = np.array([len(r) for r in refs], dtype=np.int64)
    lines = [*origs, *syss, *(r for rs in refs for r in rs)]
    side = np.repeat(np.array([0, 1, 2], dtype=np.int8), [n, n, len(lines) - 2 * n])
    sentence = np.concatenate([np.arange(n), np.arange(n), np.repeat(np.arange(n), num_refs)]).astype(
        np.int64
    )
    out = np.zeros((n, 9 * NGRAM_ORDER), dtype=np.int64)
    for order, (where, codes, size) in enumerate(ngram_codes(lines, NGRAM_ORDER, n)[1], 1):
        keys, row = np.unique(sentence[where] * size + codes, return_inverse=True)
        row = row.reshape(-1)
        grams = len(keys)
        o_n, s_n, r = (np.bincount(row[side[where] == k], minlength=grams) for k in (0, 1, 2))
        sent = keys // size
        refs_of = num_refs[sent]
        o, s = o_n * refs_of, s_n * refs_of
        o_s, o_r = np.minimum(o, s), np.minimum(o, r)
        sys_add = (s_n > 0) & (o_n == 0)
        columns = [
            sys_add & (r > 0), sys_add, (r > 0) & (o_n == 0),  # add: correct, output, references
            np.minimum(o_s, o_r), o_s, o_r,  # keep: kept, by the output, by the references
            np.minimum(o - o_s, o - o_r), o - o_s, o - o_r,  # deleted: both, by the output, by the refs
        ]  # fmt: skip
        for k, values in enumerate(columns):
            block, part = divmod(k, 3)
            column = block * 3 * NGRAM_ORDER + 3 * (order - 1) + part
            out[:, column] = np.bincount(sent, weights=values, minlength=n).astype(np.int64)
    return out


def sentence_stats(orig: str, sys: str, refs: Sequence[str]) -> list[int]:
    """`stats_table` of one sentence: its 36 counts."""
    return stats_table([orig], [sys], [refs])[0].tolist()


def _prf(correct: float, sys_total: float, ref_total: float) -> tuple[float, float, float]:
    precision = correct / sys_total if sys_total > 0 else 0.0
    recall = correct / ref_total if ref_total > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision > 0 and recall > 0 else 0.0
    return precision, recall, f1


def from_stats(stats: Sequence[float], f1_deletion: bool = True) -> dict[str, float]:
    """EASSE's `compute_macro_sari` on summed `sentence_stats`: {sari, keep, del, add}, 0-100."""
    parts = {"add": 0.0, "keep": 0.0, "del": 0.0}
    for op_index, op in enumerate(("add", "keep", "del")):
        for n in range(NGRAM_ORDER):
            base = op_index * 3 * NGRAM_ORDER + 3 * n
            p, _, f1 = _prf(*stats[base : base + 3])
            parts[op] += (p if op == "del" and not f1_deletion else f1) / NGRAM_ORDER
    scaled = {k: 100.0 * v for k, v in parts.items()}
    return {"sari": (scaled["add"] + scaled["keep"] + scaled["del"]) / 3, **scaled}


def corpus_sari(
    origs: Sequence[str], syss: Sequence[str], refs: Sequence[Sequence[str]], f1_deletion: bool = True
) -> dict[str, float]:
    """EASSE's `corpus_sari` (and its operation scores) with `refs[i]` the references of sentence i."""
    table = stats_table(
        [normalize(o) for o in origs],
        [normalize(s) for s in syss],
        [[normalize(r) for r in rs] for rs in refs],
    )
    return from_stats(table.sum(axis=0, dtype=float).tolist(), f1_deletion)


def _check(metric: Metric, data: Inputs) -> None:
    check_needs(metric, data)
    if not any(r.strip() for rs in data.references for r in rs):
        raise NotComputable(
            "every reference is empty: SARI is undefined (copying the source would score 66.7)"
        )


class EasseSARI(Metric):
    """EASSE's corpus SARI (F1 deletion), the default."""

    name = "sari"
    keys: ClassVar[tuple[str, ...]] = ("sari", "sari_keep", "sari_del", "sari_add")
    scale = "0-100"
    needs = frozenset({"sources", "references"})
    label = "easse-0.2.4-corpus-sari+del-f1"
    tokenizer = "13a-lc"
    f1_deletion = True
    order = 40
    same_language = True

    def corpus(self, data, done=None):
        _check(self, data)
        summed = self.stats(data).sum(axis=0)
        parts = from_stats(list(summed), self.f1_deletion)
        if len(self.keys) == 1:
            return {self.name: parts["sari"]}
        return {self.name: parts["sari"], **{f"{self.name}_{k}": parts[k] for k in ("keep", "del", "add")}}

    def sentence(self, data, i):
        """EASSE's `sentence_sari`: the corpus formula on sentence i alone, whose counts are row i
        of the corpus table (`stats`, made once per data: a table per sentence cost 0.68 ms a
        sentence against 0.40 for EASSE's Counters)."""
        _check(self, data.subset([i]))
        return from_stats(list(self.stats(data)[i]), self.f1_deletion)["sari"]

    def stats(self, data):
        """`stats_table` of the data, counted once (`Inputs.derived`) for every reading of it."""
        assert data.sources is not None
        if "easse_sari" not in data.derived:
            table = stats_table(
                [normalize(o) for o in data.sources],
                [normalize(s) for s in data.hyps],
                [[normalize(r) for r in rs] for rs in data.references],
            ).astype(float)
            table.setflags(write=False)  # shared by every reading of this data
            data.derived["easse_sari"] = table
        return data.derived["easse_sari"]

    def from_stats(self, summed, n):
        return from_stats(list(summed), self.f1_deletion)["sari"]


class XuSARI(EasseSARI):
    """Xu et al. (2016)'s deletion precision on EASSE's corpus statistics."""

    name = "sari_xu2016"
    keys = ("sari_xu2016",)
    label = "easse-0.2.4-corpus-sari+del-precision"
    f1_deletion = False
    order = 41


class SentenceMeanSARI(Metric):
    """Mean of sentence SARI on NLTK tokens, deletion precision (tensor2tensor / HF evaluate)."""

    name = "sari_sentmean"
    keys = ("sari_sentmean",)
    scale = "0-100"
    needs = frozenset({"sources", "references"})
    label = "medsimp-sentence-mean-sari-xu2016+del-precision"
    order = 42
    same_language = True

    def corpus(self, data, done=None):
        _check(self, data)
        assert data.source_tokens is not None
        return {self.name: sari(data.source_tokens, data.hyp_tokens, data.ref_tokens)["sari"]}

    def sentence(self, data, i):
        _check(self, data.subset([i]))
        assert data.source_tokens is not None
        return 100.0 * sari_sentence(data.source_tokens[i], data.hyp_tokens[i], data.ref_tokens[i])["sari"]


class CocoxuSARI(SentenceMeanSARI):
    """Mean of sentence SARI as cocoxu/simplification's `SARI.py` (Cao et al. 2020, footnote 7)."""

    name = "sari_cocoxu"
    keys = ("sari_cocoxu",)
    label = "cocoxu-simplification-SARI.py-sentence-mean+del-precision"
    order = 43

    def corpus(self, data, done=None):
        _check(self, data)
        assert data.source_tokens is not None
        return {self.name: sari(data.source_tokens, data.hyp_tokens, data.ref_tokens, released=True)["sari"]}

    def sentence(self, data, i):
        _check(self, data.subset([i]))
        assert data.source_tokens is not None
        toks = data.source_tokens[i], data.hyp_tokens[i], data.ref_tokens[i]
        return 100.0 * sari_sentence(*toks, released=True)["sari"]


def _sari_ngram(
    src: Counter, out: Counter, refs: list[Counter], numref: int, released: bool = False
) -> tuple[float, float, float]:
    """keep F1, deletion precision, addition F1 for one n-gram order (Xu et al. 2016).

    tensor2tensor / HF `evaluate` (default): an empty ratio (0/0) is 1 and keep recall is the
    good kept count over the reference-weighted source count. `released`: Xu's own `SARI.py`
    (cocoxu/simplification): 0/0 is 0 and keep recall is the mean over the distinct source
    n-grams found in a reference of (good kept count / that n-gram's count)."""
    empty = 0.0 if released else 1.0
    ref_all: Counter = Counter()
    for r in refs:
        ref_all.update(r)
    src_rep = Counter({g: c * numref for g, c in src.items()})
    out_rep = Counter({g: c * numref for g, c in out.items()})

    keep = src_rep & out_rep
    keep_good = keep & ref_all
    keep_all = src_rep & ref_all
    keep_p = sum(keep_good[g] / keep[g] for g in keep) / len(keep) if keep else empty
    if released:
        keep_r = sum(keep_good[g] / keep_all[g] for g in keep_good) / len(keep_all) if keep_all else 0.0
    else:
        keep_r = sum(keep_good.values()) / sum(keep_all.values()) if keep_all else 1.0
    keep_f = 2 * keep_p * keep_r / (keep_p + keep_r) if keep_p + keep_r > 0 else 0.0

    dele = src_rep - out_rep
    dele_good = dele - ref_all
    del_p = sum(dele_good[g] / dele[g] for g in dele) / len(dele) if dele else empty

    add = set(out) - set(src)
    add_good = add & set(ref_all)
    add_all = set(ref_all) - set(src)
    add_p = len(add_good) / len(add) if add else empty
    add_r = len(add_good) / len(add_all) if add_all else empty
    add_f = 2 * add_p * add_r / (add_p + add_r) if add_p + add_r > 0 else 0.0
    return keep_f, del_p, add_f


def sari_sentence(
    src: Tokens, hyp: Tokens, refs: Sequence[Tokens], max_n: int = 4, released: bool = False
) -> dict[str, float]:
    """Sentence SARI in [0, 1] with its keep / del / add parts, averaged over n = 1..4.

    Follows Xu et al. (2016) as implemented in tensor2tensor / HF `evaluate`
    (0/0 := 1; keep recall over reference-weighted counts), or with `released` as in Xu's
    `SARI.py` (`_sari_ngram`).
    """
    parts = [
        _sari_ngram(ngrams(src, n), ngrams(hyp, n), [ngrams(r, n) for r in refs], len(refs), released)
        for n in range(1, max_n + 1)
    ]
    keep, dele, add = (sum(p[i] for p in parts) / max_n for i in range(3))
    return {"sari": (keep + dele + add) / 3, "keep": keep, "del": dele, "add": add}


def sari(
    srcs: Sequence[Tokens], hyps: Sequence[Tokens], refs: Sequence[Sequence[Tokens]], released: bool = False
) -> dict[str, float]:
    """Mean of sentence SARI (0-100 scale, like HF `evaluate`; `released`: `SARI.py`'s formula)."""
    rows = [sari_sentence(s, h, r, released=released) for s, h, r in zip(srcs, hyps, refs, strict=True)]
    if not rows:
        return {"sari": 0.0, "keep": 0.0, "del": 0.0, "add": 0.0}
    return {k: 100.0 * sum(r[k] for r in rows) / len(rows) for k in ("sari", "keep", "del", "add")}
