"""Checking a value against a section type: one-line `SchemaError`s with the dotted key and
"did you mean", `section_of` / `updated` (typed sections from mappings), and the type
descriptions the messages use.
"""

from __future__ import annotations

import difflib
import functools
import reprlib
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar, Union

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from medsimp.sections.base import Section


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
        raise SchemaError(schema_message(exc, cls, value, list_valid=True)) from None


def updated(section: S, changes: Mapping[str, Any] | None) -> S:
    """A copy of a typed section with some of its keys replaced, checked like the params file
    (an unknown key or a wrong type: SchemaError, one line)."""
    if not changes:
        return section
    return section_of(type(section), {**section.model_dump(), **changes})


def is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def fields_of(cls: type[BaseModel]) -> dict[str, Any]:
    """Field name -> type of a section model, in declaration order."""
    return {name: f.annotation for name, f in cls.model_fields.items()}


def is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def kinds_of(tp: Any) -> dict[str, type[BaseModel]] | None:
    """A tagged union of sections (`EncoderSpec`): its sections by their `kind`; else None."""
    if typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    members = typing.get_args(tp) if is_union(tp) else ()
    if not members or not all(is_model(m) and "kind" in m.model_fields for m in members):
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
    if kinds := kinds_of(tp):
        return f"a mapping with kind {', '.join(kinds)}"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        return describe(args[0])
    if is_union(tp):
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
    if origin is dict or is_model(tp):
        return "a mapping"
    return getattr(tp, "__name__", str(tp))


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 3, 6, 6, 60, 60


def short(value: Any) -> str:
    """A bounded repr: never formats more than a few items of a large value (alias bombs)."""
    text = _REPR.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@functools.cache
def _adapter(tp: Any) -> TypeAdapter:
    return TypeAdapter(tp, config=ConfigDict(strict=True))


def fits(tp: Any, value: Any) -> bool:
    if is_model(tp):
        return isinstance(value, dict)
    try:
        _adapter(tp).validate_python(value)
    except ValidationError:
        return False
    return True


def _close(word: str, choices: list[str]) -> str | None:
    match = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return match[0] if match else None


def suggest(dotted: str, level: str, valid: list[str], root: type[BaseModel]) -> str | None:
    """The nearest valid key for `dotted` whose prefix `level` does not exist (difflib):
    a sibling of the misspelt part, or for a misspelt section the nearest full key of `root`
    (the section type checked: `Params` for a params file)."""
    parent, _, part = level.rpartition(".")
    rest = dotted[len(level) :]
    if parent:
        near = _close(part, valid)
        return f"{parent}.{near}{rest}" if near else None
    depth = dotted.count(".")
    near = _close(dotted, [k for k in keys_of(root) if k.count(".") == depth])
    if near:
        return near
    near = _close(part, valid)
    if not near:
        return None
    try:
        type_at(root, near + rest)
    except SchemaError:
        return near  # the section exists; the rest is wrong too
    return near + rest


def unknown_key_message(
    dotted: str, level: str, valid: list[str], list_valid: bool = False, *, root: type[BaseModel]
) -> str:
    """`dotted` is the key as given; `level` its prefix that does not exist; `valid` the keys there
    (of the section type `root`). With a close match: `did you mean ...?` (plus the valid keys
    when `list_valid`, as for files)."""
    near = suggest(dotted, level, valid, root)
    parent = level.rpartition(".")[0]
    listing = f"valid keys {f'of {parent!r}' if parent else '(sections)'}: {', '.join(valid)}"
    if near:
        return f"unknown param {dotted!r}; did you mean {near!r}?" + (f" ({listing})" if list_valid else "")
    return f"unknown param {dotted!r}; {listing}"


_TYPE_ERRORS = frozenset(
    {"list_type", "dict_type", "model_type", "model_attributes_type", "string_type", "int_type", "float_type"}
)


def schema_message(exc: ValidationError, root: type[BaseModel], data: Any, list_valid: bool) -> str:
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
        if kinds := kinds_of(tp):  # pydantic names the tag here: step into that kind's section
            if part not in kinds:
                break
            tp = kinds[str(part)]
        elif is_model(tp):
            fields = fields_of(tp)
            if part not in fields:
                break
            tp = fields[part]
            value = value.get(part) if isinstance(value, dict) else None
            where = f"{where}.{part}" if where else str(part)
        elif is_union(tp):
            members = [m for m in typing.get_args(tp) if m is not type(None)]
            if len(members) == 1:  # `T | None`: pydantic adds no step to the location
                if value is None:
                    break
                tp = members[0]
                continue
            bare = [typing.get_args(m)[0] if typing.get_origin(m) is Annotated else m for m in members]
            shapes = [(m, dict if kinds_of(m) else typing.get_origin(m) or m) for m in bare]
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
    if kind in ("union_tag_invalid", "union_tag_not_found") and (kinds := kinds_of(tp)):
        tag = short(value.get("kind")) if isinstance(value, dict) and "kind" in value else "no kind"
        return f"param {where + '.kind'!r} must be one of {', '.join(kinds)}, got {tag}"
    if kind == "extra_forbidden":
        rest = ".".join(str(p) for p in loc[i:])
        dotted = f"{where}.{rest}" if where and rest else where or rest
        message = unknown_key_message(
            dotted, dotted, list(fields_of(tp)) if is_model(tp) else [], list_valid, root=root
        )
        # the other kinds of a tagged section (the encoder specs: the sections with a `kind`)
        tagged = [m for m in Section.__subclasses__() if "kind" in m.model_fields]
        other = [m for m in tagged if m is not tp and loc[i] in m.model_fields]
        if is_model(tp) and "kind" in tp.model_fields and other:  # another kind's key, kept by --set
            message += f"; to change the kind, set the whole spec (e.g. '{where}={{kind: {tp.model_fields['kind'].default}}}')"
        return message
    if kind == "param_order":
        ctx = err.get("ctx") or {}
        low, high = ctx.get("low"), ctx.get("high")
        lo = f"{where}.{low}" if where else str(low)
        hi = f"{where}.{high}" if where else str(high)
        got = (ctx.get("low_value", "?"), ctx.get("high_value", "?"))  # defaults filled in
        return f"param {lo!r} must not exceed {hi!r}, got {got[0]} > {got[1]}"
    if kind == "model_type" or kind == "dict_type" and is_model(tp):
        return f"param {where!r} must be a mapping with keys {', '.join(fields_of(tp))}, got {short(value)}"
    if kind == "too_short":
        return f"param {where!r} must not be empty, got {short(value)}"
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
        return f"a params file must hold a mapping at top level, got {short(value)}"
    return f"param {where!r} must be {what}, got {short(value)}"


@functools.cache
def keys_of(root: type[BaseModel]) -> tuple[str, ...]:
    """Every dotted key of the section type `root` (nested sections and leaves)."""
    out: list[str] = []

    def walk(cls: type[BaseModel], prefix: str) -> None:
        for name, tp in fields_of(cls).items():
            dotted = f"{prefix}{name}"
            out.append(dotted)
            if is_model(tp):
                walk(tp, dotted + ".")

    walk(root, "")
    return tuple(out)


def type_at(root: type[BaseModel], dotted: str) -> Any:
    """The type at a dotted key of the section type `root` (through open maps: their value type).
    Raises SchemaError naming the nearest valid key when there is no such key."""
    tp: Any = root
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        here, parent = ".".join(parts[: i + 1]), ".".join(parts[:i])
        if is_model(tp):
            known = fields_of(tp)
            if part not in known:
                raise SchemaError(unknown_key_message(dotted, here, list(known), root=root))
            tp = known[part]
            continue
        members = typing.get_args(tp) if is_union(tp) else (tp,)
        kinds = {tag: m for a in (tp, *members) for tag, m in (kinds_of(a) or {}).items()}
        if kinds:  # a key of a tagged section (`align.crf.encoder.threads`): checked when validated
            if part == "kind":
                tp = Literal[tuple(kinds)]
                continue
            tagged = [m for m in kinds.values() if part in m.model_fields]
            if not tagged:
                keys = list(dict.fromkeys(f for m in kinds.values() for f in m.model_fields))
                raise SchemaError(unknown_key_message(dotted, here, keys, root=root))
            tp = fields_of(tagged[0])[part]
            continue
        maps = [a for a in members if typing.get_origin(a) is dict or a is Any]
        if not maps:
            raise SchemaError(f"cannot set {here!r}: {parent!r} is {describe(tp)}, not a mapping")
        tp = typing.get_args(maps[0])[1] if typing.get_origin(maps[0]) is dict else Any
    return tp
