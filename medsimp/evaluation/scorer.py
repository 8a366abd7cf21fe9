"""The typed evaluation API: `score(...)` -> `Evaluation` (scores, scales, signature).

    from medsimp.evaluation.scorer import score
    result = score(["the patient has high blood pressure ."], [["the patient has high blood pressure ."]],
                   sources=["pt has htn ."], select=["bleu", "sari"])
    result.scores["sari"], result.scales["sari"], result.signature

`Scorer` holds what both scoring modes share, loaded once (word lists, the abbreviation dictionary,
the measures' resources), and hands the metrics their typed settings (`ScoringOptions`, built from
params `evaluate`); `signature` joins the run's parts and each metric's own (`Metric.signature`).
`medsimp evaluate files` (medsimp/evaluation/files.py) and `medsimp evaluate stage`
(medsimp/evaluation/stage.py) score through it (docs/metrics.md).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from medsimp.config import load_params, params_dir, resolve_path
from medsimp.metrics import Inputs, NotComputable, ScoringOptions, metric_of, scoring, selection
from medsimp.metrics import metrics as all_metrics
from medsimp.metrics import scales as metric_scales
from medsimp.metrics import style as st
from medsimp.metrics.base import check_needs, dist_version
from medsimp.metrics.scoring import EvalItem, attach_terms, inputs, length_buckets
from medsimp.metrics.significance import collect
from medsimp.metrics.style import Loaded
from medsimp.params_schema import Evaluate, Link, Notes, ScoringMode, Train, updated
from medsimp.resources import resolve_model
from pipelines.text.umls import ConceptLinker
from training.lexicon import load_common_words, load_dictionary

# One declared scale per reported value (docs/metrics.md), declared by each metric and measure
# (medsimp.metrics). The numbers keep the scales the papers and libraries report them on.
SCALES: dict[str, str] = metric_scales()

_TOKENIZER = {"default": "per-metric", "medlane": "whitespace+bert-basic-refs"}
_CASE = {"default": "per-metric", "medlane": "lc-refs"}


def signature(
    mode: str, n_refs: int, metrics: Sequence[str], data: Inputs | None = None, language: str | None = None
) -> str:
    """A sacrebleu-like string naming, for each metric or measure computed, its implementation and
    version, plus the tokenizer, casing, mode and reference count:
    `medsimp:0.1.0|mode:default|tok:per-metric|case:per-metric|refs:4|bleu:sacrebleu-bleu[...]@2.6.0|...`.
    Each metric builds its own part (`Metric.signature`: its implementation, tokenization and
    version; `data`: the scored inputs, for sacrebleu's reference count and the measures' loaded
    resources); in MedLane compat mode a metric with that mode names its `medlane_label`. `language`: `lang:fr` (or `lang:en>fr`,
    sources > outputs) after `refs`; absent for English outputs of English sources.
    """
    parts = [
        f"medsimp:{dist_version(None)}",
        f"mode:{mode}",
        f"tok:{_TOKENIZER[mode]}",
        f"case:{_CASE[mode]}",
        f"refs:{n_refs}",
    ]
    if language:
        parts.append(f"lang:{language}")
    registry = all_metrics()
    found = (registry[name].signature(data, mode) for name in metrics if name in registry)
    parts += [part for part in found if part is not None]  # None: not part of the MedLane scorer
    return "|".join(parts)


def metric_names(scores: dict) -> list[str]:
    """The selectable metric names behind a scores dict's keys (bleu_2 -> medlane_bleu, sari_add -> sari)."""
    names = set()
    for key, value in scores.items():
        metric = metric_of(key)
        if value is not None and metric is not None:
            names.add(metric.name)
    return [m for m in all_metrics() if m in names]


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
        cfg: Evaluate,
        train_cfg: Train,
        notes_cfg: Notes,
        base: str | Path = ".",
        select: Sequence[str] | None = None,
        link_cfg: Link | None = None,
        from_file: bool = True,
        not_clinical: str | None = None,
    ):
        """`cfg`: params `evaluate` (a command's flags applied over it); `base`:
        the params file's folder, which relative params paths are resolved against; `link_cfg`:
        the QuickUMLS matcher settings (params `link`) for `masked_edit_distance`; `not_clinical`:
        what the data is when it is known not to be clinical notes, e.g. a builder whose card
        lacks the `clinical` tag. The metrics get `ScoringOptions` built from these. `from_file`
        False: there is no params file, the settings are the defaults; a default dictionary
        that is not here (a checkout's sample file) is left out with a one-line warning.
        The sections are typed (`medsimp.params_schema`); no `link_cfg`: the schema's defaults."""
        self.common = load_common_words(resolve_path(cfg.common_words or notes_cfg.common_words, base))
        dictionaries = [resolve_path(p, base) for p in cfg.dictionaries or train_cfg.dictionaries]
        if not from_file:
            for missing in [p for p in dictionaries if not Path(p).exists()]:
                warn_once(
                    f"abbreviation dictionary {missing} not found (a default of train.dictionaries: "
                    "no params file here); HIT, CWR and AScore use the others (give --params / params=)"
                )
                dictionaries.remove(missing)
        self.dictionary = load_dictionary(dictionaries)
        self.meteor = cfg.meteor
        self.select = list(select) if select is not None else cfg.select
        self.bert = (
            resolve_model(cfg.bertscore_model)
            if cfg.bertscore and "bertscore" in selection(self.select)
            else None
        )
        self.cfg, self.base, self.link_cfg = cfg, base, link_cfg or Link()
        self.lang = str(cfg.lang)
        self.src_lang = str(cfg.src_lang or self.lang)
        self.dictionary_unfit = _dictionary_unfit(
            cfg.dictionaries is not None, self.lang, self.src_lang, not_clinical
        )
        # what every scoring call's metrics read; `_options` adds METEOR, BERTScore and the resources
        self.options = ScoringOptions(
            lang=self.lang,
            src_lang=self.src_lang,
            allow_cross_lingual=cfg.allow_cross_lingual,
            rouge_tokenizer=cfg.rouge_tokenizer,
            dictionary_unfit=self.dictionary_unfit,
            bertscore_english_only=cfg.bertscore_model == "minilm",
        )
        self.unavailable: dict[str, str] = {}  # metric or measure -> why it is not computed
        self.flagged: dict[str, str] = {}  # metric -> why its value needs a caveat (cross-lingual)
        self._loaded: dict[str, Any] = {}

    def score(
        self, hyps: list[str], items, mode: ScoringMode, full: bool = True, extras: bool = False
    ) -> dict:
        """Every selected metric in `mode` (`scoring.score`); `full` False leaves out METEOR and
        BERTScore (the length buckets); `extras`: every measure too, with its resource loaded."""
        if len(hyps) != len(items):
            raise ValueError(f"{len(hyps)} outputs for {len(items)} evaluation sentences")
        if mode == "medlane" and self.lang_tag:
            raise ValueError(
                f"--mode medlane is the MedLane authors' English scorer; the outputs are {self.lang} "
                f"and the sources {self.src_lang} (use --mode default)"
            )
        if mode == "default" and self._needs_terms(extras):
            scoring.attach_terms(items, self.term_dictionary)
        return scoring.score(
            mode,
            hyps,
            items,
            self.common,
            self.select,
            self._options(full, extras),
            set(self.dictionary),
            extras,
            self.unavailable,
            self.flagged,
        )

    def _needs_terms(self, extras: bool = False) -> bool:
        """Whether a selected metric reads the sources' terms (HIT, AScore): `attach_terms`
        (tokenising every source and reference) only then."""
        registry = all_metrics()
        return any("terms" in registry[name].needs for name in selection(self.select, self.lang, extras))

    def _options(self, full: bool = True, extras: bool = False) -> ScoringOptions:
        """The settings of one scoring call (`full`: METEOR and BERTScore too; `extras`: the
        measures' resources)."""
        wanted = selection(self.select, self.lang, extras)
        loaded = {name: self._resource(name) for name in LOADED_MEASURES if name in wanted}
        return self.options.replace(
            bertscore_model=self.bert if full else None,
            meteor=self.meteor and full,
            medlane_references=self.cfg.medlane_references,
            resources={name: found for name, found in loaded.items() if found is not None},
        )

    @property
    def term_dictionary(self) -> dict[str, list[str]] | None:
        """The abbreviation dictionary HIT may take its terms from; None where it does not fit
        the data (`dictionary_unfit`)."""
        return None if self.dictionary_unfit else self.dictionary

    @property
    def lang_tag(self) -> str | None:
        """`fr`, or `en>fr` for English sources of French outputs; None for English on English."""
        if self.lang == self.src_lang:
            return None if self.lang == "en" else self.lang
        return f"{self.src_lang}>{self.lang}"

    def evaluate(
        self,
        hyps: list[str],
        items,
        mode: ScoringMode,
        extras: bool = False,
        bucket_edges: Sequence[int] = (0, 10, 15, 20, 30),
    ) -> Evaluation:
        """`score` wrapped with its scales and signature (values rounded to 6 decimals).
        `extras`: also every measure (`Metric.measure`: the EASSE and copy measures, Cao et al.'s
        style-transfer measures; in `extra["measures"]`) and, with sources, the MedLane
        length-bucket breakdown (default mode, MedLane BLEU/HIT/CWR/AScore per source-length bucket)."""
        found = _rounded(self.score(hyps, items, mode, extras=extras))
        registry = all_metrics()
        measured = {k for k in found if (m := metric_of(k)) is not None and registry[m.name].measure}
        scores = {k: v for k, v in found.items() if k not in measured}
        # the signature reads the reference counts and the options only: no references expanded again
        data = Inputs(list(hyps), [list(it.references) for it in items], options=self._options(extras=extras))
        n_refs = max((len(it.references) for it in items), default=0)
        if mode == "medlane":
            n_refs = min(n_refs, 4)
        result = Evaluation(
            mode,
            len(items),
            scores,
            {k: SCALES[k] for k in scores if k in SCALES},
            signature(mode, n_refs, metric_names(found), data, self.lang_tag),
        )
        if extras or measured:  # all of them, or those --select names
            result.extra["measures"] = {k: v for k, v in found.items() if k in measured}
        if extras and all(it.source is not None for it in items):
            result.extra["length_buckets"] = self.buckets(hyps, items, bucket_edges)
        if self.unavailable:
            result.extra["not_computed"] = dict(self.unavailable)
        if self.flagged:
            result.extra["cross_lingual"] = dict(self.flagged)
        return result

    def _resource(self, name: str) -> Loaded | None:
        """The classifier, (tokenizer, model) or concept linker of a measure with its signature
        label, loaded once; None when the params do not configure it."""
        if name not in self._loaded:
            self._loaded[name] = self._load(name)
        return self._loaded[name]

    def _load(self, name: str) -> Loaded | None:
        cfg = self.cfg
        path = lambda key: resolve_path(getattr(cfg, key), self.base)  # noqa: E731
        try:
            if name == "style_accuracy" and cfg.style_data:
                texts, labels = st.style_corpus(path("style_data"))
                rows = hashlib.sha256(json.dumps([texts, labels]).encode("utf-8")).hexdigest()[:12]
                kind, target = cfg.style_classifier, "layman" if cfg.style_direction == "e2l" else "expert"
                return Loaded(
                    st.train_style_classifier(texts, labels, kind),
                    f"fasttext-supervised-defaults-seed13-target-{target}-rows-{rows}"
                    if kind == "fasttext"
                    else f"tfidf-word1-2+logreg-C1-target-{target}-rows-{rows}",
                    "fasttext-wheel" if kind == "fasttext" else "scikit-learn",
                    {"direction": cfg.style_direction},
                )
            if name == "perplexity" and cfg.perplexity_model:
                model_dir = Path(path("perplexity_model"))
                return Loaded(
                    st.load_causal_lm(str(model_dir)),
                    f"causal-lm-{model_dir.name}-{_folder_digest(model_dir)}-exp-nll-per-token",
                    "transformers",
                )
            if name == "masked_edit_distance" and cfg.umls_index:
                linker = ConceptLinker(path("umls_index"), self.link_cfg)
                if linker.has_language(self.lang):
                    linker.load(self.lang)  # now: an unreadable installation is the one-line error below
                pair = "gold" if cfg.masked_edit_pair == "gold" else "output-input"
                unit = cfg.masked_edit_unit if pair == "gold" else "word"
                return Loaded(
                    linker,
                    f"{unit}-levenshtein-{pair}-umls-masked-{linker.fingerprint[:12]}",
                    "medspacy_quickumls",
                    {"pair": cfg.masked_edit_pair, "unit": cfg.masked_edit_unit},
                )
        except (OSError, KeyError) as exc:
            raise ValueError(f"{name}: cannot load what evaluate's params name: {exc}") from None
        return None

    def buckets(self, hyps: list[str], items, edges: Sequence[int]) -> list[dict]:
        """One row per source-length bucket: {bucket, n, medlane_bleu, hit, cwr, ascore} (default mode)."""
        labels = length_buckets(items, edges)
        rows = []
        why = dict(self.unavailable)  # a bucket without terms says nothing about the whole set
        for label in sorted(set(labels), key=lambda s: int(s.split("-")[0].rstrip("+"))):
            idx = [i for i, lab in enumerate(labels) if lab == label]
            sub = self.score([hyps[i] for i in idx], [items[i] for i in idx], "default", full=False)
            rows.append(
                {
                    "bucket": label,
                    "n": len(idx),
                    **_rounded({k: sub.get(k) for k in BUCKET_METRICS}),
                }
            )
        self.unavailable = why
        return rows

    def per_sentence(self, hyps: list[str], items) -> list[dict]:
        """One row per output line: every selected metric with a sentence reading (`Metric.sentence`),
        default mode; BLEU is sacrebleu's smoothed sentence BLEU, as sacrebleu's `--sentence-level`."""
        if self._needs_terms():
            attach_terms(items, self.term_dictionary)
        data = inputs(hyps, items, self.common, self.options)
        chosen = [
            m for n, m in all_metrics().items() if n in selection(self.select, self.lang) and m.has_sentence
        ]
        rows = []
        for i in range(len(hyps)):
            row: dict[str, float | None] = {}
            for metric in chosen:
                try:
                    check_needs(metric, data)
                    row[metric.keys[0]] = metric.sentence(data, i)
                except NotComputable:
                    row[metric.keys[0]] = None
            rows.append({"line": i + 1, **_rounded(row)})
        return rows

    def significance_stats(self, hyps: list[str], items, skipped: dict[str, str] | None = None) -> dict:
        """{metric: (Metric, SystemStats)} for every selected metric with a sentence reading whose
        sentence scores are all defined (default mode), for `significance.paired_bootstrap`. A
        metric left out because a sentence score is undefined gets its reason in `skipped`."""
        if self._needs_terms():
            attach_terms(items, self.term_dictionary)
        data = inputs(hyps, items, self.common, self.options)
        out = {}
        for name, metric in all_metrics().items():
            if name in selection(self.select, self.lang) and metric.has_sentence:
                try:
                    check_needs(metric, data)
                except NotComputable:
                    continue  # not computed at all: the score's own note says why
                try:
                    out[name] = (metric, collect(metric, data))
                except NotComputable as exc:
                    if skipped is not None:
                        skipped[name] = str(exc)
        return out


def _dictionary_unfit(explicit: bool, lang: str, src_lang: str, not_clinical: str | None) -> str | None:
    """Why the abbreviation dictionary does not fit the data (None: it fits). An explicit
    `evaluate.dictionaries` is taken as chosen for the data; the default (`train.dictionaries`,
    English clinical-note abbreviations collected from MIMIC) fits English clinical notes only:
    not other languages, nor data known not to be clinical notes (`not_clinical`)."""
    if explicit:
        return None
    what = "the default abbreviation dictionary (train.dictionaries: English clinical-note abbreviations from MIMIC)"
    if lang != "en" or src_lang != "en":
        langs = lang if lang == src_lang else f"{src_lang} sources / {lang} outputs"
        return f"{what} does not fit {langs} text (set evaluate.dictionaries to one for this data)"
    if not_clinical:
        return f"{what} does not fit {not_clinical} (set evaluate.dictionaries to one for this data)"
    return None


BUCKET_METRICS = ("medlane_bleu", "hit", "cwr", "ascore")  # the paper's Figure 4 per length bucket
# The measures whose resource `Scorer` loads from params `evaluate` (medsimp/metrics/style.py).
LOADED_MEASURES = ("style_accuracy", "perplexity", "masked_edit_distance")


_WARNED: set[str] = set()


def warn_once(message: str) -> None:
    """`warning: message` on stderr, once per process (a notebook scoring in a loop sees it once)."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"warning: {message}", file=sys.stderr)


def _rounded(scores: dict) -> dict:
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in scores.items()}


def score(
    hyps: Sequence[str],
    references: Sequence[Sequence[str]],
    sources: Sequence[str] | None = None,
    mode: ScoringMode = "default",
    select: Sequence[str] | None = None,
    params: str | Path = "params.yaml",
    overrides: dict | None = None,
) -> Evaluation:
    """Score one system: `hyps[i]` against `references[i]` (a list; `abbr[full]` annotations
    allowed) and `sources[i]` (needed for SARI and default-mode HIT). `select` names the
    metrics (None = params `evaluate.select`, null = all); `params` is read for the word
    lists and the METEOR/BERTScore switches, `overrides` replaces `evaluate` keys (e.g.
    `{"lang": "fr", "rouge_tokenizer": "rouge-score"}`)."""
    if len(references) != len(hyps) or (sources is not None and len(sources) != len(hyps)):
        raise ValueError("hyps, references and sources need one entry per sentence")
    # no params file (the implicit params.yaml, elsewhere than a checkout): the defaults, whose
    # packaged resources resolve against the package (medsimp.config.resolve_path)
    from_file = Path(params).is_file()
    data = load_params(params)
    cfg = updated(data.evaluate, overrides)  # overrides checked
    scorer = Scorer(cfg, data.train, data.notes, params_dir(params), select, data.link, from_file=from_file)
    items = [
        EvalItem(sources[i] if sources is not None else None, list(references[i])) for i in range(len(hyps))
    ]
    result = scorer.evaluate(list(hyps), items, mode)
    for name, why in result.extra.get("not_computed", {}).items():
        warn_once(f"{name} not computed (null): {why}")
    return result


def _folder_digest(folder: Path) -> str:
    """Short SHA-256 over the relative names and bytes of a model folder's files."""
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(file.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:12]
