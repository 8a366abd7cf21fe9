"""Each DVC stage's code deps: the files its `medsimp` subcommand imports, and its params sections.

DVC's example-get-started lists each stage's own code (`src/prepare.py`) and its own params; here
the code list is the import closure of the stage's command module (`medsimp.code_graph`): its
modules and the packaged resources they name, plus the modules declaring the params sections the
stage lists under `params:` (`medsimp.sections.<section>`; the params root that composes them,
`medsimp.params_schema`, is no stage's code, see `code_graph.COMPOSERS`). A comment in the
annotator page then reruns the annotation stage and no data or training stage, and a docstring
in the filter's section reruns the stages that read `filter`. (The parser also loads the other
command modules at start; their top-level code only declares flags, so it is left out.) dvc.yaml
holds the lists; this module writes them:

    python -m medsimp.cli.dvc_deps            # rewrite dvc.yaml's code deps in place
    python -m medsimp.cli.dvc_deps --check    # exit 1 and name the stages whose deps differ

Only the code entries of each `deps:` list are replaced (entries under medsimp/, pipelines/,
alignment/, training/ without `${...}`) and the generated item slots below; data deps, comments
and everything else stay as written. `tests/test_dvc_deps.py` checks the committed dvc.yaml equals
its rewrite, and holds the contract: for the modules a change is most likely to touch, the stages
a comment in each may rerun.

A `foreach` stage whose items differ lists what differs as item slots, since DVC cannot
interpolate a list into `deps` or `params` (every item has the same slots; a shorter list repeats
its last entry):
- its own code, `${item.code1}` ...: a command whose code depends on its arguments (`medsimp train
  --model copy` runs no DECLARE code) imports that code by a name it builds at run time, which the
  import graph does not follow, and says which modules a run imports in `code_modules(args)`; an
  item's params sections may differ too. Items' shared files stay plain deps.
- its params sections, `${item.p1}` ...: a command whose params depend on its arguments says
  which in `params_sections(args)` (`medsimp build NAME`: `build.NAME` and the sections of the
  stages upstream of that builder, whose params hashes its card records).
Such a stage is a `foreach` over a mapping; this module parses each item's command (`${key}`
substituted) and rewrites the items (one key a line), keeping their other values.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
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
_PARAMS = re.compile(r"^(?P<indent>\s+)params:\s*(?:#.*)?$")
_SLOT = re.compile(r"^\$\{item\.code\d+\}$")  # a foreach item's own code
_PSLOT = re.compile(r"^\$\{item\.p\d+\}$")  # a foreach item's params section


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


def section_modules(entries: list[str]) -> list[str]:
    """The modules declaring the params sections that `params:` entries name (`filter.threshold`
    -> `medsimp.sections.filter`)."""
    from medsimp.params_schema import Params

    found = set()
    for entry in entries:
        field = Params.model_fields.get(entry.split(".")[0])
        if field is None or not isinstance(field.annotation, type):
            raise ValueError(f"params entry {entry!r} names no params section")
        found.add(field.annotation.__module__)
    return sorted(found)


@dataclass
class Plan:
    """What dvc.yaml lists for one stage: the code deps every item shares, and per foreach key its
    own code (`own`) and params (`params`) slots, empty when the items do not differ."""

    shared: list[str]
    own: dict[str, list[str]] = field(default_factory=dict)
    params: dict[str, list[str]] = field(default_factory=dict)


def _padded(lists: dict[str, list[str]], empty: str) -> dict[str, list[str]]:
    width = max((len(v) for v in lists.values()), default=0)
    return {k: v + [v[-1] if v else empty] * (width - len(v)) for k, v in lists.items()}


def plan(text: str) -> dict[str, Plan]:
    """Each stage's code deps and item slots (see the module docstring)."""
    parser = build_parser()
    stages = yaml.safe_load(text)["stages"]
    plans = {}
    for name, module in stage_commands(text).items():
        body, command = stages[name], importlib.import_module(module)
        code_modules = getattr(command, "code_modules", None)
        params_sections = getattr(command, "params_sections", None)
        if "foreach" not in body:
            plans[name] = Plan(code_deps(module, *section_modules(body.get("params", []))))
            continue
        if (code_modules or params_sections) and not isinstance(body["foreach"], dict):
            raise ValueError(
                f"stage {name}: {module} chooses its code or params by its arguments: foreach a mapping"
            )
        items = body["foreach"] if isinstance(body["foreach"], dict) else {k: k for k in body["foreach"]}
        files, params = {}, {}
        for key, item in items.items():
            values = {"${key}": str(key), "${item}": str(item)}
            if code_modules or params_sections:
                args = parser.parse_args(shlex.split(_fill(body["do"]["cmd"], values))[1:])
            if params_sections:
                params[key] = list(params_sections(args))
            entries = params.get(key) or [_fill(e, values) for e in body["do"].get("params", [])]
            extra = code_modules(args) if code_modules else []
            files[key] = code_deps(module, *extra, *section_modules(entries))
        shared = sorted(set.intersection(*(set(f) for f in files.values())))
        own = {k: sorted(set(f) - set(shared)) for k, f in files.items()}
        empty = code_deps(module)[0]
        plans[name] = Plan(
            shared,
            _padded(own, empty) if any(own.values()) else {},
            _padded(params, "") if params else {},
        )
    return plans


def variant_code(text: str) -> dict[str, dict[str, list[str]]]:
    """Stage -> foreach key -> the code files that item lists beyond the stage's shared ones."""
    return {name: {k: sorted(set(v)) for k, v in p.own.items()} for name, p in plan(text).items() if p.own}


def _scalar(value: object) -> str:
    text = str(value)
    return text if re.fullmatch(r"[\w./@-]+", text) else json.dumps(text)


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


def _block_end(lines: list[str], i: int, indent: str) -> int:
    """The first line from `i` that is not inside a block indented deeper than `indent` (blank
    lines and comments inside it included)."""
    while i < len(lines) and (
        not lines[i].strip()
        and i + 1 < len(lines)
        and _deeper(lines[i + 1], indent)
        or _deeper(lines[i], indent)
    ):
        i += 1
    return i


def _deeper(line: str, indent: str) -> bool:
    return bool(line.strip()) and len(line) - len(line.lstrip()) > len(indent)


def sync(text: str) -> str:
    """dvc.yaml's text with every stage's code deps (and item slots) set from its command."""
    commands = stage_commands(text)
    plans = plan(text)
    stages = yaml.safe_load(text)["stages"]
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
        current = plans.get(stage) if stage in commands else None
        out.append(line)
        i += 1
        if current is None or stage is None:
            continue
        if (block := _FOREACH.match(line)) and (current.own or current.params):  # one mapping per item
            i = _block_end(lines, i, block["indent"])
            for key, item in stages[stage]["foreach"].items():
                kept = {k: v for k, v in (item or {}).items() if not re.fullmatch(r"(code|p)\d+", k)}
                kept |= {f"p{n}": v for n, v in enumerate(current.params.get(key, []), 1)}
                kept |= {f"code{n}": v for n, v in enumerate(current.own.get(key, []), 1)}
                out.append(f"{block['indent']}  {key}:\n")
                out.extend(f"{block['indent']}    {k}: {_scalar(v)}\n" for k, v in kept.items())
            continue
        if (block := _PARAMS.match(line)) and current.params:
            end = _block_end(lines, i, block["indent"])
            kept_lines = [
                ln for ln in lines[i:end] if not ((m := _ITEM.match(ln)) and _PSLOT.match(m["value"]))
            ]
            out.extend(kept_lines)
            indent = block["indent"] + "  "
            width = len(next(iter(current.params.values())))
            out.extend(f"{indent}- ${{item.p{n}}}\n" for n in range(1, width + 1))
            i = end
            continue
        deps = _DEPS.match(line)
        if not deps:
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
        width = len(next(iter(current.own.values()), []))
        out.extend(f"{indent}- ${{item.code{n}}}\n" for n in range(1, width + 1))
        out.extend(f"{indent}- {path}\n" for path in current.shared)
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
