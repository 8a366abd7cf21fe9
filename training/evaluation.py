"""The typed evaluation API: `score(...)` -> `Evaluation` (scores, scales, signature).

    from medsimp.training.evaluation import score
    result = score(["the patient has high blood pressure ."], [["the patient has high blood pressure ."]],
                   sources=["pt has htn ."], select=["bleu", "sari"])
    result.scores["sari"], result.scales["sari"], result.signature

`medsimp evaluate` is a thin wrapper over `Scorer` and `signature` (docs/metrics.md).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

# One declared scale per reported value (docs/metrics.md). The numbers keep the scales
# the papers and libraries report them on; nothing is rescaled.
SCALES: dict[str, str] = {
    **{
        k: "0-1"
        for k in (
            "bleu",
            "bleu_1",
            "bleu_2",
            "bleu_3",
            "bleu_4",
            "meteor",
            "rouge_1",
            "rouge_2",
            "rouge_l",
            "bertscore_f1",
            "hit",
            "cwr",
            "ascore",
        )
    },
    "cider": "0-10",
    **{k: "0-100" for k in ("sari", "sari_keep", "sari_del", "sari_add")},
    "fkgl": "US grade: unbounded, lower = simpler",
    # EASSE-style measures (training/simplification_measures.py), means over sentences
    **{
        k: "0-1"
        for k in ("levenshtein_similarity", "exact_copies", "additions_proportion", "deletions_proportion")
    },
    "compression_ratio": "ratio: output / source characters",
    "sentence_splits": "ratio: output / source sentences",
    "lexical_complexity": "8 - Zipf: 0-8, higher = rarer words",
    # MultiCochrane's copy measures against the complex input (higher input_bleu = closer to a copy)
    "lcs_distance": "0-1, 0 = the input copied",
    "input_bleu": "0-1, 1 = the input copied",
}

# The measures whose definition is ours to name in the signature (any mode).
_MEASURE_IMPLEMENTATIONS: dict[str, tuple[str, str | None]] = {
    "lcs_distance": ("medsimp-lcs-token-1-minus-lcs-over-max", None),
    "input_bleu": ("medsimp-corpus-bleu4-vs-input+nosmooth", None),
}

# metric -> (implementation, the distribution whose version is recorded; None = medsimp's own)
_IMPLEMENTATIONS: dict[str, dict[str, tuple[str, str | None]]] = {
    "default": {
        "bleu": ("medsimp-corpus-bleu+nosmooth", None),
        "meteor": ("meteor-1.5-jar", "pycocoevalcap"),
        "rouge_1": ("rouge-score-f1", "rouge-score"),
        "rouge_2": ("rouge-score-f1", "rouge-score"),
        "rouge_l": ("rouge-score-f1", "rouge-score"),
        "cider": ("cider-d", "pycocoevalcap"),
        "sari": ("medsimp-sari-xu2016", None),
        "fkgl": ("medsimp-readability+textstat", "textstat"),
        "bertscore": ("bert-score-minilm-l6+noidf+norescale", "bert-score"),
        "hit": ("medsimp-hit-source-terms", None),
        "cwr": ("medsimp-cwr-lemma", None),
        "ascore": ("medsimp-ascore-a2-b1.5", None),
    },
    "medlane": {
        "bleu": ("coco-bleu-closest", "pycocoevalcap"),
        "meteor": ("meteor-1.5-jar", "pycocoevalcap"),
        "rouge_l": ("coco-rouge-beta1.2", "pycocoevalcap"),
        "cider": ("cider-d", "pycocoevalcap"),
        "hit": ("medlane-count_hit-regex", "regex"),
        "cwr": ("medlane-count_common", None),
        "ascore": ("medlane-ascore-floor1e-4", None),
    },
}
_TOKENIZER = {"default": "nltk-treebank", "medlane": "whitespace+bert-basic-refs"}
_CASE = {"default": "lc", "medlane": "lc-refs"}


@functools.cache
def _version(dist: str | None) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist or "medsimp")
    except PackageNotFoundError:
        return "unknown"


def signature(mode: str, n_refs: int, metrics: Sequence[str]) -> str:
    """A sacrebleu-like string naming, for each metric computed, its implementation and
    version, plus the tokenizer, casing, mode and reference count:
    `medsimp:0.1.0|mode:default|tok:nltk-treebank|case:lc|refs:4|bleu:medsimp-corpus-bleu+nosmooth@0.1.0|...`.
    """
    parts = [
        f"medsimp:{_version(None)}",
        f"mode:{mode}",
        f"tok:{_TOKENIZER[mode]}",
        f"case:{_CASE[mode]}",
        f"refs:{n_refs}",
    ]
    impl = {**_IMPLEMENTATIONS[mode], **_MEASURE_IMPLEMENTATIONS}
    for name in metrics:
        if name in impl:
            label, dist = impl[name]
            parts.append(f"{name}:{label}@{_version(dist)}")
    return "|".join(parts)


def metric_names(scores: dict) -> list[str]:
    """The selectable metric names behind a scores dict's keys (bleu_2 -> bleu, sari_add -> sari)."""
    from medsimp.training.scoring import METRICS

    names = {
        "bertscore" if k == "bertscore_f1" else k.split("_")[0] if k.split("_")[0] in ("bleu", "sari") else k
        for k, v in scores.items()
        if v is not None
    }
    return [m for m in METRICS if m in names]


@dataclass
class Evaluation:
    """One system's result: `scores` (None = not computable), their `scales`, the `signature`."""

    mode: str
    n: int
    scores: dict[str, float | None]
    scales: dict[str, str]
    signature: str
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


class Scorer:
    """Both scoring modes with the shared resources (word lists, dictionary) loaded once."""

    def __init__(
        self,
        cfg: dict,
        train_cfg: dict,
        notes_cfg: dict,
        base: str | Path = ".",
        select: Sequence[str] | None = None,
    ):
        from medsimp.config import resolve_path
        from medsimp.params_schema import default
        from medsimp.resources import resolve_model
        from medsimp.training import scoring
        from medsimp.training.lexicon import load_common_words, load_dictionary

        self.common = load_common_words(
            resolve_path(
                cfg.get("common_words") or notes_cfg.get("common_words") or default("notes.common_words"),
                base,
            )
        )
        self.dictionary = load_dictionary(
            [resolve_path(p, base) for p in cfg.get("dictionaries") or train_cfg.get("dictionaries") or []]
        )
        self.meteor = bool(cfg.get("meteor", True))
        self.select = list(select) if select is not None else cfg.get("select")
        self.bert = (
            resolve_model(cfg.get("bertscore_model", "minilm"))
            if cfg.get("bertscore", True) and "bertscore" in scoring.selection(self.select)
            else None
        )

    def score(self, hyps: list[str], items, mode: str, full: bool = True) -> dict:
        from medsimp.training import scoring

        if len(hyps) != len(items):
            raise ValueError(f"{len(hyps)} outputs for {len(items)} evaluation sentences")
        if mode == "medlane":
            return scoring.score_medlane(
                hyps, items, self.common, set(self.dictionary), self.meteor and full, self.select
            )
        scoring.attach_terms(items, self.dictionary)
        return scoring.score_default(
            hyps, items, self.common, self.bert if full else None, self.meteor and full, self.select
        )

    def evaluate(
        self,
        hyps: list[str],
        items,
        mode: str,
        extras: bool = False,
        bucket_edges: Sequence[int] = (0, 10, 15, 20, 30),
        language: str = "en",
    ) -> Evaluation:
        """`score` wrapped with its scales and signature (values rounded to 6 decimals).
        `extras`: also the EASSE measures (`simplification_measures`, needs sources) and the
        MedLane length-bucket breakdown (default mode, BLEU/HIT/CWR/AScore per source-length bucket)."""
        scores = _rounded(self.score(hyps, items, mode))
        n_refs = max((len(it.references) for it in items), default=0)
        if mode == "medlane":
            n_refs = min(n_refs, 4)
        result = Evaluation(
            mode,
            len(items),
            scores,
            {k: SCALES[k] for k in scores if k in SCALES},
            signature(mode, n_refs, metric_names(scores)),
        )
        if extras and all(it.source is not None for it in items):
            from medsimp.training.simplification_measures import measures

            found = _rounded(measures([it.source for it in items], hyps, language))
            result.extra["measures"] = found
            result.extra["length_buckets"] = self.buckets(hyps, items, bucket_edges)
            named = [m for m in _MEASURE_IMPLEMENTATIONS if found.get(m) is not None]
            result.signature = signature(mode, n_refs, [*metric_names(scores), *named])
        return result

    def buckets(self, hyps: list[str], items, edges: Sequence[int]) -> list[dict]:
        """One row per source-length bucket: {bucket, n, bleu, hit, cwr, ascore} (default mode)."""
        from medsimp.training.scoring import length_buckets

        labels = length_buckets(items, edges)
        rows = []
        for label in sorted(set(labels), key=lambda s: int(s.split("-")[0].rstrip("+"))):
            idx = [i for i, lab in enumerate(labels) if lab == label]
            sub = self.score([hyps[i] for i in idx], [items[i] for i in idx], "default", full=False)
            rows.append(
                {
                    "bucket": label,
                    "n": len(idx),
                    **_rounded({k: sub.get(k) for k in ("bleu", "hit", "cwr", "ascore")}),
                }
            )
        return rows

    def per_sentence(self, hyps: list[str], items) -> list[dict]:
        """One row per output line: the selected SENTENCE_METRICS of that line alone, default mode
        (sentence BLEU unsmoothed, as the corpus BLEU; like sacrebleu's `--sentence-level`)."""
        from medsimp.training import scoring

        chosen = [m for m in SENTENCE_METRICS if m in scoring.selection(self.select)]
        saved, self.select = self.select, chosen
        try:
            return [
                {"line": i + 1, **_rounded(self.score([h], [it], "default", full=False))}
                for i, (h, it) in enumerate(zip(hyps, items))
            ]
        finally:
            self.select = saved


# Metrics with a per-sentence reading (CIDEr's document frequencies, METEOR's and BERTScore's
# corpus set-up make them corpus-level only).
SENTENCE_METRICS = ("bleu", "rouge_1", "rouge_2", "rouge_l", "sari", "fkgl", "hit", "cwr", "ascore")


def _rounded(scores: dict) -> dict:
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in scores.items()}


def score(
    hyps: Sequence[str],
    references: Sequence[Sequence[str]],
    sources: Sequence[str] | None = None,
    mode: str = "default",
    select: Sequence[str] | None = None,
    params: str | Path = "params.yaml",
    overrides: dict | None = None,
) -> Evaluation:
    """Score one system: `hyps[i]` against `references[i]` (a list; `abbr[full]` annotations
    allowed) and `sources[i]` (needed for SARI and default-mode HIT). `select` names the
    metrics (None = params `evaluate.select`, null = all); `params` is read for the word
    lists and the METEOR/BERTScore switches, `overrides` replaces `evaluate` keys."""
    from medsimp.config import load_params, section
    from medsimp.training.scoring import EvalItem

    if len(references) != len(hyps) or (sources is not None and len(sources) != len(hyps)):
        raise ValueError("hyps, references and sources need one entry per sentence")
    data = load_params(params) if Path(params).is_file() else {}
    cfg = {**section(data, "evaluate"), **(overrides or {})}
    base = Path(params).parent
    scorer = Scorer(cfg, section(data, "train"), section(data, "notes"), base, select)
    items = [
        EvalItem(sources[i] if sources is not None else None, list(references[i])) for i in range(len(hyps))
    ]
    return scorer.evaluate(list(hyps), items, mode)
