"""dvc.yaml's code deps cover each stage command's import closure (medsimp.dvc_deps)."""

from __future__ import annotations

from pathlib import Path

import yaml

from medsimp import code_graph, dvc_deps

ROOT = Path(__file__).resolve().parent.parent


def test_every_stage_covers_the_code_its_command_imports() -> None:
    assert dvc_deps.missing(ROOT) == {}


def test_committed_dvc_yaml_is_what_the_generator_writes() -> None:
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    assert dvc_deps.rewrite(text, dvc_deps.expected(ROOT)) == text


def test_an_uncovered_module_is_reported() -> None:
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    assert "      - pipelines/beam_io.py\n" in text
    dropped = text.replace("      - pipelines/beam_io.py\n", "")
    gaps = dvc_deps.missing(ROOT, dropped)
    assert "pipelines/beam_io.py" in gaps["notes"]
    assert "pipelines/beam_io.py" not in gaps.get("train", [])  # train never imports it


def test_a_folder_dep_covers_its_modules() -> None:
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    folder = text.replace("      - pipelines/beam_io.py\n", "      - pipelines\n", 1)
    assert "notes" not in dvc_deps.missing(ROOT, folder)


def test_closure_follows_function_level_imports_and_dotted_name_strings() -> None:
    files = {
        p.relative_to(ROOT).as_posix() for p in code_graph.closure(["medsimp.commands.build"])[0].values()
    }
    # commands/build.py imports only inside run(); builders are imported by name (BUILDERS)
    assert {
        "medsimp/builders/writer.py",
        "medsimp/builders/radiology.py",
        "pipelines/radiology_core.py",
        "pipelines/__init__.py",
    } <= files
    assert "training/trainer.py" not in files


def test_packaged_resources_are_deps() -> None:
    deps = dvc_deps.expected(ROOT)
    assert "medsimp/resources/radiology" in deps["radiology"]  # resources.path("radiology")
    notes = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["notes"]["deps"]
    assert {"${notes.abbreviations}", "${notes.common_words}"} <= set(notes)  # data named by params
    assert not any(
        p.startswith("medsimp/resources/") and p != "medsimp/resources/__init__.py" for p in deps["cochrane"]
    )


def test_rewrite_keeps_data_deps_and_replaces_only_code_lines() -> None:
    text = (
        "stages:\n  s:\n    cmd: medsimp notes\n    deps:\n      - data/x.csv\n"
        "      - pipelines/old.py\n      - ${notes.input}\n    outs:\n      - out/s\n"
    )
    got = dvc_deps.rewrite(text, {"s": ["medsimp/cli.py", "pipelines/new.py"]})
    assert got == (
        "stages:\n  s:\n    cmd: medsimp notes\n    deps:\n      - data/x.csv\n"
        "      - ${notes.input}\n      - medsimp/cli.py\n      - pipelines/new.py\n"
        "    outs:\n      - out/s\n"
    )
