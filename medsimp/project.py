"""Make a project folder for your own Cochrane reviews (`medsimp init`, issue 53 section 5):
the packaged template (`medsimp/resources/init`: params.yaml, dvc.yaml, a README, the starter
inputs) copied into a new or empty folder, and with `dvc` a DVC repository made there as
`dvc init`'s documentation says. `make_project` is the stage; the command
(`medsimp.cli.commands.init`) parses its flags, calls it and prints what it did."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from medsimp import resources
from medsimp.errors import StageFailed, UsageError

TEMPLATE = "init"  # medsimp/resources/init
PROJECT_MARKER = ".medsimp-project"
# template files stored under another name in the package (a dot file is easy to lose in a wheel)
RENAMED = {"gitignore": ".gitignore"}
# what the printed summary names as the next commands (the README's three)
NEXT = (
    "cp /path/to/devaraj/*.source /path/to/devaraj/*.target /path/to/devaraj/*.doi data/cochrane/",
    "dvc repro",
    "medsimp publish builders/multicochrane --repo-id you/name",
)


def template_files() -> dict[str, Path]:
    """Project-relative name -> packaged template file."""
    root = resources.path(TEMPLATE)
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            rel = path.relative_to(root)
            name = RENAMED.get(rel.as_posix(), rel.as_posix())
            found[name] = path
    return found


def made_by_init(folder: Path) -> bool:
    return (folder / PROJECT_MARKER).is_file()


def check_folder(folder: Path) -> None:
    """A new or empty folder, or one `medsimp init` made; anything else is one UsageError line."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file, not a folder: give a new or empty folder")
    if folder.is_dir() and any(folder.iterdir()) and not made_by_init(folder):
        raise UsageError(
            f"{folder} is not empty and was not made by `medsimp init`: give a new or empty folder"
        )


def write_project(folder: Path) -> tuple[list[str], list[str]]:
    """Copy the template into `folder` (made if missing): (written, kept) project-relative names;
    a file already there is kept as it is."""
    check_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written, kept = [], []
    for name, source in template_files().items():
        target = folder / name
        if target.exists():
            kept.append(name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        written.append(name)
    marker = folder / PROJECT_MARKER
    if not marker.exists():
        try:
            made_with = version("medsimp")
        except PackageNotFoundError:
            made_with = "unknown"
        marker.write_text(
            json.dumps({"made_by": "medsimp init", "medsimp": made_with}) + "\n", encoding="utf-8"
        )
        written.append(PROJECT_MARKER)
    return written, kept


def _dvc_command() -> list[str]:
    if importlib.util.find_spec("dvc") is not None:
        return [sys.executable, "-m", "dvc"]
    found = shutil.which("dvc")
    if found:
        return [found]
    raise UsageError("--dvc needs DVC: pip install 'medsimp[refresh]' (or dvc), or leave --dvc out")


def dvc_tools() -> list[str]:
    """How to run DVC here; one UsageError line when DVC or git is missing (checked before the
    folder is written)."""
    dvc = _dvc_command()
    if shutil.which("git") is None:
        raise UsageError("--dvc needs git (DVC keeps dvc.lock in git): install git, or leave --dvc out")
    return dvc


def init_dvc(folder: Path) -> list[str]:
    """Make `folder` a DVC repository the way `dvc init`'s documentation says (the commands run,
    as typed); nothing when it is one already."""
    if (folder / ".dvc").is_dir():
        return []
    dvc = dvc_tools()
    inside = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True, text=True, check=False
    )
    top = Path(inside.stdout.strip()).resolve() if inside.returncode == 0 else None
    steps: list[tuple[str, list[str]]] = []  # (as typed, as run)
    if top is None:
        steps.append(("git init", ["git", "init", "--quiet"]))
        steps.append(("dvc init", [*dvc, "init", "--quiet"]))
    elif top == folder.resolve():
        steps.append(("dvc init", [*dvc, "init", "--quiet"]))
    else:  # a project in a sub-folder of a repository (a monorepo)
        steps.append(("dvc init --subdir", [*dvc, "init", "--quiet", "--subdir"]))
    for typed, cmd in steps:
        done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise StageFailed(f"`{typed}` in {folder} failed: {last}")
    return [typed for typed, _ in steps]


def make_project(folder: Path, dvc: bool = False) -> tuple[list[str], list[str], list[str]]:
    """Write the project into `folder` and, with `dvc`, make it a DVC repository (DVC and git
    are checked before anything is written). -> (written, kept, the commands run)."""
    if dvc:
        dvc_tools()  # before anything is written
    written, kept = write_project(folder)
    ran = init_dvc(folder) if dvc else []
    return written, kept, ran


def summary(folder: Path, written: list[str], kept: list[str], ran: list[str], dvc: bool) -> list[str]:
    """The lines `medsimp init` prints: what it wrote and ran, then the next commands."""
    lines = [
        f"medsimp init: {folder}: {len(written)} files written" + (f", {len(kept)} kept" if kept else "")
    ]
    lines += [f"  ran: {cmd}" for cmd in ran]
    lines.append(f"next, from {folder} (README.md):")
    if not dvc and not (folder / ".dvc").is_dir():
        lines.append("  git init && dvc init")
    return lines + [f"  {cmd}" for cmd in NEXT]
