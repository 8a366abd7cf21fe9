"""Loading `params.yaml` with command-line overrides, and a stable params hash."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import yaml

from medsimp import resources
from medsimp.errors import UsageError


class ParamsError(UsageError, ValueError):
    """A params file or override that cannot be used."""


def _set_dotted(tree: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        if node.get(key) is None:  # absent, or an empty section (`humaneval:`)
            node[key] = {}
        node = node[key]
        if not isinstance(node, dict):
            raise ParamsError(f"cannot set {dotted!r}: {key!r} is not a mapping")
    node[keys[-1]] = value


def apply_overrides(params: dict, overrides: list[str]) -> dict:
    """Return a copy of `params` with `key.sub=value` overrides applied (values parsed as YAML)."""
    out = copy.deepcopy(params)
    for item in overrides:
        if "=" not in item:
            raise ParamsError(f"override {item!r} must look like key.sub=value")
        key, raw = item.split("=", 1)
        _set_dotted(out, key.strip(), yaml.safe_load(raw))
    return out


def load_params(path: str | Path = "params.yaml", overrides: list[str] | None = None) -> dict:
    """Read the params file (an absent file gives {}), then apply overrides.

    The file and every override are checked against `medsimp.params_schema` (unknown keys,
    wrong types and bad values are a one-line ParamsError). Keys the file leaves out are
    absent from the result: their default is `params_schema.default("section.key")`."""
    from medsimp import params_schema

    p = Path(path)
    data: dict = {}
    if p.exists():
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise ParamsError(f"{p}: not valid YAML{where}") from None
        if not isinstance(data, dict):
            raise ParamsError(f"{p} must hold a mapping at top level")
    try:
        data = params_schema.check_file(data, str(p))
        for item in overrides or []:
            _set_dotted(data, *params_schema.parse_override(item))
    except params_schema.SchemaError as exc:
        raise ParamsError(str(exc)) from None
    return data


def resolve_path(value: str | Path, base: str | Path = ".") -> str:
    """A path named in params: relative to `base`, the params file's folder (not the current
    one); absolute paths and URLs (`gs://...`) are kept. `medsimp/resources/<name>` that is not
    under `base` (an installed medsimp, no checkout) is the packaged file (`resources.path`)."""
    text = str(value)
    if "://" in text:
        return text
    path = os.path.join(base, text)
    if text.startswith(resources.FOLDER) and not os.path.exists(path):
        return str(resources.path(text.removeprefix(resources.FOLDER)))
    return path


def params_dir(params_file: str | Path) -> Path:
    """The folder relative params paths are resolved against."""
    return Path(params_file).resolve().parent


def section(params: dict, name: str) -> dict:
    """The `name` section of params, or {} when absent."""
    value = params.get(name) or {}
    if not isinstance(value, dict):
        raise ParamsError(f"params section {name!r} must be a mapping")
    return value


def params_hash(params: dict) -> str:
    """sha256 of the canonical JSON of `params` (first 16 hex digits)."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
