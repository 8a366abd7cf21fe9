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
`tests/test_dvc_deps.py` checks the committed dvc.yaml equals its rewrite.
"""

from __future__ import annotations

import argparse
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


def code_deps(module: str) -> list[str]:
    """The checkout files the command module `module` imports or reads as packaged resources
    (sorted), with the `medsimp` entry point that runs it."""
    modules, names = code_graph.closure(["medsimp.cli", module])
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


def is_code(value: str) -> bool:
    """A dep entry that names our code (not a `${...}` data path)."""
    return "${" not in value and value.strip("'\"").split("/")[0] in code_graph.ROOT_PACKAGES


def sync(text: str) -> str:
    """dvc.yaml's text with every stage's code deps set to its command's import closure."""
    commands = stage_commands(text)
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
        out.append(line)
        i += 1
        if not deps or stage is None:
            continue
        items: list[str] = []
        indent = None
        while (
            i < len(lines) and (item := _ITEM.match(lines[i])) and len(item["indent"]) > len(deps["indent"])
        ):
            indent = item["indent"]
            if not is_code(item["value"]):
                items.append(lines[i])
            i += 1
        indent = indent or deps["indent"] + "  "
        out.extend(items)
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
