"""Cao et al. (2020, ACL, expertise style transfer on the MSD manuals) measures of an output set.

- style accuracy: share of outputs a trained expert/layman classifier puts in the target style
  (default: layman = label 1, the consumer version). The classifier is ours (the paper's exact
  one was not readable here): scikit-learn TF-IDF over word 1-2-grams (lowercased, sklearn's
  default word pattern) + L2 logistic regression (C = 1, lbfgs, `random_state` 13), trained on
  text + label rows (a builder's `sentences` train split, e.g. builders/msd). lbfgs draws no
  random numbers, so the same rows give the same classifier.
- perplexity: corpus perplexity of the outputs under a causal language model (a local
  transformers folder): exp(total NLL / total predicted tokens), each output scored alone,
  the tokenizer's BOS token prepended when it has one (so every output token is predicted),
  cut to the model's context length.
- masked edit distance: per sentence, word-level Levenshtein distance (insert, delete,
  substitute = 1) between the output and its input after every UMLS concept span (QuickUMLS,
  `pipelines/umls.py`) is replaced by the one token `MASK`; averaged over sentences. Lowercased
  NLTK tokens, as the other measures against the input.
- self-BLEU (BLEU of the outputs against their input) is `input_bleu` of
  `training/simplification_measures.py`: one implementation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

MASK = "<concept>"
LAYMAN = 1  # MSD's label: 0 = expert (professional), 1 = layman (consumer)
SEED = 13


def style_corpus(path: str | Path) -> tuple[list[str], list[int]]:
    """(texts, labels) of a text+label parquet: a file, a folder of parquet files, or a builder
    folder (`<path>/sentences`); in a folder holding `train-*.parquet` only those are read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if (path / "sentences").is_dir():
        path = path / "sentences"
    if path.is_dir():
        files = sorted(path.glob("train-*.parquet")) or sorted(path.glob("*.parquet"))
    else:
        files = [path] if path.is_file() else []
    if not files:
        raise FileNotFoundError(f"no parquet files at {path}")
    table = pa.concat_tables([pq.read_table(f, columns=["text", "label"]) for f in files])
    texts, labels = table.column("text").to_pylist(), table.column("label").to_pylist()
    if len(set(labels)) < 2:
        raise ValueError(f"{path}: the style classifier needs both labels, found {sorted(set(labels))}")
    return texts, [int(x) for x in labels]


def train_style_classifier(texts: Sequence[str], labels: Sequence[int]) -> Any:
    """TF-IDF word 1-2-grams + logistic regression, fitted on the rows in the given order."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    classifier = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2)),
        LogisticRegression(C=1.0, solver="lbfgs", max_iter=1000, random_state=SEED),
    )
    return classifier.fit(list(texts), list(labels))


def style_accuracy(classifier: Any, outputs: Sequence[str], target: int = LAYMAN) -> float | None:
    """Share of outputs classified as `target`; None for no outputs."""
    if not outputs:
        return None
    predicted = classifier.predict(list(outputs))
    return sum(int(p) == target for p in predicted) / len(outputs)


def load_causal_lm(path: str | Path) -> tuple[Any, Any]:
    """(tokenizer, model in eval mode) of a local transformers causal-LM folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (Path(path) / "config.json").is_file():
        raise OSError(f"{path} is not a transformers model folder (no config.json)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
    except ValueError as exc:  # transformers explains over several lines: one line here
        raise OSError(f"{path}: not a loadable causal LM ({' '.join(str(exc).split())[:160]})") from None
    return tokenizer, model.eval()


def corpus_perplexity(tokenizer: Any, model: Any, texts: Iterable[str]) -> float | None:
    """exp(total NLL / total predicted tokens) over the texts; None when nothing is predicted."""
    import torch

    limit = getattr(model.config, "n_positions", None) or getattr(
        model.config, "max_position_embeddings", None
    )
    total, count = 0.0, 0
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if tokenizer.bos_token_id is not None:
            ids = [tokenizer.bos_token_id, *ids]
        ids = ids[:limit] if limit else ids
        if len(ids) < 2:
            continue
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        total -= float(logp.gather(1, torch.tensor(ids[1:]).unsqueeze(1)).sum())
        count += len(ids) - 1
    return math.exp(total / count) if count else None


def masked_tokens(
    text: str, spans: Iterable[tuple[int, int]], tokenize: Callable[[str], list[str]]
) -> list[str]:
    """Tokens of `text` with each concept span (character [start, end); overlapping spans merge)
    replaced by one `MASK` token."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    tokens, at = [], 0
    for start, end in merged:
        tokens += [*tokenize(text[at:start]), MASK]
        at = end
    return tokens + tokenize(text[at:])


def word_edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance over tokens (insertion, deletion, substitution cost 1)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def masked_edit_distance(
    sources: Sequence[str],
    outputs: Sequence[str],
    spans: Callable[[str], list[tuple[int, int]]],
    tokenize: Callable[[str], list[str]],
) -> float | None:
    """Mean over sentence pairs of the word edit distance between output and input, concepts masked."""
    if not sources:
        return None
    distances = [
        word_edit_distance(masked_tokens(o, spans(o), tokenize), masked_tokens(s, spans(s), tokenize))
        for s, o in zip(sources, outputs, strict=True)
    ]
    return sum(distances) / len(distances)
