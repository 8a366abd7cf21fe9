"""Each DVC stage's code deps: the files its `medsimp` subcommand imports.

DVC's example-get-started lists each stage's own code (`src/prepare.py`); here that list is the
import closure of the stage's command module (`medsimp.code_graph`): its modules and the
packaged resources they name. A comment in the annotator page then reruns the annotation
stage and no data or training stage. (The parser also loads the other command modules at start;
their top-level code only declares flags, so it is left out.) dvc.yaml holds the lists; this
module writes them:

    python -m medsimp.cli.dvc_deps            # rewrite dvc.yaml's code deps in place
    python -m medsimp.cli.dvc_deps --check    # exit 1 and name the stages whose deps differ

Only the code entries of each `deps:` list are replaced (entries under medsimp/, pipelines/,
alignment/, training/ without `${...}`); data deps, comments and everything else stay as written.
`tests/test_dvc_deps.py` checks the committed dvc.yaml equals its rewrite, and holds the contract:
for the modules a change is most likely to touch, the stages a comment in each may rerun.

A command whose code depends on its arguments (`medsimp train --model copy` runs no DECLARE code)
imports that code by a name it builds at run time, which the import graph does not follow, and
says which modules a run imports so in `code_modules(args) -> list[str]`. Its stage is a
`foreach` over a mapping (`train@declare`, `train@copy`, ...): this module parses each item's
command and writes, as the item's values `code1..codeN`, the files that item's modules add to the
command's closure (a shorter list repeats its last file: DVC cannot interpolate a list into
`deps`, so every item has the same slots), and lists them as the deps `${item.code1}` ... .
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

import yaml

from medsimp import code_graph
from medsimp import resources as packaged
from medsimp.cli.app import build_parser, command_module

ROOT = Path(__file__).resolve().parents[2]  # the checkout holding dvc.yaml
_STAGE = re.compile(r"^  (?P<name>[\w-]+):\s*(?:#.*)?$")
_DEPS = re.compile(r"^(?P<indent>\s+)deps:\s*(?:#.*)?$")
_ITEM = re.compile(r"^(?P<indent>\s+)- (?P<value>[^#\s]+)\s*(?:#.*)?$")
_FOREACH = re.compile(r"^(?P<indent>\s+)foreach:\s*(?:#.*)?$")
_SLOT = re.compile(r"^\$\{item\.code\d+\}$")  # a foreach item's own code (`code_modules`)


def code_deps(module: str, *extra: str) -> list[str]:
    """The checkout files the command module `module` (and the modules `extra` it imports by a
    run-time name) import or read as packaged resources (sorted), with the `medsimp` entry point
    that runs it."""
    modules, names = code_graph.closure(["medsimp.cli", module, *extra])
    files = {p.relative_to(ROOT).as_posix() for p in modules.values() if p.is_relative_to(ROOT)}
    files |= {packaged.path(n).resolve().relative_to(ROOT).as_posix() for n in names}
    return sorted(files)


def stage_commands(text: str) -> dict[str, str]:
    """Stage name -> the command module its cmd (`medsimp <subcommand> ...`) runs."""
    parser = build_parser()
    found = {}
    for name, body in yaml.safe_load(text)["stages"].items():
        cmd = body.get("do", body)["cmd"]
        words = shlex.split(cmd)
        module = command_module(parser, words[1:]) if words[:1] == ["medsimp"] else None
        if module is None:
            raise ValueError(f"stage {name} does not run a `medsimp <subcommand>`: {cmd!r}")
        found[name] = module
    return found


def variant_code(text: str) -> dict[str, dict[str, list[str]]]:
    """Stage -> foreach key -> the files that item's run adds to its command's closure, for the
    stages whose command module defines `code_modules(args)` (the item's cmd, `${key}`
    substituted, parsed as the command line)."""
    parser = build_parser()
    found: dict[str, dict[str, list[str]]] = {}
    for name, module in stage_commands(text).items():
        code_modules = getattr(importlib.import_module(module), "code_modules", None)
        if code_modules is None:
            continue
        body = yaml.safe_load(text)["stages"][name]
        if not isinstance(body.get("foreach"), dict):
            raise ValueError(
                f"stage {name}: {module} chooses its code by its arguments: make it a foreach over a mapping"
            )
        shared = set(code_deps(module))
        found[name] = {}
        for key in body["foreach"]:
            words = shlex.split(body["do"]["cmd"].replace("${key}", str(key)))
            args = parser.parse_args(words[1:])
            found[name][key] = sorted(set(code_deps(module, *code_modules(args))) - shared)
    return found


def _slots(own: dict[str, list[str]], module: str) -> dict[str, list[str]]:
    """Each item's own files padded to the same number of slots (repeating its last file, or the
    command module's file for an item with none)."""
    width = max((len(files) for files in own.values()), default=0)
    command_file = code_deps(module)[0]
    return {
        k: files + [files[-1] if files else command_file] * (width - len(files)) for k, files in own.items()
    }


def _fill(value: str, values: dict[str, str]) -> str:
    """`value` with each `${item...}` / `${key}` that `values` holds replaced."""
    return re.sub(r"\$\{(?:item|key)[.\w]*\}", lambda m: values.get(m[0], m[0]), value)


def stage_files(text: str, params: dict | None = None) -> dict[str, set[str]]:
    """Every DVC stage as DVC names it (`filter`, `train@copy`) -> the code files its deps list,
    foreach items resolved (`${item.code1}`, `${item}`; a foreach over `${section.key}` is read
    from `params`, params.yaml by default)."""
    out: dict[str, set[str]] = {}
    for name, body in yaml.safe_load(text)["stages"].items():
        if "foreach" not in body:
            out[name] = {d for d in body["deps"] if is_code(d)}
            continue
        items = body["foreach"]
        if isinstance(items, str):  # `${train.models}`
            if params is None:
                params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
            for part in items.strip("${}").split("."):
                items = params[part] if isinstance(params, dict) else None
                params = items if isinstance(items, dict) else params
        pairs = items.items() if isinstance(items, dict) else [(k, k) for k in items]
        for key, item in pairs:
            values = {f"${{item.{k}}}": str(v) for k, v in item.items()} if isinstance(item, dict) else {}
            values |= {"${item}": str(item), "${key}": str(key)}
            deps = [_fill(d, values) for d in body["do"]["deps"]]
            out[f"{name}@{key}"] = {d for d in deps if is_code(d)}
    return out


def is_code(value: str) -> bool:
    """A dep entry that names our code (not a `${...}` data path)."""
    return "${" not in value and value.strip("'\"").split("/")[0] in code_graph.ROOT_PACKAGES


def sync(text: str) -> str:
    """dvc.yaml's text with every stage's code deps set to its command's import closure."""
    commands = stage_commands(text)
    slots = {name: _slots(own, commands[name]) for name, own in variant_code(text).items()}
    out: list[str] = []
    stage: str | None = None
    in_stages = False
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\S", line):
            in_stages = line.startswith("stages:")
            stage = None
        elif in_stages and (m := _STAGE.match(line)):
            stage = m["name"]
        deps = _DEPS.match(line) if stage in commands else None
        foreach = _FOREACH.match(line) if stage in slots else None
        out.append(line)
        i += 1
        if foreach and stage is not None:  # the items' own code, one flow mapping per item
            while i < len(lines) and len(lines[i]) - len(lines[i].lstrip()) > len(foreach["indent"]):
                i += 1
            for key, files in slots[stage].items():
                values = ", ".join(f"code{n}: {f}" for n, f in enumerate(files, 1))
                out.append(f"{foreach['indent']}  {key}: {{{values}}}\n")
            continue
        if not deps or stage is None:
            continue
        items: list[str] = []
        indent = None
        while (
            i < len(lines) and (item := _ITEM.match(lines[i])) and len(item["indent"]) > len(deps["indent"])
        ):
            indent = item["indent"]
            if not is_code(item["value"]) and not _SLOT.match(item["value"]):
                items.append(lines[i])
            i += 1
        indent = indent or deps["indent"] + "  "
        out.extend(items)
        width = len(next(iter(slots[stage].values()), [])) if stage in slots else 0
        out.extend(f"{indent}- ${{item.code{n}}}\n" for n in range(1, width + 1))
        out.extend(f"{indent}- {path}\n" for path in code_deps(commands[stage]))
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m medsimp.cli.dvc_deps", description=__doc__.split("\n")[0]
    )
    parser.add_argument("dvc_yaml", nargs="?", default=str(ROOT / "dvc.yaml"))
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a stage differs")
    args = parser.parse_args(argv)
    path = Path(args.dvc_yaml)
    if path.is_symlink() or not path.is_file():
        print(f"{path}: not a regular file (a link or missing): nothing rewritten", file=sys.stderr)
        return 2
    text = path.read_text(encoding="utf-8")
    new = sync(text)
    if args.check:
        old, fresh = yaml.safe_load(text)["stages"], yaml.safe_load(new)["stages"]
        differ = [name for name in old if old[name] != fresh[name]]
        if differ:
            print(f"{path}: code deps differ in {', '.join(differ)} (run python -m medsimp.cli.dvc_deps)")
            return 1
        return 0
    if new != text:
        with tempfile.NamedTemporaryFile(  # O_EXCL, a fresh name: never a planted file
            "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False
        ) as tmp:
            tmp.write(new)
        os.replace(tmp.name, path)
        print(f"{path}: code deps rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
