"""Make a project folder for your own Cochrane reviews (issue 53 section 5):

    medsimp init my-corpus [--dvc]

writes `params.yaml` (every path relative to the folder), `dvc.yaml` (cochrane -> umls_index ->
link -> align_train -> align -> filter -> build@multicochrane -> report@multicochrane, each stage
one `medsimp` subcommand), a README of the next three commands, `data/cochrane/` for your files,
and the starter inputs the defaults name (`data/gold/align_gold.jsonl`, the demo vocabulary in
`data/umls/`), copied from the packaged template (`medsimp/resources/init`): nothing in the folder
points into a checkout or into the installed package.

The folder must be new or empty. A folder this command made (`.medsimp-project`) gets the
template files it lacks; the files it holds are kept. Any other non-empty folder is refused.
`--dvc` also makes it a DVC repository, as `dvc init`'s documentation says: `dvc init --subdir`
inside an existing git work tree, else `git init` then `dvc init`. Without it nothing runs: the
README says to run `git init && dvc init` before `dvc repro`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "make a project folder (params.yaml, dvc.yaml, data/cochrane/) for your own Cochrane reviews"

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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="the project folder to make (new or empty)")
    parser.add_argument(
        "--dvc",
        action="store_true",
        help="also run `dvc init` there (`--subdir` inside a git work tree, else after `git init`)",
    )


def template_files() -> dict[str, Path]:
    """Project-relative name -> packaged template file."""
    from medsimp import resources

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
    from medsimp.errors import UsageError

    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file, not a folder: give a new or empty folder")
    if folder.is_dir() and any(folder.iterdir()) and not made_by_init(folder):
        raise UsageError(
            f"{folder} is not empty and was not made by `medsimp init`: give a new or empty folder"
        )


def write_project(folder: Path) -> tuple[list[str], list[str]]:
    """Copy the template into `folder` (made if missing): (written, kept) project-relative names;
    a file already there is kept as it is."""
    import json
    import shutil
    from importlib.metadata import PackageNotFoundError, version

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
    import importlib.util
    import shutil
    import sys

    from medsimp.errors import UsageError

    if importlib.util.find_spec("dvc") is not None:
        return [sys.executable, "-m", "dvc"]
    found = shutil.which("dvc")
    if found:
        return [found]
    raise UsageError("--dvc needs DVC: pip install 'medsimp[refresh]' (or dvc), or leave --dvc out")


def dvc_tools() -> list[str]:
    """How to run DVC here; one UsageError line when DVC or git is missing (checked before the
    folder is written)."""
    import shutil

    from medsimp.errors import UsageError

    dvc = _dvc_command()
    if shutil.which("git") is None:
        raise UsageError("--dvc needs git (DVC keeps dvc.lock in git): install git, or leave --dvc out")
    return dvc


def init_dvc(folder: Path) -> list[str]:
    """Make `folder` a DVC repository the way `dvc init`'s documentation says (the commands run,
    as typed); nothing when it is one already."""
    import subprocess

    from medsimp.errors import StageFailed

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


def run(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    if args.dvc:
        dvc_tools()  # before anything is written
    written, kept = write_project(folder)
    ran = init_dvc(folder) if args.dvc else []
    print(f"medsimp init: {folder}: {len(written)} files written" + (f", {len(kept)} kept" if kept else ""))
    for cmd in ran:
        print(f"  ran: {cmd}")
    print(f"next, from {folder} (README.md):")
    if not args.dvc and not (folder / ".dvc").is_dir():
        print("  git init && dvc init")
    for cmd in NEXT:
        print(f"  {cmd}")
    return 0
