"""The typed evaluation API: `score(...)` -> `Evaluation` (scores, scales, signature).

    from medsimp.training.evaluation import score
    result = score(["the patient has high blood pressure ."], [["the patient has high blood pressure ."]],
                   sources=["pt has htn ."], select=["bleu", "sari"])
    result.scores["sari"], result.scales["sari"], result.signature

`medsimp evaluate` is a thin wrapper over `Scorer` and `signature` (docs/metrics.md).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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
    # Cao et al. 2020's expertise-style-transfer measures (training/style_transfer_measures.py)
    "style_accuracy": "0-1, share classified as the target style (layman)",
    "perplexity": "perplexity: >= 1, lower = more fluent under the chosen LM",
    "masked_edit_distance": "word edits: mean per sentence, 0 = the input kept (UMLS concepts masked)",
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
        "rouge_1": ("medsimp-rouge-f1=rouge-score-0.1.2", None),
        "rouge_2": ("medsimp-rouge-f1=rouge-score-0.1.2", None),
        "rouge_l": ("medsimp-rouge-f1=rouge-score-0.1.2", None),
        "cider": ("medsimp-cider-d=pycocoevalcap-1.2", None),
        "sari": ("medsimp-sari-xu2016", None),
        "fkgl": ("medsimp-readability=textstat-0.7.13-counts", None),
        "bertscore": ("bert-score-minilm-l6+noidf+norescale", "bert-score"),
        "hit": ("medsimp-hit-source-terms", None),
        "cwr": ("medsimp-cwr-lemma", None),
        "ascore": ("medsimp-ascore-a2-b1.5", None),
    },
    "medlane": {
        "bleu": ("coco-bleu-closest", "pycocoevalcap"),
        "meteor": ("meteor-1.5-jar", "pycocoevalcap"),
        "rouge_l": ("coco-rouge-beta1.2", "pycocoevalcap"),
        "cider": ("medsimp-cider-d=pycocoevalcap-1.2", None),
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


def signature(
    mode: str,
    n_refs: int,
    metrics: Sequence[str],
    measures: dict[str, tuple[str, str | None]] | None = None,
) -> str:
    """A sacrebleu-like string naming, for each metric computed, its implementation and
    version, plus the tokenizer, casing, mode and reference count:
    `medsimp:0.1.0|mode:default|tok:nltk-treebank|case:lc|refs:4|bleu:medsimp-corpus-bleu+nosmooth@0.1.0|...`.
    `measures`: implementations known only at run time (the style classifier, the LM, the index).
    """
    parts = [
        f"medsimp:{_version(None)}",
        f"mode:{mode}",
        f"tok:{_TOKENIZER[mode]}",
        f"case:{_CASE[mode]}",
        f"refs:{n_refs}",
    ]
    impl = {**_IMPLEMENTATIONS[mode], **_MEASURE_IMPLEMENTATIONS, **(measures or {})}
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
        link_cfg: dict | None = None,
    ):
        """`link_cfg`: the QuickUMLS matcher settings (params `link`) for `masked_edit_distance`."""
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
        self.cfg, self.base, self.link_cfg = cfg, base, dict(link_cfg or {})
        self.unavailable: dict[str, str] = {}  # style-transfer measure -> why it is not computed
        self.implementations: dict[str, tuple[str, str | None]] = {}
        self._loaded: dict[str, Any] = {}

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
        `extras`: also the EASSE and copy measures (`simplification_measures`, needs sources),
        Cao et al.'s style-transfer measures (`style_transfer`) and the MedLane length-bucket breakdown (default mode, BLEU/HIT/CWR/AScore per source-length bucket)."""
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

            sources = [str(it.source) for it in items]
            found = _rounded(
                {**measures(sources, hyps, language), **self.style_transfer(sources, hyps, language)}
            )
            result.extra["measures"] = found
            result.extra["length_buckets"] = self.buckets(hyps, items, bucket_edges)
            impl = {**_MEASURE_IMPLEMENTATIONS, **self.implementations}
            named = [m for m in impl if found.get(m) is not None]
            result.signature = signature(mode, n_refs, [*metric_names(scores), *named], self.implementations)
            if self.unavailable:
                result.extra["not_computed"] = dict(self.unavailable)
        return result

    def style_transfer(self, sources: list[str], hyps: list[str], language: str) -> dict[str, float | None]:
        """Cao et al.'s style accuracy, perplexity and masked edit distance; None where the params
        give no classifier, language model or UMLS index (the reason is in `unavailable`)."""
        from medsimp.training import style_transfer_measures as st
        from medsimp.training.scoring import tokenize

        classifier, lm, linker = (self._resource(n) for n in STYLE_TRANSFER)
        masked = None
        if linker is not None:
            if linker.has_language(language):
                spans = lambda t: [(c["start"], c["end"]) for c in linker.link(t, language)]  # noqa: E731
                masked = st.masked_edit_distance(sources, hyps, spans, tokenize)
            else:
                self.unavailable["masked_edit_distance"] = f"the UMLS index has no {language} matcher"
        return {
            "style_accuracy": st.style_accuracy(classifier, hyps) if classifier is not None else None,
            "perplexity": st.corpus_perplexity(lm[0], lm[1], hyps) if lm is not None else None,
            "masked_edit_distance": masked,
        }

    def _resource(self, name: str) -> Any:
        """The classifier, (tokenizer, model) or concept linker of a measure, loaded once; None
        when the params do not configure it."""
        if name not in self._loaded:
            self._loaded[name] = self._load(name)
        return self._loaded[name]

    def _load(self, name: str) -> Any:
        from medsimp.config import resolve_path
        from medsimp.training import style_transfer_measures as st

        cfg = self.cfg
        path = lambda key: resolve_path(cfg[key], self.base)  # noqa: E731
        try:
            if name == "style_accuracy" and cfg.get("style_data"):
                texts, labels = st.style_corpus(path("style_data"))
                rows = hashlib.sha256(json.dumps([texts, labels]).encode("utf-8")).hexdigest()[:12]
                self.implementations[name] = (
                    f"tfidf-word1-2+logreg-C1-target-layman-rows-{rows}",
                    "scikit-learn",
                )
                return st.train_style_classifier(texts, labels)
            if name == "perplexity" and cfg.get("perplexity_model"):
                model_dir = Path(path("perplexity_model"))
                self.implementations[name] = (
                    f"causal-lm-{model_dir.name}-{_folder_digest(model_dir)}-exp-nll-per-token",
                    "transformers",
                )
                return st.load_causal_lm(str(model_dir))
            if name == "masked_edit_distance" and cfg.get("umls_index"):
                from medsimp.pipelines.umls import ConceptLinker

                linker = ConceptLinker(path("umls_index"), self.link_cfg)
                self.implementations[name] = (
                    f"word-levenshtein-umls-masked-{linker.fingerprint[:12]}",
                    "medspacy_quickumls",
                )
                return linker
        except (OSError, KeyError) as exc:
            raise ValueError(f"{name}: cannot load what evaluate's params name: {exc}") from None
        self.unavailable[name] = NOT_CONFIGURED[name]
        return None

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


STYLE_TRANSFER = ("style_accuracy", "perplexity", "masked_edit_distance")
NOT_CONFIGURED = {
    "style_accuracy": "set evaluate.style_data (text+label rows, e.g. builders/msd)",
    "perplexity": "set evaluate.perplexity_model (a local transformers causal-LM folder)",
    "masked_edit_distance": "set evaluate.umls_index (the umls stage's index, e.g. out/umls)",
}

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
    scorer = Scorer(cfg, section(data, "train"), section(data, "notes"), base, select, section(data, "link"))
    items = [
        EvalItem(sources[i] if sources is not None else None, list(references[i])) for i in range(len(hyps))
    ]
    return scorer.evaluate(list(hyps), items, mode)


def _folder_digest(folder: Path) -> str:
    """Short SHA-256 over the relative names and bytes of a model folder's files."""
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(file.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:12]
