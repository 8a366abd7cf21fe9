"""The typed schema of `params.yaml`: the root that composes the sections, the single home of
defaults being each section's own module.

Each section of `params.yaml` is declared in its own module, `medsimp.sections.<section>` (`Filter`
in `medsimp/sections/filter.py`), on the value types of `medsimp.sections.base`; this module
composes them into `Params`, moves deprecated keys (`ALIASES`) and checks a whole file. Every key
is a field, with its type, its allowed range and its default; `tests/test_params.py` fails when
params.yaml and the schema disagree. `medsimp.config.load_params` reads the file once into a
`Params` (every default filled in) and code reads typed sections from it
(`params.filter.threshold`). Models are strict (`true` is not a number, `'1'` not an integer; an
integer is accepted where a number is expected) and forbid unknown keys; errors are one line,
with the dotted key and "did you mean" for a typo (`ParamsError`, exit 2).

Code imports a section's names from here (`from medsimp.params_schema import Filter`) or from its
module; either way a stage's code deps hold only the section modules it imports or lists under
`params:` in dvc.yaml (`medsimp.code_graph.COMPOSERS`): this module is no stage's code, and
`tests/test_params.py` checks that it adds nothing to what the sections read.

Adding a key is one line in the section's model, e.g. in `Simplify` (medsimp/sections/simplify.py):

    allowed_endpoints: list[str] = []

plus the same key and value in `params.yaml` (see docs/architecture.md, "Params").
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from pydantic import Field, PrivateAttr, ValidationError

from medsimp import yamlsafe
from medsimp.sections.align import (
    Align,
    AlignCalibration,
    Crf,
    E5Spec,
    EncoderSpec,
    LaserSpec,
    SelfTraining,
    STSpec,
    UseSpec,
    Vecalign,
    encoder_spec,
)
from medsimp.sections.annotate import Annotate, AnnotateReport
from medsimp.sections.base import (
    Algorithm1Reading,
    Comparison,
    Count,
    Fraction,
    Language,
    NonNegative,
    Number,
    Port,
    Positive,
    ScoringMode,
    Section,
    StopwordList,
    ordered,
    ranged,
)
from medsimp.sections.beam import Beam
from medsimp.sections.build import (
    Build,
    BuildMedlane,
    BuildMsd,
    BuildMulticochrane,
    BuildPlaba,
    BuildRadiology,
    PlabaSplit,
    Split,
)
from medsimp.sections.cache import Cache
from medsimp.sections.checks import (
    SchemaError,
    describe,
    fields_of,
    fits,
    is_model,
    is_union,
    keys_of,
    kinds_of,
    schema_message,
    section_of,
    short,
    suggest,
    type_at,
    unknown_key_message,
    updated,
)
from medsimp.sections.cochrane import Cochrane
from medsimp.sections.evaluate import Evaluate
from medsimp.sections.filter import Filter
from medsimp.sections.humaneval import Humaneval
from medsimp.sections.link import Link
from medsimp.sections.msd import Msd
from medsimp.sections.notes import Notes
from medsimp.sections.plaba import Plaba
from medsimp.sections.radiology import Radiology
from medsimp.sections.readability import Readability
from medsimp.sections.refresh import Refresh
from medsimp.sections.simplify import Simplify, SimplifyEgress, SimplifyLocal, SimplifyOpenai
from medsimp.sections.train import Train, TrainData
from medsimp.sections.umls import Umls

__all__ = [  # the sections' names, for `from medsimp.params_schema import X`
    "ALIASES",
    "Algorithm1Reading",
    "Align",
    "AlignCalibration",
    "Annotate",
    "AnnotateReport",
    "Beam",
    "Build",
    "BuildMedlane",
    "BuildMsd",
    "BuildMulticochrane",
    "BuildPlaba",
    "BuildRadiology",
    "Cache",
    "Cochrane",
    "Comparison",
    "Count",
    "Crf",
    "E5Spec",
    "EncoderSpec",
    "Evaluate",
    "Filter",
    "Fraction",
    "Humaneval",
    "Language",
    "LaserSpec",
    "Link",
    "Msd",
    "NonNegative",
    "Notes",
    "Number",
    "Params",
    "Plaba",
    "PlabaSplit",
    "Port",
    "Positive",
    "Radiology",
    "Readability",
    "Refresh",
    "SAMPLE_PROFILE",
    "STSpec",
    "SchemaError",
    "ScoringMode",
    "Section",
    "SelfTraining",
    "Simplify",
    "SimplifyEgress",
    "SimplifyLocal",
    "SimplifyOpenai",
    "Split",
    "StopwordList",
    "Train",
    "TrainData",
    "Umls",
    "UseSpec",
    "Vecalign",
    "all_keys",
    "check_file",
    "defaults",
    "describe",
    "encoder_spec",
    "fields_of",
    "fits",
    "is_model",
    "is_union",
    "keys_of",
    "kinds_of",
    "leaf_keys",
    "ordered",
    "parse_override",
    "ranged",
    "schema_message",
    "section_of",
    "short",
    "suggest",
    "type_at",
    "type_of",
    "unknown_key_message",
    "updated",
    "validate",
]

log = logging.getLogger("medsimp.params")


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


def validate(data: dict) -> Params:
    """A typed `Params` from a plain mapping (raises SchemaError, one line)."""
    try:
        return Params.model_validate(data)
    except ValidationError as exc:
        raise SchemaError(schema_message(exc, Params, data, list_valid=True)) from None


def all_keys() -> list[str]:
    """Every dotted key the schema names (sections, nested mappings and leaves)."""
    return list(keys_of(Params))


def leaf_keys() -> list[str]:
    """Dotted keys whose value is not a section (what params.yaml must spell out)."""
    return [k for k in keys_of(Params) if not is_model(type_of(k))]


def type_of(dotted: str) -> Any:
    """The schema type at a dotted key (through open maps: their value type).
    Raises SchemaError naming the nearest valid key when there is no such key."""
    return type_at(Params, dotted)


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
                f"({short(value)} vs {short(target[new_leaf])}): keep only {new!r}"
            )
        target[new_leaf] = value
    log.warning("param %r is deprecated: read as %r (set %r instead)", old, new, new)


def check_file(data: Any, source: str = "params") -> dict:
    """A copy of a params file's contents with deprecated keys moved (ALIASES), checked against
    the schema. Raises SchemaError prefixed with `source`."""
    if data is None:
        data = {}
    try:
        if not isinstance(data, dict):
            raise SchemaError(f"a params file must hold a mapping at top level, got {short(data)}")
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
    if "=" not in item:
        raise SchemaError(f"override {short(item)} must look like key.sub=value")
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
                f"param {key!r} must be {describe(tp)}, got {short(raw)} (a number too long to read)"
            ) from None
        if "not valid YAML" in str(exc):
            raise SchemaError(
                f"param {key!r} must be {describe(tp)}, got {short(raw)} (not valid YAML)"
            ) from None
        raise SchemaError(f"param {key!r}: {exc}") from None
    if isinstance(value, (bool, int, float)) and not fits(tp, value) and fits(tp, raw):
        value = raw
    return key, value
