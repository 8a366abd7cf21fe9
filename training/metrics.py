"""Simplification metrics as pure functions (MedLane / DECLARE evaluation suite).

Token-level inputs are lists of strings; callers choose the tokenizer (see
`medsimp.training.scoring` for the two modes). Library-backed metrics follow the
libraries MedLane's scorer used (nlg-eval = pycocoevalcap); SARI, HIT, CWR and
AScore are written here from their papers. docs/metrics.md lists every
difference from the authors' `bleu_eval_new.py`.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import re
import shutil
from collections import Counter
from collections.abc import Callable, Sequence

Tokens = list[str]
ZERO_SHIFT = 1e-8  # the paper (Luo et al. 2022, Sec. 5): a zero metric gets 1e-8 before AScore
MEDLANE_FLOOR = 1e-4  # the authors' bleu_eval_new.py floors BLEU, HIT and CWR at 1e-4 instead


class MetricUnavailable(RuntimeError):
    """A metric whose external tool (e.g. Java for METEOR) is missing."""


# ---------------------------------------------------------------- AScore
def ascore(bleu: float, hit: float, cwr: float, alpha: float = 2.0, beta: float = 1.5) -> float:
    """AScore = (1 + a^2 + b^2) / (a^2/BLEU + b^2/HIT + 1/CWR); a metric that is 0 gets
    1e-8 added (the paper). MedLane compat mode floors its inputs at 1e-4 first."""
    b, h, c = (float(x) if float(x) > 0 else float(x) + ZERO_SHIFT for x in (bleu, hit, cwr))
    a2, b2 = alpha * alpha, beta * beta
    return (1.0 + a2 + b2) / (a2 / b + b2 / h + 1.0 / c)


# ---------------------------------------------------------------- BLEU
def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    """Counts of the n-grams (tuples) of `tokens`, in order of first occurrence."""
    return Counter(zip(*(tokens[i:] for i in range(n))))


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
        counts = _ngrams(hyp, n)
        best: Counter = Counter()
        for r in rs:
            best |= _ngrams(r, n)
        match.append(sum(min(c, best[g]) for g, c in counts.items()))
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

    gts, res = _coco_inputs(hyps, refs)
    with contextlib.redirect_stdout(io.StringIO()):
        scores, _ = Bleu(4).compute_score(gts, res)
    return [float(s) for s in scores]


def _coco_inputs(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> tuple[dict, dict]:
    gts = {i: [r.strip() for r in rs] for i, rs in enumerate(refs)}
    res = {i: [h.strip()] for i, h in enumerate(hyps)}
    return gts, res


# ---------------------------------------------------------------- METEOR / ROUGE-L / CIDEr
def meteor(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> float:
    """METEOR 1.5 (Denkowski & Lavie 2014) through pycocoevalcap's jar; needs Java."""
    if shutil.which("java") is None:
        raise MetricUnavailable(
            "METEOR needs a Java runtime (`java` on PATH, e.g. OpenJDK 17); install one or leave METEOR out"
        )
    if not hyps:
        raise ValueError("METEOR of an empty corpus")
    gts, res = _coco_inputs(hyps, refs)
    scorer = _meteor_scorer()
    try:
        score, _ = scorer.compute_score(gts, res)
    except Exception:
        # pycocoevalcap holds its lock across the call: a failure inside would leave it held
        # and its __del__ would wait for ever at exit. Drop this JVM and let the error out.
        _meteor_scorer.cache_clear()
        scorer.meteor_p.kill()
        if scorer.lock.locked():
            scorer.lock.release()
        raise
    return float(score)


@functools.lru_cache(maxsize=1)
def _meteor_scorer():
    """One METEOR JVM per process (start-up loads the paraphrase table, ~15 s)."""
    from pycocoevalcap.meteor.meteor import Meteor

    return Meteor()


def coco_rouge_l(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> float:
    """ROUGE-L as nlg-eval: pycocoevalcap Rouge (LCS F with beta=1.2, best reference), mean."""
    from pycocoevalcap.rouge.rouge import Rouge

    gts, res = _coco_inputs(hyps, refs)
    score, _ = Rouge().compute_score(gts, res)
    return float(score)


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


def rouge_f1(hyps: Sequence[Tokens], refs: Sequence[Sequence[Tokens]], kind: str = "rougeL") -> float:
    """ROUGE F1 (Lin 2004) as rouge-score 0.1.2 computes it (`RougeScorer([kind])` on the
    given tokens, `score_multi`), best reference per sentence, averaged; `kind`: rougeL
    (P = LCS/|hyp|, R = LCS/|ref|, 0 for an empty side), rouge1 or rouge2 (clipped unigram /
    bigram overlap over the hypothesis' / reference's n-gram count, PLABA's ROUGE-1/2);
    F = 2PR/(P+R). Computed here (rouge-score imports NLTK, ~1 s); tests/test_training_metrics.py
    checks it equals rouge-score's."""
    if kind == "rougeL":
        order = 0
    elif kind in ("rouge1", "rouge2"):
        order = int(kind[5:])
    else:
        raise ValueError(f"unknown ROUGE kind {kind!r}: rougeL, rouge1 or rouge2")

    def f1(ref: Tokens, hyp: Tokens) -> float:
        if order:
            ref_grams, hyp_grams = _ngrams(ref, order), _ngrams(hyp, order)
            overlap = sum(min(c, hyp_grams[g]) for g, c in ref_grams.items())
            precision = overlap / max(sum(hyp_grams.values()), 1)
            recall = overlap / max(sum(ref_grams.values()), 1)
        else:
            if not ref or not hyp:
                return 0.0
            lcs = lcs_length(ref, hyp)
            precision, recall = lcs / len(hyp), lcs / len(ref)
        return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0

    vals = [max(f1(r, h) for r in rs) for h, rs in zip(hyps, refs, strict=True)]
    return sum(vals) / len(vals) if vals else 0.0


def cider(hyps: Sequence[str], refs: Sequence[Sequence[str]], n: int = 4, sigma: float = 6.0) -> float:
    """CIDEr-D (Vedantam et al. 2015) as pycocoevalcap 1.2's `Cider` / nlg-eval compute it on
    whitespace tokens, with its arithmetic in its order (the same float), faster: the idf
    logarithm once per document frequency, no numpy per n-gram. As there, the length in the
    Gaussian penalty counts bigrams. tests/test_training_metrics.py checks it equals pycocoevalcap's."""
    import numpy as np

    if not any(r.split() for rs in refs for r in rs):
        return 0.0  # no reference n-gram: pycocoevalcap fails on max() of an empty df table
    if len(hyps) != len(refs) or any(not rs for rs in refs):
        raise ValueError("CIDEr needs one hypothesis and at least one reference per sentence")

    def precook(text: str) -> dict[tuple[str, ...], int]:
        words = text.strip().split()
        counts: dict[tuple[str, ...], int] = {}
        for k in range(1, n + 1):
            for gram in zip(*(words[i:] for i in range(k))):
                counts[gram] = counts.get(gram, 0) + 1
        return counts

    crefs = [[precook(r) for r in rs] for rs in refs]
    ctest = [precook(h) for h in hyps]
    document_frequency: dict[tuple[str, ...], float] = {}
    for cref in crefs:
        for gram in {g for ref in cref for g in ref}:
            document_frequency[gram] = document_frequency.get(gram, 0.0) + 1.0
    if len(ctest) < max(document_frequency.values()):
        raise ValueError("CIDEr: a document frequency above the number of sentences")
    ref_len = float(np.log(float(len(crefs))))
    idf: dict[float, float] = {}  # document frequency -> ref_len - log(max(1, df))

    def counts2vec(cnts: dict[tuple[str, ...], int]) -> tuple[list[dict], list[float], int]:
        vec: list[dict[tuple[str, ...], float]] = [{} for _ in range(n)]
        norm = [0.0] * n
        length = 0
        for gram, term_freq in cnts.items():
            df = document_frequency.get(gram, 0.0)
            weight = idf.get(df)
            if weight is None:
                weight = idf[df] = ref_len - float(np.log(max(1.0, df)))
            k = len(gram) - 1
            value = float(term_freq) * weight
            vec[k][gram] = value
            norm[k] += pow(value, 2)
            if k == 1:
                length += term_freq
        return vec, [math.sqrt(x) for x in norm], length

    penalty: dict[float, float] = {}  # length difference -> Gaussian penalty

    def sim(
        vec_hyp: list[dict], vec_ref: list[dict], norm_hyp: list[float], norm_ref: list[float], delta: float
    ) -> list[float]:
        factor = penalty.get(delta)
        if factor is None:
            factor = penalty[delta] = np.e ** (-(delta**2) / (2 * sigma**2))
        val = [0.0] * n
        for k in range(n):
            ref_k = vec_ref[k]
            for gram, value in vec_hyp[k].items():
                other = ref_k.get(gram)
                if other is not None:
                    val[k] += min(value, other) * other
            if norm_hyp[k] != 0 and norm_ref[k] != 0:
                val[k] /= norm_hyp[k] * norm_ref[k]
            val[k] *= factor
        return val

    scores = []
    for test, cref in zip(ctest, crefs):
        vec, norm, length = counts2vec(test)
        score = [0.0] * n
        for ref in cref:
            vec_ref, norm_ref, length_ref = counts2vec(ref)
            for k, v in enumerate(sim(vec, vec_ref, norm, norm_ref, float(length - length_ref))):
                score[k] += v
        score_avg = np.mean(np.array(score))
        score_avg /= len(cref)
        score_avg *= 10.0
        scores.append(score_avg)
    return float(np.mean(np.array(scores)))


# ---------------------------------------------------------------- SARI
def _sari_ngram(src: Counter, out: Counter, refs: list[Counter], numref: int) -> tuple[float, float, float]:
    """keep F1, deletion precision, addition F1 for one n-gram order (Xu et al. 2016)."""
    ref_all: Counter = Counter()
    for r in refs:
        ref_all.update(r)
    src_rep = Counter({g: c * numref for g, c in src.items()})
    out_rep = Counter({g: c * numref for g, c in out.items()})

    keep = src_rep & out_rep
    keep_good = keep & ref_all
    keep_all = src_rep & ref_all
    keep_p = sum(keep_good[g] / keep[g] for g in keep) / len(keep) if keep else 1.0
    keep_r = sum(keep_good.values()) / sum(keep_all.values()) if keep_all else 1.0
    keep_f = 2 * keep_p * keep_r / (keep_p + keep_r) if keep_p + keep_r > 0 else 0.0

    dele = src_rep - out_rep
    dele_good = dele - ref_all
    del_p = sum(dele_good[g] / dele[g] for g in dele) / len(dele) if dele else 1.0

    add = set(out) - set(src)
    add_good = add & set(ref_all)
    add_all = set(ref_all) - set(src)
    add_p = len(add_good) / len(add) if add else 1.0
    add_r = len(add_good) / len(add_all) if add_all else 1.0
    add_f = 2 * add_p * add_r / (add_p + add_r) if add_p + add_r > 0 else 0.0
    return keep_f, del_p, add_f


def sari_sentence(src: Tokens, hyp: Tokens, refs: Sequence[Tokens], max_n: int = 4) -> dict[str, float]:
    """Sentence SARI in [0, 1] with its keep / del / add parts, averaged over n = 1..4.

    Follows Xu et al. (2016) as implemented in tensor2tensor / HF `evaluate`
    (0/0 := 1; keep recall over reference-weighted counts).
    """
    parts = [
        _sari_ngram(_ngrams(src, n), _ngrams(hyp, n), [_ngrams(r, n) for r in refs], len(refs))
        for n in range(1, max_n + 1)
    ]
    keep, dele, add = (sum(p[i] for p in parts) / max_n for i in range(3))
    return {"sari": (keep + dele + add) / 3, "keep": keep, "del": dele, "add": add}


def sari(
    srcs: Sequence[Tokens], hyps: Sequence[Tokens], refs: Sequence[Sequence[Tokens]]
) -> dict[str, float]:
    """Corpus SARI = mean of sentence SARI (0-100 scale, like HF `evaluate`)."""
    rows = [sari_sentence(s, h, r) for s, h, r in zip(srcs, hyps, refs, strict=True)]
    if not rows:
        return {"sari": 0.0, "keep": 0.0, "del": 0.0, "add": 0.0}
    return {k: 100.0 * sum(r[k] for r in rows) / len(rows) for k in ("sari", "keep", "del", "add")}


# ---------------------------------------------------------------- FKGL
def fkgl(sentences: Sequence[str]) -> float:
    """Corpus Flesch-Kincaid grade, one sentence per line: the toolkit's readability module."""
    from medsimp.pipelines.readability import corpus_fkgl

    return corpus_fkgl(sentences)


# ---------------------------------------------------------------- BERTScore
def bertscore_f1(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    model_path: str,
    num_layers: int = 6,
    batch_size: int = 32,
) -> float:
    """Mean BERTScore F1 (Zhang et al. 2020), best reference, no idf, no baseline rescaling."""
    from bert_score import score

    if not hyps:
        return 0.0
    _, _, f1 = score(
        list(hyps),
        [list(r) for r in refs],
        model_type=model_path,
        num_layers=num_layers,
        batch_size=batch_size,
        verbose=False,
    )
    return float(f1.mean())


# ---------------------------------------------------------------- HIT
def contains(tokens: Sequence[str], phrase: Sequence[str]) -> bool:
    n = len(phrase)
    return n > 0 and any(list(tokens[i : i + n]) == list(phrase) for i in range(len(tokens) - n + 1))


def hit(hyps: Sequence[Tokens], terms: Sequence[Sequence[tuple[str, Sequence[Tokens]]]]) -> float | None:
    """HIT (Luo et al. 2022): per sentence, correctly translated professional terms /
    professional terms in its source; the mean over the sentences that have terms.

    `terms[i]` lists, for sentence i, each source term with its accepted
    expansions (token lists). A term counts as translated when one accepted
    expansion occurs in the output as a whole-token sequence. None when no
    sentence has a term.
    """
    ratios = [
        sum(any(contains(hyp, e) for e in expansions) for _, expansions in ts) / len(ts)
        for hyp, ts in zip(hyps, terms, strict=True)
        if ts
    ]
    return sum(ratios) / len(ratios) if ratios else None


def medlane_hit(hyp_texts: Sequence[str], ref_dicts: Sequence[Sequence[dict[str, str]]]) -> float:
    """HIT as MedLane's `count_hit`: per sentence the max over references of the share of
    that reference's bracketed expansions found (regex search, no word boundary) in the
    space-joined tokenized output; a reference without brackets scores 1.0; mean over sentences.
    """
    if not hyp_texts:
        return 0.0
    total = 0.0
    for txt, dics in zip(hyp_texts, ref_dicts, strict=True):
        best = 0.0
        for d in dics:
            if not d:
                score = 1.0
            else:
                score = sum(1 for v in d.values() if _regex_found(v, txt)) / len(d)
            best = max(best, score)
        total += best / len(hyp_texts)
    return total


REGEX_TIMEOUT = 1.0  # seconds per HIT search: a hostile explanation cannot hang the scorer


def _regex_found(pattern: str, text: str) -> bool:
    """`re.findall(pattern, text)` as the authors call it, through `regex` (the same syntax in
    its default VERSION0 mode) for its time limit. An invalid pattern, or one still running
    after `REGEX_TIMEOUT` (catastrophic backtracking), is matched literally."""
    import regex

    try:
        return bool(regex.findall(pattern, text, timeout=REGEX_TIMEOUT))
    except (regex.error, TimeoutError):
        return pattern in text


# ---------------------------------------------------------------- CWR
def cwr(hyps: Sequence[Tokens], is_common: Callable[[str], bool]) -> float:
    """Common word ratio (Luo et al. 2022): per sentence, the output's words whose lemma is
    common / the output's length in tokens; the mean over non-empty outputs.

    Every token counts in the length. Punctuation (no letter or digit) counts as common,
    as in the authors' scorer; numbers are common only if the list has them (the
    stand-in list has none). `is_common` decides on a lowercased token's lemma.
    """
    ratios = []
    for hyp in hyps:
        if hyp:
            ratios.append(sum(1 for t in hyp if not _ALNUM.search(t) or is_common(t.lower())) / len(hyp))
    return sum(ratios) / len(ratios) if ratios else 0.0


_ALNUM = re.compile(r"[^\W_]")
_NUM_RE = re.compile(r"-?\d+\.?\d*e?-?\d*?")


def medlane_cwr(
    hyp_texts: Sequence[str],
    tokenize: Callable[[str], list[str]],
    lemma: Callable[[str], str],
    common: set[str],
    pro_words: set[str],
) -> float:
    """CWR as MedLane's `count_common`: numbers -> `num`, every token counts (punctuation and
    numbers as common), dictionary terms and non-common alphabetic words as not common,
    ratio (count - uncommon - pro) / (count + 1e-3), mean over sentences."""
    if not hyp_texts:
        return 0.0
    total = 0.0
    for text in hyp_texts:
        tokens = tokenize(_NUM_RE.sub(" num ", text.lower()))
        unc = pro = 0
        for tok in tokens:
            word = lemma(tok)
            if word in pro_words:
                pro += 1
            elif word not in common and word.isalpha():
                unc += 1
        total += (len(tokens) - unc - pro) / (len(tokens) + 1e-3) / len(hyp_texts)
    return total
