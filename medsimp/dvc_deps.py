"""Code deps of the DVC stages, computed, so `dvc.yaml` cannot go stale.

A stage's code is the import closure of the `medsimp` subcommand its `cmd` runs: every one of
our modules that `medsimp.cli` and `medsimp.commands.<name>` import, at module level or inside
functions, plus modules named by a string constant (`BUILDERS`' dotted names), plus their
parent packages' `__init__.py`. Module names become files through `importlib.util.find_spec`,
so the list follows any package-dir mapping. Packaged resources a stage reads are code deps too:
`resources.path("<name>")` literals in the closure and `resource:<name>` values in the params
sections the stage declares.

`scripts/dvc_deps.py --write` rewrites only the code lines of each stage's `deps` (entries under
`medsimp/`, `pipelines/`, `alignment/`, `training/`); data deps are kept in their place.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from medsimp.code_graph import ROOT_PACKAGE, closure

CODE_PREFIXES = ("medsimp/", "pipelines/", "alignment/", "training/")
_CMD = re.compile(r"^\s*medsimp\s+(?P<sub>[\w-]+)")
_ITEM = re.compile(r"^(?P<indent>\s*)- (?P<value>\S.*?)\s*$")


def _resource_values(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value.removeprefix("resource:")} if value.startswith("resource:") else set()
    if isinstance(value, dict):
        return set().union(*map(_resource_values, value.values()))
    if isinstance(value, list):
        return set().union(*map(_resource_values, value))
    return set()


def _params_section(params: dict[str, Any], key: str) -> Any:
    node: Any = params
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def stage_code_deps(root: Path, stage: dict[str, Any], params: dict[str, Any]) -> list[str]:
    """Sorted repo-relative code and resource paths stage `stage` (a dvc.yaml stage or `do`) needs."""
    m = _CMD.match(stage["cmd"])
    if m is None:
        raise ValueError(f"stage command does not run `medsimp <subcommand>`: {stage['cmd']!r}")
    from medsimp.cli import COMMANDS

    modules, resources = closure([f"{ROOT_PACKAGE}.cli", f"{ROOT_PACKAGE}.commands.{COMMANDS[m['sub']]}"])
    for key in stage.get("params", []):
        if isinstance(key, str):
            resources |= _resource_values(_params_section(params, key))
    from medsimp import resources as packaged

    root = root.resolve()
    paths = {p.relative_to(root).as_posix() for p in modules.values() if p.is_relative_to(root)}
    paths |= {packaged.path(r).resolve().relative_to(root).as_posix() for r in resources}
    return sorted(paths)


def is_code_dep(entry: str) -> bool:
    """A deps entry this module owns (rewritten by --write)."""
    return entry.startswith(CODE_PREFIXES) or entry in {p.rstrip("/") for p in CODE_PREFIXES}


def _stages(root: Path, text: str | None) -> dict[str, Any]:
    spec = yaml.safe_load(text if text is not None else (root / "dvc.yaml").read_text(encoding="utf-8"))
    return {name: body.get("do", body) for name, body in spec["stages"].items()}


def expected(root: Path, text: str | None = None) -> dict[str, list[str]]:
    """Stage name (as in dvc.yaml, foreach stages once) -> its code deps."""
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    return {name: stage_code_deps(root, body, params) for name, body in _stages(root, text).items()}


def rewrite(text: str, code: dict[str, list[str]]) -> str:
    """dvc.yaml text with each stage's code deps replaced by `code[stage]` (data deps kept, in
    order, before them). Line-based, so comments and layout elsewhere are untouched."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    stage: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := re.match(r"^  (?P<name>[\w-]+):\s*$", line):
            stage = m["name"]
        out.append(line)
        i += 1
        if stage is None or not re.match(r"^\s+deps:\s*$", line):
            continue
        items_indent: str | None = None
        while (
            i < len(lines)
            and (m := _ITEM.match(lines[i]))
            and (items_indent is None or m["indent"] == items_indent)
        ):
            items_indent = m["indent"]
            if not is_code_dep(m["value"]):
                out.append(lines[i])
            i += 1
        out.extend(f"{items_indent}- {path}\n" for path in code.get(stage, []))
    return "".join(out)


def missing(root: Path, text: str | None = None) -> dict[str, list[str]]:
    """Stage -> code its command needs that dvc.yaml's deps (`text`, default the file) do not
    cover (a folder covers its files)."""
    gaps: dict[str, list[str]] = {}
    for name, paths in expected(root, text).items():
        covered = set(_stages(root, text)[name].get("deps", []))
        lost = [p for p in paths if not any(p == d or p.startswith(d.rstrip("/") + "/") for d in covered)]
        if lost:
            gaps[name] = lost
    return gaps
