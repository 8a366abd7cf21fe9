"""dvc.yaml's code deps (package folders, as in DVC's example-get-started) cover the import
closure of each stage's `medsimp` subcommand, and the packaged resources it names."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from medsimp import code_graph
from medsimp import resources as packaged
from medsimp.cli.app import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
_CMD = re.compile(r"^\s*medsimp\s+(?P<sub>[\w-]+)")


def _stages(text: str) -> dict:
    return {name: body.get("do", body) for name, body in yaml.safe_load(text)["stages"].items()}


def _needed(stage: dict) -> set[str]:
    m = _CMD.match(stage["cmd"])
    assert m, f"stage does not run `medsimp <subcommand>`: {stage['cmd']!r}"
    modules, resources = code_graph.closure(["medsimp.cli", f"medsimp.cli.commands.{COMMANDS[m['sub']]}"])
    paths = {p.relative_to(ROOT).as_posix() for p in modules.values() if p.is_relative_to(ROOT)}
    return paths | {packaged.path(r).resolve().relative_to(ROOT).as_posix() for r in resources}


def _missing(text: str) -> dict[str, list[str]]:
    gaps = {}
    for name, stage in _stages(text).items():
        deps = [d.rstrip("/") for d in stage.get("deps", [])]
        lost = sorted(p for p in _needed(stage) if not any(p == d or p.startswith(d + "/") for d in deps))
        if lost:
            gaps[name] = lost
    return gaps


def test_every_stage_covers_the_code_its_command_imports() -> None:
    assert _missing((ROOT / "dvc.yaml").read_text(encoding="utf-8")) == {}


def test_code_deps_are_package_folders() -> None:
    for name, stage in _stages((ROOT / "dvc.yaml").read_text(encoding="utf-8")).items():
        code = [d for d in stage.get("deps", []) if d.split("/")[0] in code_graph.ROOT_PACKAGES]
        assert code and all("/" not in d for d in code), (name, code)


def test_a_missing_folder_is_reported() -> None:
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    notes = text.index("  notes:\n")
    dropped = text[:notes] + text[notes:].replace("      - pipelines\n", "", 1)
    gaps = _missing(dropped)
    assert "pipelines/jobs/beam_io.py" in gaps["notes"]
    assert "train" not in gaps


def test_closure_follows_function_level_imports_and_dotted_name_strings() -> None:
    files = {
        p.relative_to(ROOT).as_posix() for p in code_graph.closure(["medsimp.cli.commands.build"])[0].values()
    }
    # commands/build.py imports only inside run(); dataset writers are imported by name
    assert {
        "medsimp/corpora/writer.py",
        "medsimp/corpora/radiology.py",
        "pipelines/text/radiology.py",
    } <= files
    assert "training/trainer.py" not in files


def test_packaged_resources_are_covered() -> None:
    stages = _stages((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
    assert "medsimp/resources/radiology" in _needed(stages["radiology"])  # resources.path("radiology")
    assert {"${notes.abbreviations}", "${notes.common_words}"} <= set(stages["notes"]["deps"])
