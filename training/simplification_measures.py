"""Reference-free simplification measures per system, as EASSE's quality estimation reports them
(Alva-Manchego et al. 2019, `easse/quality_estimation.py`): each is a per-sentence value
between the source and the output, averaged over sentences.

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

from medsimp.metrics.rouge import lcs_length

ZIPF_CEILING = 8.0  # above wordfreq's highest Zipf value ("the" is ~7.7)
MEASURES = (
    "compression_ratio",
    "sentence_splits",
    "levenshtein_similarity",
    "exact_copies",
    "additions_proportion",
    "deletions_proportion",
    "lexical_complexity",
    "lcs_distance",
    "input_bleu",
)


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
    from medsimp.metrics.bleu import corpus_bleu_n

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
    import numpy as np
    from wordfreq import zipf_frequency

    values = [
        ZIPF_CEILING - zipf_frequency(t, language) for t in tokens if t.isalpha() and t not in stopwords
    ]
    return float(np.quantile(values, 0.75)) if values else None


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def measures(sources: Sequence[str], outputs: Sequence[str], language: str = "en") -> dict[str, float | None]:
    """Every measure of `MEASURES`, averaged over the sentence pairs (None when undefined)."""
    from medsimp.metrics.scoring import tokenize
    from medsimp.text.multilingual import split_sentences
    from medsimp.text.stopwords import stop_words

    stop = stop_words(language)
    rows: dict[str, list[float | None]] = {m: [] for m in MEASURES if m != "input_bleu"}
    tokens = []
    for src, out in zip(sources, outputs, strict=True):
        s_tok, o_tok = tokenize(src), tokenize(out)
        tokens.append((s_tok, o_tok))
        rows["compression_ratio"].append(len(out) / len(src) if src else None)
        n_src = len(split_sentences(src, language))
        rows["sentence_splits"].append(len(split_sentences(out, language)) / n_src if n_src else None)
        rows["levenshtein_similarity"].append(levenshtein_similarity(src, out))
        rows["exact_copies"].append(float(src == out))
        add, dele = additions_deletions(s_tok, o_tok)
        rows["additions_proportion"].append(add)
        rows["deletions_proportion"].append(dele)
        rows["lexical_complexity"].append(lexical_complexity(o_tok, language, stop))
        rows["lcs_distance"].append(lcs_distance(s_tok, o_tok))
    result = {m: _mean(v) for m, v in rows.items()}
    result["input_bleu"] = input_bleu([s for s, _ in tokens], [o for _, o in tokens]) if tokens else None
    return result
