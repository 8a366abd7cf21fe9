"""The typed schema of `params.yaml`: one dataclass per section, the single home of defaults.

Every key of `params.yaml` is a field here, with its type and its default; `tests/test_params.py`
fails when the two disagree (a key in one but not the other, or a different default).
`medsimp.config.load_params` checks a params file and every `--set` against this schema:
unknown keys and wrong types are one-line `ParamsError`s (exit 2).

Adding a key is one line in the section's dataclass, e.g. in `Simplify`:

    allowed_endpoints: list[str] = field(default_factory=list)

plus the same key and value in `params.yaml` (see docs/architecture.md, "Params").
Types understood: bool, int, float (an int is accepted), str, None, Any, Literal[...],
list[T], dict[str, T] (an open, user-defined map), unions (`str | None`) and nested dataclasses
(a mapping with exactly those keys). Read a default in code with `default("section.key")`.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import logging
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Union

log = logging.getLogger("medsimp.params")


def _f(value: Any) -> Any:
    """A field whose default is a mutable value (copied per instance)."""
    return field(default_factory=lambda: copy.deepcopy(value))


# --------------------------------------------------------------------------- sections
@dataclass
class Beam:
    runner: str = "FnApiRunner"
    num_workers: int = 2
    log_level: str = "WARNING"
    options: list[str] = _f([])
    running_mode: str | None = None  # DirectRunner: null = multi_processing if num_workers > 1


@dataclass
class Notes:
    input: str = "data/sample/NOTEEVENTS.csv"
    output: str = "out/notes"
    categories: list[str] = _f(["Discharge summary"])
    headers: dict[str, str] | None = _f(
        {
            "History of Present Illness": r"history\s+of\s+(?:the\s+)?present(?:ing)?\s+illness|hpi",
            "Brief Summary of Hospital Course": r"brief\s+summary\s+of\s+(?:the\s+)?hospital\s+course",
            "Brief Hospital Course": r"brief\s+hospital\s+course",
        }
    )
    any_header: str | None = None
    splitter: Literal["rules", "rush"] = "rules"
    abbreviations: str = "medsimp/resources/abbreviations.json"
    common_words: str = "medsimp/resources/common_words.txt"
    abbreviation_counting: Literal["pseudocode", "prose"] = "pseudocode"
    case_sensitive: bool = True
    min_tokens: int = 10
    min_ratio: float = 0.1
    max_ratio: float = 0.5
    num_ranges: int = 2
    batch_notes: int = 1000
    max_text_chars: int = 1_000_000


@dataclass
class Cochrane:
    input: str = "data/sample/cochrane.jsonl"
    num_shards: int = 2


@dataclass
class Msd:
    input: str = "data/sample/msd.jsonl"
    num_shards: int = 1
    paired_files: list[str] = _f(["test"])
    pair_key: Literal["title_icd9", "topic"] = "title_icd9"  # topic slug when a record lacks title or icd9
    pcio: dict[str, list[str]] = _f(
        {
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
    )


@dataclass
class Plaba:
    input: str = "data/sample/plaba.json"
    num_shards: int = 1


@dataclass
class Umls:
    mrconso: str = "data/sample/umls/MRCONSO.RRF"
    mrsty: str = "data/sample/umls/MRSTY.RRF"
    index: str = "out/umls"  # the one QuickUMLS index path (`umls-index` writes it, `link` reads it)
    languages: list[str] = _f(["ENG", "SPA", "FRE"])
    lowercase: bool = True
    normalize_unicode: bool = False


@dataclass
class Link:
    num_shards: int = 1
    overlapping_criteria: Literal["score", "length"] = "score"
    threshold: float = 0.7
    similarity_name: Literal["dice", "jaccard", "cosine", "overlap"] = "jaccard"
    window: int = 5
    min_match_length: int = 3
    reject_negation_flips: bool = True
    accepted_semtypes: list[str] | None = _f(
        [
            "T020",
            "T023",
            "T029",
            "T031",
            "T033",
            "T034",
            "T037",
            "T046",
            "T047",
            "T048",
            "T059",
            "T060",
            "T061",
            "T074",
            "T109",
            "T116",
            "T121",
            "T125",
            "T184",
            "T191",
            "T195",
            "T200",
        ]
    )


@dataclass
class Readability:
    syllable_languages: list[str] = _f(["en", "es", "fr", "de", "it", "nl"])


EncoderSpec = dict[str, Any]  # {kind: minilm|st|e5|use|laser, ...options}; open by design


@dataclass
class Crf:
    encoder: EncoderSpec = _f({"kind": "minilm"})
    jump_cap: int = 8
    hidden: int = 16
    epochs: int = 40
    lr: float = 0.01
    seed: int = 13
    threads: int = 1
    merge: Literal["union", "intersection", "forward"] = "union"


@dataclass
class Vecalign:
    encoder: list[EncoderSpec] | EncoderSpec = _f([{"kind": "use"}, {"kind": "e5", "prefix": "query"}])
    preset: Literal["published", "medsimp"] | None = None
    alignment_max_size: int = 4
    del_percentile_frac: float = 0.2
    del_percentile_of: Literal["unmatched", "random"] = "random"
    overlap_mode: Literal["encode", "mean"] = "encode"
    center: bool = False
    length_weight: float = 0.0
    number_weight: float = 0.0
    length_sigma: float = 0.35
    max_size_full_dp: int = 300
    costs_sample_size: int = 20000
    num_samps_for_norm: int = 100
    search_buffer_size: int = 5
    seed: int = 42


@dataclass
class Align:
    input: str = "out/cochrane"
    output: str = "out/align"
    model: str = "out/models/crf_aligner"
    gold: str = "data/sample/align_gold.jsonl"
    gold_format: Literal["auto", "jsonl", "plaba", "mc_clean", "wiki_auto"] = "auto"
    num_shards: int = 1
    crf: Crf = field(default_factory=Crf)
    vecalign: Vecalign = field(default_factory=Vecalign)


@dataclass
class Filter:
    input: str = "out/align"
    output: str = "out/filter"
    threshold: float = 0.5
    comparison: Literal["gt", "ge"] = "gt"
    num_shards: int = 1


@dataclass
class Split:
    seed: int = 13
    validation: float = 0.1
    test: float = 0.1


@dataclass
class PlabaSplit:
    seed: int = 13
    validation: float = 0.15
    test: float = 0.15
    method: Literal["exact", "hash"] = "exact"


@dataclass
class BuildMulticochrane:
    pairs: str = "out/filter/pairs"
    sentences: str = "out/cochrane/sentences"
    linked: str = "out/linked/cochrane"
    split: Split = field(default_factory=Split)
    mc_human: str | None = None
    mc_clean_validation: int = 5
    mc_clean_test: int = 22
    filter_splits: list[str] = _f(["train"])


@dataclass
class BuildMedlane:
    input: str = "data/sample/medlane"
    validation_size: int = 1015
    candidates: str | None = "out/notes/sentences"


@dataclass
class BuildMsd:
    sentences: str = "out/msd/sentences"
    groups: str | None = "out/msd/pairs"
    linked: str = "out/linked/msd"
    split: Split = field(default_factory=Split)


@dataclass
class BuildPlaba:
    pairs: str = "out/plaba/pairs"
    sentences: str = "out/plaba/sentences"
    linked: str = "out/linked/plaba"
    split: PlabaSplit = field(default_factory=PlabaSplit)


@dataclass
class BuildRadiology:
    sentences: str = "out/radiology/sentences"
    split: Split = field(default_factory=Split)


@dataclass
class Build:
    multicochrane: BuildMulticochrane = field(default_factory=BuildMulticochrane)
    medlane: BuildMedlane = field(default_factory=BuildMedlane)
    msd: BuildMsd = field(default_factory=BuildMsd)
    plaba: BuildPlaba = field(default_factory=BuildPlaba)
    radiology: BuildRadiology = field(default_factory=BuildRadiology)


@dataclass
class TrainData:
    format: Literal["medlane", "pairs"] = "medlane"
    train: str = "data/sample/medlane/train.txt"
    validation: str = "data/sample/medlane/validation.txt"
    test: str = "data/sample/medlane/test.txt"
    pairs: str = "builders/multicochrane/en"
    complex_column: str = "complex_text"
    simple_column: str = "simple_text"
    validation_fraction: float = 0.1
    test_fraction: float = 0.1
    resplit: bool = False


@dataclass
class Train:
    models: list[str] = _f(["declare", "bertmt", "dictionary", "copy"])
    data: TrainData = field(default_factory=TrainData)
    dictionaries: list[str] = _f(
        ["medsimp/resources/abbreviations.json", "data/sample/medlane/dictionary.json"]
    )
    encoder: str = "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext"
    encoder_fallback: str | None = "minilm"
    max_length: int = 64
    max_option_length: int = 16
    max_options: int = 8
    max_span: int = 16
    batch_size: int = 8
    epochs: int = 10
    lr: float = 5.0e-5
    head_lr: float = 2.0e-3
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    patience: int = 1
    dropout: float = 0.1
    copy_attention: bool = False
    locator_labels: Literal["annotation", "dictionary"] = "annotation"
    dictionary_expansion: Literal["random", "first"] = "random"
    seed: int = 13
    threads: int = 1


@dataclass
class Evaluate:
    models: list[str] = _f(["declare", "bertmt", "dictionary", "copy"])
    models_dir: str = "out/models"
    split: str = "test"
    common_words: str | None = None  # null: notes.common_words
    dictionaries: list[str] | None = None  # null: train.dictionaries
    meteor: bool = True
    bertscore: bool = True
    bertscore_model: str = "minilm"
    select: list[str] | None = None  # null: every metric
    bootstrap_samples: int = 1000
    bootstrap_seed: int = 12345
    length_buckets: list[int] = _f([0, 10, 15, 20, 30])
    style_data: str | None = None  # null: style_accuracy not computed
    perplexity_model: str | None = None  # null: perplexity not computed
    umls_index: str | None = None  # null: masked_edit_distance not computed


@dataclass
class Refresh:
    report_dir: str = "reports/refresh"
    lock: str = ".dvc/tmp/medsimp-refresh.lock"
    targets: list[str] = _f([])
    builders_dir: str = "builders"
    repro_args: list[str] = _f([])
    restore_on_failure: bool = True
    keep_reports: int = 200


@dataclass
class Radiology:
    input: str = "data/sample/NOTEEVENTS.csv"
    output: str = "out/radiology"
    sections: list[str] = _f(["findings", "impression"])
    splitter: Literal["rules", "rush"] = "rules"
    min_tokens: int = 2
    max_tokens: int = 60
    num_shards: int = 1
    num_ranges: int = 2
    max_text_chars: int = 1_000_000


@dataclass
class SimplifyOpenai:
    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.8
    max_tokens: int = 512
    seed: int | None = 0
    timeout: float = 60
    max_retries: int = 5
    backoff: float = 1.0
    max_backoff: float = 60
    requests_per_minute: float = 0


@dataclass
class SimplifyLocal:
    path: str = ""
    temperature: float = 0.8
    max_tokens: int = 256
    seed: int = 0


@dataclass
class SimplifyEgress:
    allow_loopback: bool = True
    allowed_endpoints: list[str] = _f([])


@dataclass
class Simplify:
    enabled: bool = False
    backend: Literal["openai", "local"] = "openai"
    input: str = "out/radiology/sentences"
    output: str = "out/simplify"
    prompts: str = "medsimp/resources/prompts/selfcorrect-yang2024.yaml"
    max_rounds: int = 10
    reviser_memory: bool = True
    concurrency: int = 4
    limit: int = 0
    openai: SimplifyOpenai = field(default_factory=SimplifyOpenai)
    egress: SimplifyEgress = field(default_factory=SimplifyEgress)
    local: SimplifyLocal = field(default_factory=SimplifyLocal)


@dataclass
class Humaneval:
    input: str = "out/simplify/variants.csv"
    forms: str = "out/humaneval/forms"
    responses: str = "humaneval/responses"
    output: str = "out/humaneval/results"
    systems: list[str] = _f(["plain", "plain_sc", "cot", "cot_sc"])
    n_laypeople: int = 8
    seed: int = 0
    metric_columns: list[str] = _f(["fkgl", "gunning_fog", "ari"])


@dataclass
class AnnotateReport:
    examples: int = 3
    bins: int = 20
    top_semtypes: int = 10


@dataclass
class Annotate:
    similarities: list[str] = _f(["overlap", "cosine", "crf"])
    majority: float = 0.5
    annotations: str = "data/sample/annotations"
    gold: str = "out/annotate/gold"
    host: str = "127.0.0.1"
    port: int = 8765
    report: AnnotateReport = field(default_factory=AnnotateReport)


@dataclass
class Cache:
    dir: str | None = ".cache/medsimp"


@dataclass
class Params:
    """The whole params file: one field per section."""

    beam: Beam = field(default_factory=Beam)
    notes: Notes = field(default_factory=Notes)
    cochrane: Cochrane = field(default_factory=Cochrane)
    msd: Msd = field(default_factory=Msd)
    plaba: Plaba = field(default_factory=Plaba)
    umls: Umls = field(default_factory=Umls)
    link: Link = field(default_factory=Link)
    readability: Readability = field(default_factory=Readability)
    align: Align = field(default_factory=Align)
    filter: Filter = field(default_factory=Filter)
    build: Build = field(default_factory=Build)
    train: Train = field(default_factory=Train)
    evaluate: Evaluate = field(default_factory=Evaluate)
    refresh: Refresh = field(default_factory=Refresh)
    radiology: Radiology = field(default_factory=Radiology)
    simplify: Simplify = field(default_factory=Simplify)
    humaneval: Humaneval = field(default_factory=Humaneval)
    annotate: Annotate = field(default_factory=Annotate)
    cache: Cache = field(default_factory=Cache)


# Old key -> the key that replaced it. The old key is still read (moved to the new one, with a
# warning); giving both with different values is an error.
ALIASES: dict[str, str] = {
    "link.index": "umls.index",  # one QuickUMLS index path: umls-index writes it, link reads it
}


# --------------------------------------------------------------------------- checking
class SchemaError(ValueError):
    """A value or key that does not fit the schema (one line; config turns it into ParamsError)."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def fields_of(cls: type) -> dict[str, Any]:
    """Field name -> type of a schema dataclass, in declaration order."""
    hints = _hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


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
    origin, args = typing.get_origin(tp), typing.get_args(tp)
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
        }.get(inner, inner)
        return f"a list of {plural}"
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return getattr(tp, "__name__", str(tp))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fits(tp: Any, value: Any) -> bool:
    try:
        check_value(tp, value, "")
    except SchemaError:
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


def check_value(tp: Any, value: Any, where: str) -> None:
    """Raise SchemaError (one line) unless `value` fits type `tp`; `where` is the dotted key."""
    bad = SchemaError(f"param {where!r} must be {describe(tp)}, got {_short(value)}")
    if tp is Any:
        return
    if tp is type(None):
        if value is not None:
            raise bad
        return
    if tp is bool:
        if not isinstance(value, bool):
            raise bad
        return
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
        return
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        return
    if tp is str:
        if not isinstance(value, str):
            raise bad
        return
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if _is_union(tp):
        if any(_fits(a, value) for a in args):
            return
        # the value is the right container for a member: report the inner problem (more precise)
        for member in args:
            kind = typing.get_origin(member) or member
            if kind in (list, dict) and isinstance(value, kind):
                check_value(member, value, where)
        raise bad
    if origin is Literal:
        if value not in args or isinstance(value, bool) != any(isinstance(a, bool) for a in args):
            raise bad
        return
    if origin is list:
        if not isinstance(value, list):
            raise bad
        for i, item in enumerate(value):
            check_value(args[0] if args else Any, item, f"{where}[{i}]")
        return
    if origin is dict:
        if not isinstance(value, dict):
            raise bad
        key_tp, val_tp = args if args else (Any, Any)
        for k, v in value.items():
            check_value(key_tp, k, f"{where} key")
            check_value(val_tp, v, f"{where}.{k}")
        return
    if _is_schema(tp):
        if value is not None:  # an empty section (`humaneval:`) is all defaults
            check_mapping(tp, value, where)
        return
    raise SchemaError(f"param {where!r}: schema type {tp!r} is not supported")  # a schema bug


def _is_schema(tp: Any) -> bool:
    """Whether `tp` is a section dataclass (a class, not an instance)."""
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _is_instance(node: Any) -> bool:
    return dataclasses.is_dataclass(node) and not isinstance(node, type)


def check_mapping(cls: type, value: Any, where: str = "") -> None:
    """Check a mapping against schema dataclass `cls`: known keys only, each of the right type.
    Absent keys are fine (they take the schema default)."""
    if not isinstance(value, dict):
        if not where:
            raise SchemaError(f"a params file must hold a mapping at top level, got {_short(value)}")
        raise SchemaError(
            f"param {where!r} must be a mapping with keys {', '.join(fields_of(cls))}, got {_short(value)}"
        )
    known = fields_of(cls)
    for key, item in value.items():
        dotted = f"{where}.{key}" if where else str(key)
        if key not in known:
            raise SchemaError(unknown_key_message(dotted, dotted, list(known), list_valid=True))
        check_value(known[key], item, dotted)


@functools.cache
def _all_keys() -> tuple[str, ...]:
    out: list[str] = []

    def walk(cls: type, prefix: str) -> None:
        for name, tp in fields_of(cls).items():
            dotted = f"{prefix}{name}"
            out.append(dotted)
            if _is_schema(tp):
                walk(tp, dotted + ".")

    walk(Params, "")
    return tuple(out)


def all_keys() -> list[str]:
    """Every dotted key the schema names (sections, nested mappings and leaves)."""
    return list(_all_keys())


def leaf_keys() -> list[str]:
    """Dotted keys whose value is not a schema dataclass (what params.yaml must spell out)."""
    return [k for k in _all_keys() if not dataclasses.is_dataclass(type_of(k))]


def type_of(dotted: str) -> Any:
    """The schema type at a dotted key (through open maps: their value type).
    Raises SchemaError naming the nearest valid key when there is no such key."""
    tp: Any = Params
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        here, parent = ".".join(parts[: i + 1]), ".".join(parts[:i])
        if _is_schema(tp):
            known = fields_of(tp)
            if part not in known:
                raise SchemaError(unknown_key_message(dotted, here, list(known)))
            tp = known[part]
            continue
        members = typing.get_args(tp) if _is_union(tp) else (tp,)
        maps = [a for a in members if typing.get_origin(a) is dict or a is Any]
        if not maps:
            raise SchemaError(f"cannot set {here!r}: {parent!r} is {describe(tp)}, not a mapping")
        tp = typing.get_args(maps[0])[1] if typing.get_origin(maps[0]) is dict else Any
    return tp


def default(dotted: str) -> Any:
    """The schema default at a dotted key (a fresh copy), e.g. default("evaluate.length_buckets")."""
    node: Any = Params()
    for part in dotted.split("."):
        node = getattr(node, part) if dataclasses.is_dataclass(node) else node[part]
    return copy.deepcopy(dataclasses.asdict(node) if _is_instance(node) else node)


def defaults() -> dict[str, Any]:
    """Every default as the nested plain dict a complete params.yaml would hold."""
    return dataclasses.asdict(Params())


def build(cls: type, data: dict | None) -> Any:
    """An instance of schema dataclass `cls` from a checked mapping, defaults filled in."""
    data = data or {}
    kwargs = {}
    for name, tp in fields_of(cls).items():
        if name in data:
            value = data[name]
            kwargs[name] = build(tp, value) if _is_schema(tp) else copy.deepcopy(value)
    return cls(**kwargs)


def _apply_alias_in_file(data: dict, old: str, new: str) -> None:
    old_parent, _, old_leaf = old.rpartition(".")
    new_parent, _, new_leaf = new.rpartition(".")
    holder = data.get(old_parent)
    if not isinstance(holder, dict) or old_leaf not in holder:
        return
    value = holder.pop(old_leaf)
    target = data.get(new_parent)
    if target is None:
        target = data[new_parent] = {}
    if isinstance(target, dict):
        if new_leaf in target and target[new_leaf] != value:
            raise SchemaError(
                f"param {old!r} is deprecated and differs from {new!r} "
                f"({_short(value)} vs {_short(target[new_leaf])}): keep only {new!r}"
            )
        target[new_leaf] = value
    log.warning("param %r is deprecated: read as %r (set %r instead)", old, new, new)


def check_file(data: Any, source: str = "params") -> dict:
    """A deep copy of a params file's contents with deprecated keys moved (ALIASES),
    checked against the schema. Raises SchemaError prefixed with `source`."""
    if data is None:
        data = {}
    try:
        if not isinstance(data, dict):
            check_mapping(Params, data)
        data = copy.deepcopy(data)
        for old, new in ALIASES.items():
            _apply_alias_in_file(data, old, new)
        check_mapping(Params, data)
    except SchemaError as exc:
        raise SchemaError(f"{source}: {exc}") from None
    return data


def parse_override(item: str) -> tuple[str, Any]:
    """`key.sub=value` -> (dotted key, value): value parsed as YAML and checked against the key's
    type; a deprecated key is renamed. A string-typed key keeps the raw text when YAML would
    read a number or boolean (`--set simplify.openai.model=4` is the string '4')."""
    import yaml

    if "=" not in item:
        raise SchemaError(f"override {item!r} must look like key.sub=value")
    key, raw = (s.strip() for s in item.split("=", 1))
    if key in ALIASES:
        log.warning("param %r is deprecated: read as %r (set %r instead)", key, ALIASES[key], ALIASES[key])
        key = ALIASES[key]
    tp = type_of(key)
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        raise SchemaError(
            f"param {key!r} must be {describe(tp)}, got {_short(raw)} (not valid YAML)"
        ) from None
    if isinstance(value, (bool, int, float)) and not _fits(tp, value) and _fits(tp, raw):
        value = raw
    check_value(tp, value, key)
    return key, value


def typed(params: dict) -> Params:
    """The typed view of loaded params (attribute access, defaults filled in)."""
    check_mapping(Params, params)
    return build(Params, params)
