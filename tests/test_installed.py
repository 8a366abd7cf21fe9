"""The installed distribution: the four import packages of the checkout, resources inside medsimp, and
the CLI working from a directory that is not the checkout (no params.yaml there)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # builds a wheel (seconds): out of the fast loop; `make test` runs it


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel built from this checkout, unpacked as a site directory."""
    out = tmp_path_factory.mktemp("wheel")
    src = out / "src"  # a copy: an in-tree build would reuse a stale build/ folder
    skip = {".git", ".venv", ".cache", ".dvc", "out", "build", "builders", "medsimp.egg-info"}
    shutil.copytree(
        ROOT,
        src,
        ignore=lambda folder, names: [
            n for n in names if n == "__pycache__" or (Path(folder) == ROOT and n in skip)
        ],
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(src),
        ],
        check=True,
        capture_output=True,
        cwd=out,
    )
    wheel = next(out.glob("medsimp-*.whl"))
    site = out / "site"
    zipfile.ZipFile(wheel).extractall(site)
    return site


PACKAGES = {"medsimp", "pipelines", "alignment", "training"}


def test_wheel_claims_the_four_packages(installed: Path):
    tops = {p.name for p in installed.iterdir() if not p.name.endswith(".dist-info")}
    assert tops == PACKAGES
    top_level = next(installed.glob("*.dist-info")) / "top_level.txt"
    assert set(top_level.read_text().split()) == PACKAGES
    for name in (
        "abbreviations.json",
        "common_words.txt",
        "humaneval/form.html.j2",
        "prompts/selfcorrect-yang2024.yaml",
        "radiology/body_parts.tsv",
    ):
        assert (installed / "medsimp" / "resources" / name).is_file(), name


def test_wheel_holds_every_package_and_resource_of_the_checkout(installed: Path):
    """Each package folder and each resource file is in the wheel: a subpackage or template
    left out of pyproject.toml breaks only the installed CLI."""
    sources = [(ROOT / name, installed / name) for name in sorted(PACKAGES)]
    for src, dst in sources:
        for init in src.rglob("__init__.py"):
            rel = init.parent.relative_to(src)
            assert (dst / rel / "__init__.py").is_file(), f"package {src.name}/{rel} missing from the wheel"
    resources = ROOT / "medsimp" / "resources"
    for path in resources.rglob("*"):
        if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts:
            rel = path.relative_to(resources)
            assert (installed / "medsimp" / "resources" / rel).is_file(), (
                f"resource {rel} missing from the wheel"
            )


def _cli(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_installed_cli_runs_notes_from_another_directory(installed: Path, tmp_path: Path):
    assert not (tmp_path / "params.yaml").exists()
    done = _cli(
        installed, tmp_path, "notes", "--input", str(ROOT / "data/sample/NOTEEVENTS.csv"), "--output", "notes"
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    stats = json.loads((tmp_path / "notes" / "stats.json").read_text())
    assert stats["sentences_selected"] > 0  # the packaged lexicons were found and used
    where = _cli(installed, tmp_path, "--version")
    assert where.returncode == 0


def test_params_paths_are_relative_to_the_params_file(installed: Path, tmp_path: Path):
    """A relative lexicon path in a params file names a file beside that file, whatever the
    current directory."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "words.txt").write_text("the\n", encoding="utf-8")
    (conf / "params.yaml").write_text("notes:\n  common_words: words.txt\n", encoding="utf-8")
    run = tmp_path / "elsewhere"
    run.mkdir()
    (run / "notes.txt").write_text(
        "The pt had CHF and HTN and was seen in clinic today again .\n", encoding="utf-8"
    )
    done = _cli(installed, run, "--params", str(conf / "params.yaml"), "select", "notes.txt")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout.splitlines()[0])
    # only "the" is common: every other word is uncommon (abbreviations too, Algorithm 1's
    # pseudocode); the final "." counts in n only
    assert row["unc"] == row["n"] - 2


def test_installed_init_makes_the_whole_project(installed: Path, tmp_path: Path):
    """`medsimp init` of the installed wheel writes every template file (issue 53 section 5):
    the template is package data, not a checkout's files."""
    done = _cli(installed, tmp_path, "init", "proj")
    assert done.returncode == 0, done.stderr
    template = ROOT / "medsimp" / "resources" / "init"
    want = {
        {"gitignore": ".gitignore"}.get(str(p.relative_to(template)), str(p.relative_to(template)))
        for p in template.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    got = {str(p.relative_to(tmp_path / "proj")) for p in (tmp_path / "proj").rglob("*") if p.is_file()}
    assert got == want | {".medsimp-project"}
