"""The one metric interface (after sacrebleu's `Metric`): a metric is a class in one family module.

A `Metric` declares its `name` (what `--select` takes), the `keys` it reports (the first is the
headline), its `scale`, `direction` ("higher", "lower" or None), the inputs it `needs`, the
implementation `label` and tokenization named in the signature, and computes `corpus(data)`.
Metrics with a per-sentence reading also give `sentence(data, i)`; `stats(data)` (one row of
sufficient statistics per sentence) and `from_stats(summed, n)` let the paired bootstrap resample
any of them exactly as sacrebleu resamples BLEU. Subclassing registers the metric (see
`medsimp.metrics.registry`): adding a metric touches one file.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

import numpy as np

from medsimp.text.medlane_refs import DEFAULT_PREPARATION
from medsimp.text.words import lower_tokens as tokenize
from medsimp.text.words import word_tokenizer

Tokens = list[str]

# Every input a metric may need: sources, references, terms (HIT's source terms),
# common (the common-word list), model (a local model folder), java (METEOR's jar), resource
# (something the caller loads from its settings and hands over in `ScoringOptions.resources`: a
# trained classifier, a language model, a concept linker; see `Metric.resource`).
INPUTS = frozenset({"sources", "references", "terms", "common", "model", "java", "resource"})


class MetricUnavailable(RuntimeError):
    """A metric whose external tool (e.g. Java for METEOR) is missing."""


class NotComputable(ValueError):
    """A metric that is undefined on these inputs (reported null, with this reason)."""


def ngrams(tokens: Sequence[str], n: int) -> Counter:
    """Counts of the n-grams (tuples) of `tokens`, in order of first occurrence."""
    return Counter(zip(*(tokens[i:] for i in range(n))))


def ngram_codes(lines: Sequence[str], max_order: int, groups: int) -> tuple[np.ndarray, list[tuple]]:
    """The whitespace tokens' n-grams of every line, n = 1..max_order, as integers for numpy
    (SARI's and BLEU's counts over a whole corpus at once, issue 57): (each line's number of
    tokens, [(line of each n-gram, its code, size) per order]). Equal n-grams have equal codes
    across lines, every code is below `size`, and `group * size + code` fits in int64 for any
    group below `groups`. A token's code is its id; an n-gram's, the (n-1)-gram's code times the
    vocabulary's size plus its last token's id, or, when that could pass the bound, the number
    of its ((n-1)-gram code, last token id) pair among the distinct pairs (then `size` is their
    count, at most the number of tokens). An n-gram never spans two lines."""
    tokens = [line.split() for line in lines]
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    flat = [t for line in tokens for t in line]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(flat))}
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    line_of = np.repeat(np.arange(len(lines), dtype=np.int64), lengths)
    width = max(len(vocab), 1)
    codes, size, out = ids, width, []
    for order in range(1, max_order + 1):
        starts = max(len(ids) - order + 1, 0)
        if order > 1:  # the n-gram starting at p: the (n-1)-gram at p, then the token at p + n - 1
            if size * width * max(groups, 1) < 1 << 62:
                codes, size = codes[:starts] * width + ids[order - 1 :], size * width
            else:  # dense codes: the distinct (prefix, last token) pairs, numbered
                pairs = np.stack([codes[:starts], ids[order - 1 :]], axis=1)
                found, numbered = np.unique(pairs, axis=0, return_inverse=True)
                codes, size = numbered.reshape(-1), max(len(found), 1)
        if size * max(groups, 1) >= 1 << 62:  # more lines times tokens than memory holds
            raise ValueError(f"{groups} groups of n-gram codes below {size} do not fit in int64")
        inside = line_of[:starts] == line_of[order - 1 :]  # the n-gram's tokens on one line
        out.append((line_of[:starts][inside], codes[:starts][inside], size))
    return lengths, out


@dataclass(frozen=True)
class ScoringOptions:
    """The settings the metrics read, typed: what `medsimp.evaluation.scorer.Scorer` derives from
    params `evaluate` (and the flags that override it) for one scoring call. The defaults are
    the params' defaults; a metric reads only its own fields.

    `lang`, `src_lang` (None: `lang`): the outputs' and the sources' languages;
    `allow_cross_lingual`: compute source-vs-output metrics across languages, flagged;
    `rouge_tokenizer`: ROUGE's tokens (`nltk` or `rouge-score`); `meteor`: run METEOR;
    `bertscore_model`: BERTScore's model folder (None: not computed), `bertscore_english_only`:
    that model is the English MiniLM; `medlane_references`: compat mode's reference
    preparation; `dictionary_unfit`: why the abbreviation dictionary does not fit the data (HIT's
    note); `resources`: what the caller loaded for a measure, by metric name (`Metric.resource`).
    """

    lang: str = "en"
    src_lang: str | None = None
    allow_cross_lingual: bool = False
    rouge_tokenizer: str = "nltk"
    meteor: bool = True
    bertscore_model: str | None = None
    bertscore_english_only: bool = False
    medlane_references: str = DEFAULT_PREPARATION
    dictionary_unfit: str | None = None
    resources: Mapping[str, Any] = field(default_factory=dict)

    def replace(self, **changes: Any) -> ScoringOptions:
        return dataclasses.replace(self, **changes)


@dataclass
class Inputs:
    """One system's evaluation data, prepared once and shared by every metric.

    `hyps`: raw outputs; `sources`: raw sources (None when not given); `references`: raw
    references with `abbr[full]` replaced by the full form; the token views are the default
    mode's lowercased NLTK Treebank tokens. `terms[i]`: sentence i's source terms with their
    accepted expansions; `common`: the common-word list; `options`: the settings the
    metrics read (`ScoringOptions`).
    """

    hyps: list[str]
    references: list[list[str]]
    sources: list[str] | None = None
    terms: list[list[tuple[str, list[str]]]] = field(default_factory=list)
    common: set[str] = field(default_factory=set)
    options: ScoringOptions = field(default_factory=ScoringOptions)
    # what a metric computed once for this data and reads again (SARI's per-sentence table)
    # (not an init field: `dataclasses.replace` of other sentences starts empty)
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.hyps)

    @functools.cached_property
    def hyp_tokens(self) -> list[Tokens]:
        return [tokenize(h) for h in self.hyps]

    @functools.cached_property
    def ref_tokens(self) -> list[list[Tokens]]:
        return [[tokenize(r) for r in rs] for rs in self.references]

    @functools.cached_property
    def source_tokens(self) -> list[Tokens] | None:
        return None if self.sources is None else [tokenize(s) for s in self.sources]

    def subset(self, idx: Sequence[int]) -> Inputs:
        """The same data restricted to sentences `idx` (token views recomputed from the cache)."""
        return Inputs(
            [self.hyps[i] for i in idx],
            [self.references[i] for i in idx],
            None if self.sources is None else [self.sources[i] for i in idx],
            [self.terms[i] for i in idx] if self.terms else [],
            self.common,
            self.options,
        )


@dataclass
class MedlaneInputs:
    """One system's data as MedLane compat mode reads it (the authors' `bleu_eval_new.get_score`).

    `hyps`: the stripped outputs; `references`: each record's first `MEDLANE_REFERENCES` prepared
    references (`medsimp.text.medlane_refs`), stripped; `annotations`: each record's
    {abbreviation: expansion} of every reference line; `common` and `pro_words`: CWR's common
    words (with English stop words) and the dictionary's terms; `meteor`: whether METEOR runs.
    """

    hyps: list[str]
    references: list[list[str]]
    annotations: list[list[dict[str, str]]]
    common: set[str]
    pro_words: set[str]
    meteor: bool = True

    @functools.cached_property
    def token_texts(self) -> list[str]:
        """Each output as the authors tokenize it for HIT and CWR: word tokens joined by spaces."""
        return [" ".join(word_tokenizer().tokenize(h)) for h in self.hyps]


MEDLANE_REFERENCES = 4  # bleu_eval_new.py writes ref0..ref3.txt for nlg-eval

REGISTRY: dict[str, type[Metric]] = {}


class Metric:
    """Base class of every metric; see the module docstring."""

    name: ClassVar[str]
    keys: ClassVar[tuple[str, ...]] = ()  # reported keys; () = (name,)
    scale: ClassVar[str] = "0-1"
    direction: ClassVar[str | None] = "higher"
    needs: ClassVar[frozenset[str]] = frozenset({"references"})
    label: ClassVar[str]  # the implementation, in the signature
    dist: ClassVar[str | None] = None  # the distribution whose version is recorded (None = medsimp)
    tokenizer: ClassVar[str] = "nltk-treebank-lc"
    requires: ClassVar[tuple[str, ...]] = ()  # metrics whose values this one combines (AScore)
    has_sentence: ClassVar[bool] = True
    order: ClassVar[float] = 100.0  # position in tables and the selection list
    # Listed among "all metrics" only for these output languages (None: every language); a
    # language formula such as French's `kandel_moles`. Asked for by name elsewhere: null + note.
    languages: ClassVar[tuple[str, ...] | None] = None
    # Compares the output with its source: meaningless when they are in different languages
    # (refused, or computed and flagged with `allow_cross_lingual`).
    same_language: ClassVar[bool] = False
    # A measure (EASSE's quality estimation, the copy and style-transfer measures): computed with
    # `--measures` / `extras`, reported apart from the metrics, and not among "all metrics".
    measure: ClassVar[bool] = False
    # MedLane compat mode (the authors' `bleu_eval_new.py`): the implementation named in that mode's
    # signature and the distribution whose version is recorded; None: not part of that mode.
    medlane_label: ClassVar[str | None] = None
    medlane_dist: ClassVar[str | None] = None
    # needs "resource": `options.resources[name]` holds it; this says how to configure it.
    not_configured: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            if cls.name in REGISTRY:
                raise TypeError(f"two metrics named {cls.name!r}")
            REGISTRY[cls.name] = cls
            if not cls.keys:
                cls.keys = (cls.name,)

    def signature(self, data: Inputs | None = None, mode: str = "default") -> str | None:
        """This metric's part of the evaluation signature, in sacrebleu's shape: its name, its
        implementation with its settings, the version (`bleu:sacrebleu-bleu[...]@2.6.0`). In
        MedLane compat mode a metric with that mode names its `medlane_label`; None for one not
        part of the authors' scorer."""
        if mode == "medlane" and self.medlane_label is not None:
            return f"{self.name}:{self.medlane_label}@{dist_version(self.medlane_dist)}"
        if mode == "medlane" and not self.measure:
            return None
        return f"{self.name}:{self.signature_label(data)}@{dist_version(self.distribution(data))}"

    def signature_label(self, data: Inputs | None = None) -> str:
        """`label` plus the tokenization: `name:label+tok-...@version` in the signature."""
        return f"{self.label}+tok-{self.tokenizer}"

    def distribution(self, data: Inputs | None = None) -> str | None:
        """The distribution whose version the signature records (None = medsimp)."""
        return self.dist

    def corpus(self, data: Inputs, done: dict[str, float | None] | None = None) -> dict[str, float | None]:
        """{key: value} for every key in `keys`; `done`: values already computed (AScore's inputs)."""
        raise NotImplementedError

    def medlane(self, data: MedlaneInputs, done: dict[str, float | None]) -> dict[str, float | None]:
        """{key: value} as MedLane compat mode computes it (metrics with a `medlane_label`)."""
        raise NotImplementedError

    def resource(self, data: Inputs) -> Any:
        """What the caller loaded for this metric (`options.resources[name]`): its object, or
        NotComputable with `not_configured` when the settings name none."""
        found = data.options.resources.get(self.name)
        if found is None:
            raise NotComputable(
                self.not_configured or f"{self.name} needs a resource the caller did not load"
            )
        return found

    def sentence(self, data: Inputs, i: int) -> float | None:
        """The headline value of sentence `i` alone (default: `corpus` on that one sentence)."""
        return self.corpus(data.subset([i]))[self.keys[0]]

    def stats(self, data: Inputs) -> np.ndarray:
        """Per-sentence sufficient statistics, shape (n, k); default: the sentence values."""
        return np.array([[self.sentence(data, i)] for i in range(len(data))], dtype=float)

    def from_stats(self, summed: np.ndarray, n: int) -> float:
        """The corpus score from statistics summed over `n` sentences; default: the mean."""
        return float(summed[0]) / n


def check_needs(metric: Metric, data: Inputs) -> None:
    """Raise NotComputable when a needed input is absent, when the metric is not defined for
    the output language, or when it compares source and output across languages (unless
    `allow_cross_lingual`; see `cross_lingual`)."""
    if "sources" in metric.needs and data.sources is None:
        raise NotComputable("needs sources (--src)")
    lang = output_language(data)
    if metric.languages is not None and lang not in metric.languages:
        raise NotComputable(
            f"{metric.name} is defined for {'/'.join(metric.languages)} text; the outputs are {lang} (--lang)"
        )
    if cross_lingual(metric, data) and not data.options.allow_cross_lingual:
        raise NotComputable(
            f"the sources are {source_language(data)} and the outputs {lang}: {metric.name} compares "
            "output and source words, which is meaningless across languages "
            "(--allow-cross-lingual computes it anyway, flagged)"
        )


def output_language(data: Inputs) -> str:
    """The outputs' (and references') language: `options.lang`, default en."""
    return data.options.lang or "en"


def source_language(data: Inputs) -> str:
    """The sources' language: `options.src_lang`, default the output language."""
    return data.options.src_lang or output_language(data)


def cross_lingual(metric: Metric, data: Inputs) -> bool:
    """Whether `metric` compares outputs with sources written in another language."""
    return metric.same_language and source_language(data) != output_language(data)


@functools.cache
def dist_version(dist: str | None) -> str:
    """The installed version of distribution `dist` (None: medsimp), `unknown` when not installed."""
    try:
        return version(dist or "medsimp")
    except PackageNotFoundError:
        return "unknown"
