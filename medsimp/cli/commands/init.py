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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="the project folder to make (new or empty)")
    parser.add_argument(
        "--dvc",
        action="store_true",
        help="also run `dvc init` there (`--subdir` inside a git work tree, else after `git init`)",
    )


def run(args: argparse.Namespace) -> int:
    from medsimp.project import make_project, summary

    folder = Path(args.folder)
    written, kept, ran = make_project(folder, args.dvc)
    print("\n".join(summary(folder, written, kept, ran, args.dvc)))
    return 0
