"""Cao et al. (2020, ACL, expertise style transfer on the MSD manuals) measures of an output set.

- style accuracy (§4.3: "We train two classifiers on the training set of each dataset using
  fasttext"): share of outputs a trained expert/layman classifier puts in the target style:
  layman (label 1, the consumer version) for E2L outputs, expert (label 0) for L2E outputs
  (`evaluate.style_direction`). Default classifier (`evaluate.style_classifier: fasttext`):
  a supervised fastText model (fasttext-wheel 0.9.2; fastText's own supervised defaults: dim
  100, lr 0.1, 5 epochs, word unigrams, softmax loss) trained on the text + label rows of one
  dataset (a builder's `sentences` train split, e.g. builders/msd), one thread and seed 13 so
  the same rows give the same model. Our reading of "two classifiers": one per dataset (MSD,
  SimpWiki), each scoring both directions. Option `tfidf_logreg` (medsimp's earlier stand-in):
  scikit-learn TF-IDF over word 1-2-grams + L2 logistic regression (C = 1, lbfgs,
  `random_state` 13).
- perplexity: corpus perplexity of the outputs under a causal language model (a local
  transformers folder): exp(total NLL / total predicted tokens), each output scored alone,
  the tokenizer's BOS token prepended when it has one (so every output token is predicted),
  cut to the model's context length.
- masked edit distance (§3.2, Table 3 "ED", Fig. 4b): Levenshtein distance (insert, delete,
  substitute = 1) between the two sentences of a *parallel gold* pair (the expert input and its
  layman reference; `gold_masked_edit_distance`), after every UMLS concept span (QuickUMLS,
  `pipelines/text/umls.py`) is replaced by one `MASK` unit; averaged over pairs. Default unit:
  characters (`unit="char"`; MSD's 139.73 in Table 3 is a character count: its sentences are
  about 20-30 words), the text as written. `unit="word"`: lowercased NLTK tokens. Option
  (medsimp's earlier measure): the output against its input (`masked_edit_distance`, word level).
- self-BLEU (BLEU of the outputs against their input) is `input_bleu` of
  `medsimp/metrics/quality.py`: one implementation.

The three are measures (`Metric.measure`, computed with `--measures`) whose resource the caller
loads from its settings (`medsimp.evaluation.scorer.Scorer`: params `evaluate`) and hands over as a
`Loaded` in `ScoringOptions.resources`; without one they are null with what to set.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medsimp.metrics.base import Inputs, Metric, NotComputable, output_language, tokenize

MASK = "<concept>"
LAYMAN = 1  # MSD's label: 0 = expert (professional), 1 = layman (consumer)
SEED = 13


@dataclass(frozen=True)
class Loaded:
    """A measure's resource as the caller loaded it: the object, the implementation named in the
    signature (`label`, with the version of `dist`), and the settings it is used with."""

    value: Any
    label: str
    dist: str | None
    settings: dict[str, str] = field(default_factory=dict)


class _StyleMeasure(Metric):
    measure = True
    direction = None
    needs = frozenset({"resource"})
    has_sentence = False

    def loaded(self, data: Inputs) -> Loaded:
        found = self.resource(data)
        assert isinstance(found, Loaded)
        return found

    def signature_label(self, data=None):
        return self.loaded(data).label if data is not None else self.name

    def distribution(self, data: Inputs | None = None) -> str | None:
        return self.loaded(data).dist if data is not None else None


class StyleAccuracy(_StyleMeasure):
    name = "style_accuracy"
    label = "style-classifier-target-share"  # the loaded classifier names itself in the signature
    scale = "0-1, share classified as the target style (layman for e2l, expert for l2e)"
    not_configured = "set evaluate.style_data (text+label rows, e.g. builders/msd)"
    order = 220

    def corpus(self, data, done=None):
        found = self.loaded(data)
        target = STYLE_TARGET[found.settings["direction"]]
        return {self.name: style_accuracy(found.value, data.hyps, target)}


class Perplexity(_StyleMeasure):
    name = "perplexity"
    label = "causal-lm-exp-nll-per-token"  # the loaded model names itself in the signature
    scale = "perplexity: >= 1, lower = more fluent under the chosen LM"
    not_configured = "set evaluate.perplexity_model (a local transformers causal-LM folder)"
    order = 221

    def corpus(self, data, done=None):
        tokenizer, model = self.loaded(data).value
        return {self.name: corpus_perplexity(tokenizer, model, data.hyps)}


class MaskedEditDistance(_StyleMeasure):
    name = "masked_edit_distance"
    label = "levenshtein-umls-masked"  # the loaded index names itself in the signature
    scale = (
        "edits (characters by default) between the parallel gold pair, or output and input: "
        "mean per sentence (UMLS concepts masked)"
    )
    needs = frozenset({"resource", "sources"})
    not_configured = "set evaluate.umls_index (the umls stage's index, e.g. out/umls)"
    order = 222

    def corpus(self, data, done=None):
        found = self.loaded(data)
        linker, language = found.value, output_language(data)
        if not linker.has_language(language):
            raise NotComputable(f"the UMLS index has no {language} matcher")
        spans = lambda t: [(c["start"], c["end"]) for c in linker.link(t, language)]  # noqa: E731
        sources = data.sources or []
        if found.settings["pair"] == "output":
            return {self.name: masked_edit_distance(sources, data.hyps, spans, tokenize)}
        gold = [(s, rs[0]) for s, rs in zip(sources, data.references, strict=True) if rs]
        value = gold_masked_edit_distance(
            [s for s, _ in gold], [r for _, r in gold], spans, tokenize, found.settings["unit"]
        )
        return {self.name: value}


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


EXPERT = 0
STYLE_TARGET = {"e2l": LAYMAN, "l2e": EXPERT}  # direction -> the style its outputs should have


class FastTextStyle:
    """A supervised fastText expert/layman classifier with `predict(texts) -> labels`."""

    def __init__(self, model: Any):
        self.model = model

    def predict(self, texts: Sequence[str]) -> list[int]:
        labels, _ = self.model.predict([" ".join(t.split()) for t in texts])
        return [int(label[0].removeprefix("__label__")) for label in labels]


def train_fasttext_classifier(texts: Sequence[str], labels: Sequence[int]) -> FastTextStyle:
    """fastText supervised (its defaults; one thread, seed 13: the same rows give the same
    model), trained on the rows in the given order."""
    import fasttext

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.txt")
        with open(path, "w", encoding="utf-8") as fh:
            for text, label in zip(texts, labels, strict=True):
                fh.write(f"__label__{int(label)} {' '.join(str(text).split())}\n")
        model = fasttext.train_supervised(input=path, thread=1, seed=SEED, verbose=0)
    return FastTextStyle(model)


def train_style_classifier(texts: Sequence[str], labels: Sequence[int], kind: str = "fasttext") -> Any:
    """The style classifier `kind` (fasttext | tfidf_logreg) fitted on the rows in the given order."""
    if kind == "fasttext":
        return train_fasttext_classifier(texts, labels)
    if kind != "tfidf_logreg":
        raise ValueError(f"style classifier must be fasttext or tfidf_logreg, got {kind!r}")
    return train_tfidf_classifier(texts, labels)


def train_tfidf_classifier(texts: Sequence[str], labels: Sequence[int]) -> Any:
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


def masked_chars(text: str, spans: Iterable[tuple[int, int]]) -> list[str]:
    """The characters of `text` with each concept span (overlapping spans merge) one `MASK` unit."""
    return masked_tokens(text, spans, list)


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


def gold_masked_edit_distance(
    sources: Sequence[str],
    references: Sequence[str],
    spans: Callable[[str], list[tuple[int, int]]],
    tokenize: Callable[[str], list[str]],
    unit: str = "char",
) -> float | None:
    """Table 3's ED: mean over parallel gold pairs (expert sentence, its layman reference) of the
    edit distance with concepts masked; `unit` char (each character one unit) or word (`tokenize`)."""
    if unit not in ("char", "word"):
        raise ValueError(f"masked edit distance unit must be char or word, got {unit!r}")
    if not sources:
        return None
    units = (
        (lambda t: masked_chars(t, spans(t)))
        if unit == "char"
        else (lambda t: masked_tokens(t, spans(t), tokenize))
    )
    distances = [word_edit_distance(units(s), units(r)) for s, r in zip(sources, references, strict=True)]
    return sum(distances) / len(distances)
