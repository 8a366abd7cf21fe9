"""Reference-free simplification measures, as EASSE's quality estimation reports them
(Alva-Manchego et al. 2019, `easse/quality_estimation.py`): each is a per-sentence value
between the source and the output, averaged over sentences. They are measures
(`Metric.measure`): computed with `--measures`, reported beside the metrics.

- compression ratio: output characters / source characters
- sentence splits: output sentences / source sentences (the toolkit's sentence splitter)
- Levenshtein similarity: character Indel similarity (python-Levenshtein's `ratio`):
  2 * LCS / (len(source) + len(output))
- exact copies: share of outputs equal to their source
- additions / deletions proportions: lowercased NLTK tokens added (multiset output - source) /
  output tokens; deleted (source - output) / source tokens
- lexical complexity: per sentence, the 3rd quartile (numpy's linear quantile, as EASSE) of
  its content words' (alphabetic, not in spaCy's stop words for the language) complexity
  `8 - zipf_frequency(word, lang)` from wordfreq (higher = rarer words); sentences without
  content words are skipped.

Two copy measures of MultiCochrane (Joseph et al. 2023), between the output and its complex input:
- LCS distance: per sentence, 1 - LCS(output tokens, input tokens) / max(len(output), len(input))
  over lowercased NLTK tokens (0 = the input copied, 1 = no token in common in order; 0 for
  two empty sides), averaged. The paper's exact normalisation was not reachable: this is our
  reading (docs/fidelity.md).
- input BLEU: corpus BLEU-4 (unsmoothed, as `medlane_bleu` of medsimp/metrics/bleu.py) of the outputs with
  the complex input as the only reference (higher = closer to a copy).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from medsimp.metrics.base import Inputs, Metric, Tokens, output_language
from medsimp.metrics.bleu import corpus_bleu_n
from medsimp.metrics.rouge import lcs_length
from medsimp.text.stopwords import stop_words

ZIPF_CEILING = 8.0  # above wordfreq's highest Zipf value ("the" is ~7.7)


class _Measure(Metric):
    """A mean over (source, output) pairs of `value(data, i)`; None where it is undefined."""

    measure = True
    direction = None
    needs = frozenset({"sources"})
    tokenizer = "nltk-treebank-lc"
    has_sentence = False  # reported per system, beside the metrics
    order = 200

    def value(self, data: Inputs, i: int) -> float | None:
        raise NotImplementedError

    def corpus(self, data, done=None):
        return {self.name: _mean([self.value(data, i) for i in range(len(data))])}


def _pair(data: Inputs, i: int) -> tuple[Tokens, Tokens]:
    """Sentence i's (source tokens, output tokens)."""
    assert data.source_tokens is not None  # needs sources
    return data.source_tokens[i], data.hyp_tokens[i]


class CompressionRatio(_Measure):
    name = "compression_ratio"
    scale = "ratio: output / source characters"
    label = "easse-qe-compression-ratio-chars"
    tokenizer = "chars"
    order = 200

    def value(self, data, i):
        src = data.sources[i] if data.sources else ""
        return len(data.hyps[i]) / len(src) if src else None


class SentenceSplits(_Measure):
    name = "sentence_splits"
    scale = "ratio: output / source sentences"
    label = "easse-qe-sentence-splits"
    tokenizer = "medsimp-sentences"
    order = 201

    def value(self, data, i):
        from medsimp.text.multilingual import split_sentences

        lang = output_language(data)
        n_src = len(split_sentences(data.sources[i] if data.sources else "", lang))
        return len(split_sentences(data.hyps[i], lang)) / n_src if n_src else None


class LevenshteinSimilarity(_Measure):
    name = "levenshtein_similarity"
    label = "easse-qe-levenshtein-indel-ratio"
    tokenizer = "chars"
    order = 202

    def value(self, data, i):
        return levenshtein_similarity(data.sources[i] if data.sources else "", data.hyps[i])


class ExactCopies(_Measure):
    name = "exact_copies"
    label = "easse-qe-exact-copies"
    tokenizer = "none"
    order = 203

    def value(self, data, i):
        return float((data.sources[i] if data.sources else None) == data.hyps[i])


class AdditionsProportion(_Measure):
    name = "additions_proportion"
    label = "easse-qe-additions-proportion"
    order = 204

    def value(self, data, i):
        return additions_deletions(*_pair(data, i))[0]


class DeletionsProportion(_Measure):
    name = "deletions_proportion"
    label = "easse-qe-deletions-proportion"
    order = 205

    def value(self, data, i):
        return additions_deletions(*_pair(data, i))[1]


class LexicalComplexity(_Measure):
    name = "lexical_complexity"
    scale = "8 - Zipf: 0-8, higher = rarer words"
    label = "easse-qe-lexical-complexity-q3-wordfreq"
    dist = "wordfreq"
    order = 206

    def value(self, data, i):
        lang = output_language(data)
        return lexical_complexity(data.hyp_tokens[i], lang, stop_words(lang))


class LcsDistance(_Measure):
    name = "lcs_distance"
    scale = "0-1, 0 = the input copied"
    label = "medsimp-lcs-token-1-minus-lcs-over-max"
    order = 210

    def value(self, data, i):
        return lcs_distance(*_pair(data, i))

    def signature_label(self, data=None):
        return self.label


class InputBleu(_Measure):
    name = "input_bleu"
    scale = "0-1, 1 = the input copied"
    label = "medsimp-corpus-bleu4-vs-input+nosmooth"
    order = 211

    def corpus(self, data, done=None):
        if not len(data):
            return {self.name: None}
        assert data.source_tokens is not None  # needs sources
        return {self.name: input_bleu(data.source_tokens, data.hyp_tokens)}

    def signature_label(self, data=None):
        return self.label


def levenshtein_similarity(a: str, b: str) -> float:
    """python-Levenshtein's `ratio`: 1 - Indel distance / (len(a) + len(b)); 1.0 for two empty strings."""
    if not a and not b:
        return 1.0
    return 2 * lcs_length(a, b) / (len(a) + len(b))


def lcs_distance(source: Sequence[str], output: Sequence[str]) -> float:
    """1 - LCS / max(len(source), len(output)) over tokens; 0.0 for two empty sides."""
    longest = max(len(source), len(output))
    return 1 - lcs_length(source, output) / longest if longest else 0.0


def input_bleu(sources: Sequence[Sequence[str]], outputs: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU-4 of the outputs against their complex input as the only reference."""
    return corpus_bleu_n([list(o) for o in outputs], [[list(s)] for s in sources])[3]


def additions_deletions(source: Sequence[str], output: Sequence[str]) -> tuple[float, float]:
    """(added tokens / output tokens, deleted tokens / source tokens), multisets; 0 for empty sides."""
    src, out = Counter(source), Counter(output)
    added = sum((out - src).values()) / len(output) if output else 0.0
    deleted = sum((src - out).values()) / len(source) if source else 0.0
    return added, deleted


def lexical_complexity(
    tokens: Sequence[str], language: str, stopwords: set[str] | frozenset[str]
) -> float | None:
    """3rd quartile of `8 - zipf_frequency` over the content words; None without any."""
    from wordfreq import zipf_frequency

    values = [
        ZIPF_CEILING - zipf_frequency(t, language) for t in tokens if t.isalpha() and t not in stopwords
    ]
    return float(np.quantile(values, 0.75)) if values else None


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None
