"""Extras (issue 38 item 6): what only some commands import is an optional dependency, the table
in medsimp/extras.py agrees with pyproject.toml, the data stages import no extra, and a command
that meets a missing extra stops with one line naming it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from medsimp import code_graph
from medsimp.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def test_the_table_is_pyprojects_extras():
    """Each module of the table comes from a distribution of its extra and not from the runtime
    dependencies; each distribution of those extras has a module in the table."""
    core = _names(PROJECT["dependencies"])
    installs = metadata.packages_distributions()
    covered: dict[str, set[str]] = {}
    for module, extra in EXTRAS.items():
        dists = {canonicalize_name(d) for d in installs[module]}
        in_extra = dists & _names(PROJECT["optional-dependencies"][extra])
        assert in_extra, f"{module} ({dists}) is not in pyproject's [{extra}] extra"
        assert not dists & core, f"{module} is in the extras table but a runtime dependency"
        covered.setdefault(extra, set()).update(in_extra)
    for extra in set(EXTRAS.values()):
        assert _names(PROJECT["optional-dependencies"][extra]) == covered[extra], extra


def _stage_modules() -> set[str]:
    """The command modules of the DVC stages but `evaluate` (the [eval] extra's command)."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    commands = {(s.get("do") or s)["cmd"].split()[1] for s in stages.values()}
    assert {"notes", "align", "train", "build", "evaluate"} <= commands
    from medsimp.cli.app import COMMANDS

    return {f"medsimp.cli.commands.{COMMANDS[c]}" for c in commands - {"evaluate"}}


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_the_data_and_training_stages_import_without_the_extras():
    """The Beam jobs, the aligners and training load with the runtime dependencies alone (a
    cluster worker installs the wheel without extras): in a process where every module of the
    extras is missing, every module of their import closure imports. (Function-level imports of
    an extra, e.g. METEOR's in medsimp.metrics, run only when that metric is asked for.)"""
    modules, _ = code_graph.closure(_stage_modules())
    code = (
        "import importlib, sys\n"
        f"for m in {sorted(EXTRAS)!r}: sys.modules[m] = None\n"
        f"for name in {sorted(modules)!r}: importlib.import_module(name)\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert got.returncode == 0, got.stderr[-3000:]
    assert len(modules) > 100


@pytest.mark.parametrize(
    ("blocked", "argv", "extra"),
    [
        ("pycocoevalcap", ["evaluate", "files", "--select", "cider"], "eval"),
        ("rouge_score", ["evaluate", "files", "--select", "rouge_1"], "eval"),  # ROUGE-L: computed here
        pytest.param(
            "bert_score", ["evaluate", "files", "--select", "bertscore"], "eval", marks=pytest.mark.slow
        ),  # over ~2 s
        ("dvc", ["refresh", "--dry-run"], "refresh"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(tmp_path, blocked, argv, extra):
    if argv[0] == "evaluate":
        for name in ("hyp", "ref"):
            (tmp_path / f"{name}.txt").write_text("The patient was given aspirin daily.\n", encoding="utf-8")
        argv = [*argv, "--hyp", "hyp.txt", "--ref", "ref.txt"]
    else:
        (tmp_path / "dvc.yaml").write_text("stages: {}\n", encoding="utf-8")
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"  # what an environment without it raises
        "from medsimp.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert got.returncode == 2, got.stderr
    lines = got.stderr.strip().splitlines()
    assert lines[-1].startswith(f"medsimp {argv[0]}"), got.stderr
    assert f"needs {blocked}, which the [{extra}] extra installs: pip install 'medsimp[{extra}]'" in lines[-1]
    assert "Traceback" not in got.stderr


def test_a_missing_module_inside_an_installed_extra_is_not_blamed_on_the_extra():
    from medsimp.extras import missing_extra

    try:
        import pycocoevalcap.no_such_module  # noqa: F401
    except ModuleNotFoundError as exc:
        assert (
            missing_extra(exc) is None
        )  # pycocoevalcap is installed: an internal error, not a missing extra
    else:
        raise AssertionError("imported a module that does not exist")
