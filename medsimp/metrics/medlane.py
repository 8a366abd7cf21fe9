"""MedLane's measures (Luo et al. 2022): HIT, CWR and AScore, in the paper's definitions.

HIT: the share of a source's professional terms whose accepted expansion the output contains;
CWR: the share of the output's words that are common; AScore: their weighted harmonic mean with
MedLane's BLEU (`medlane_bleu`, the mean of BLEU-1..4). `medlane_hit` / `medlane_cwr` are the
authors' `count_hit` / `count_common` (MedLane compat mode).

HIT and CWR are means over some sentences (those with terms, the non-empty outputs), AScore a
formula of corpus values: their per-sentence statistics (`stats`) are (ratio, counted?) pairs
and MedLane BLEU's n-gram counts, so the paired bootstrap resamples the score the table prints
(issue 54: it resampled the mean of sentence scores, which counted an empty output's CWR as 0
and averaged sentence AScores).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import regex

from medsimp.metrics.base import Metric, NotComputable, Tokens, output_language, tokenize
from medsimp.metrics.bleu import MedLaneBLEU
from medsimp.text.lemmas import lemmatize
from medsimp.text.stopwords import stop_words
from medsimp.text.words import word_tokenizer

ZERO_SHIFT = 1e-8  # the paper (Luo et al. 2022, Sec. 5): a zero metric gets 1e-8 before AScore
MEDLANE_FLOOR = 1e-4  # the authors' bleu_eval_new.py floors BLEU, HIT and CWR at 1e-4 instead


class HIT(Metric):
    name = "hit"
    needs = frozenset({"sources", "terms"})
    label = "medsimp-hit-source-terms"
    medlane_label = "medlane-count_hit-regex"
    medlane_dist = "regex"
    order = 60
    same_language = True

    def corpus(self, data, done=None):
        terms = data.terms or [[] for _ in data.hyps]
        value = hit(data.hyp_tokens, [[(t, [tokenize(e) for e in exps]) for t, exps in ts] for ts in terms])
        unfit = data.options.dictionary_unfit
        if value is None and data.hyps and unfit:
            raise NotComputable(f"no reference carries an abbr[full] annotation and {unfit}")
        if value is None and data.hyps:
            raise NotComputable(
                "no source has a professional term: the references carry no abbr[full] annotation "
                "and no abbreviation-dictionary key (evaluate.dictionaries, else train.dictionaries) "
                "occurs in the sources"
            )
        return {"hit": value}

    def medlane(self, data, done):
        return {"hit": max(medlane_hit([t + " " for t in data.token_texts], data.annotations), MEDLANE_FLOOR)}

    def stats(self, data):
        """(ratio, 1) for a sentence whose source has terms, (0, 0) for one without."""
        terms = data.terms or [[] for _ in data.hyps]
        return _ratio_rows(
            hit([hyp], [[(t, [tokenize(e) for e in exps]) for t, exps in ts]]) if ts else None
            for hyp, ts in zip(data.hyp_tokens, terms, strict=True)
        )

    def from_stats(self, summed, n):
        return _ratio_of(summed)


class CWR(Metric):
    name = "cwr"
    needs = frozenset({"common"})
    label = "medsimp-cwr-lemma"
    medlane_label = "medlane-count_common"
    order = 61

    def corpus(self, data, done=None):
        lang = output_language(data)
        if lang != "en":
            raise NotComputable(
                f"the common-word list (evaluate.common_words, else notes.common_words) and the "
                f"lemmatiser are English and the outputs are {lang}"
            )
        common = data.common
        return {"cwr": cwr(data.hyp_tokens, lambda w: lemmatize(w) in common)}

    def medlane(self, data, done):
        common = data.common | stop_words("en")
        value = medlane_cwr(data.token_texts, word_tokenizer().tokenize, lemmatize, common, data.pro_words)
        return {"cwr": max(value, MEDLANE_FLOOR)}

    def stats(self, data):
        """(ratio, 1) for a non-empty output, (0, 0) for an empty one (CWR leaves it out)."""
        common = data.common
        return _ratio_rows(
            cwr([hyp], lambda w: lemmatize(w) in common) if hyp else None for hyp in data.hyp_tokens
        )

    def from_stats(self, summed, n):
        return _ratio_of(summed)


class AScore(Metric):
    name = "ascore"
    needs = frozenset({"sources", "terms", "common", "references"})
    label = "medsimp-ascore-a2-b1.5"
    medlane_label = "medlane-ascore-floor1e-4"
    requires = ("medlane_bleu", "hit", "cwr")
    order = 62
    same_language = True  # through HIT

    def corpus(self, data, done=None):
        got = dict(done or {})
        for name, metric in (("medlane_bleu", None), ("hit", HIT), ("cwr", CWR)):
            if name not in got:
                if metric is None:
                    got.update(MedLaneBLEU().corpus(data))
                else:
                    got.update(metric().corpus(data))
        bleu, h, c = got["medlane_bleu"], got["hit"], got["cwr"]
        missing = [k for k, v in (("medlane_bleu", bleu), ("hit", h), ("cwr", c)) if v is None]
        if missing:
            raise NotComputable(
                f"combines MedLane BLEU, HIT and CWR; {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} null"
            )
        return {"ascore": ascore(bleu, h, c)}

    def stats(self, data):
        """MedLane BLEU's n-gram statistics, then HIT's and CWR's (ratio, counted) pairs."""
        return np.hstack([MedLaneBLEU().stats(data), HIT().stats(data), CWR().stats(data)])

    def from_stats(self, summed, n):
        bleu = MedLaneBLEU().from_stats(summed[:-4], n)
        return ascore(bleu, _ratio_of(summed[-4:-2]), _ratio_of(summed[-2:]))

    def medlane(self, data, done):
        """AScore of the floored MedLane BLEU, HIT and CWR (computed first: `requires`)."""
        bleu, h, c = (done[k] for k in ("medlane_bleu", "hit", "cwr"))
        assert bleu is not None and h is not None and c is not None  # floored, never null
        return {"ascore": ascore(bleu, h, c)}


def _ratio_rows(values) -> np.ndarray:
    """One (value, 1) row per sentence that counts, (0, 0) for one that does not (None)."""
    return np.array([[0.0, 0.0] if v is None else [v, 1.0] for v in values], dtype=float).reshape(-1, 2)


def _ratio_of(summed) -> float:
    """The mean over the sentences that count, from summed `_ratio_rows`; 0.0 when none does
    (never in the paired bootstrap: a sentence without a value leaves the metric out of it)."""
    return float(summed[0] / summed[1]) if summed[1] else 0.0


def ascore(bleu: float, hit: float, cwr: float, alpha: float = 2.0, beta: float = 1.5) -> float:
    """AScore = (1 + a^2 + b^2) / (a^2/BLEU + b^2/HIT + 1/CWR); a metric that is 0 gets
    1e-8 added (the paper). MedLane compat mode floors its inputs at 1e-4 first."""
    b, h, c = (float(x) if float(x) > 0 else float(x) + ZERO_SHIFT for x in (bleu, hit, cwr))
    a2, b2 = alpha * alpha, beta * beta
    return (1.0 + a2 + b2) / (a2 / b + b2 / h + 1.0 / c)


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
    try:
        return bool(regex.findall(pattern, text, timeout=REGEX_TIMEOUT))
    except (regex.error, TimeoutError):
        return pattern in text


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
