"""Push a built dataset folder to a Hugging Face Hub dataset repository.

    medsimp publish multicochrane --repo-id me/multicochrane

The guard reads the data, never a flag: every file that would be uploaded must be a Parquet
table whose schema carries a known lineage (`medsimp.lineage`) with no MIMIC source, or the
card / stats file; no string in them may show MIMIC's de-identification placeholders
(`[** ... **]`). MIMIC-derived corpora are never published to a hub by any flag: share them
through PhysioNet (docs/mimic.md). The check runs before any network call, and only the files
it checked are uploaded, one explicit path each, from a re-encoded copy of what it read (no
glob patterns; symbolic links, hidden and special files are refused). Publishing needs
network access (HF_HUB_OFFLINE=0 and a token). The guard and the upload are in
`medsimp.corpora.publish`.
"""

from __future__ import annotations

import argparse

HELP = "push a builder folder to the Hugging Face Hub (never MIMIC-derived data)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("builder", help="builder name (folder builders/<name>) or a folder path")
    parser.add_argument("--repo-id", required=True, help="hub dataset repository, e.g. user/name")
    parser.add_argument("--private", action="store_true", help="create the repository private")


def run(args: argparse.Namespace) -> int:
    from medsimp.corpora.publish import builder_folder, publish

    folder = builder_folder(args.builder)
    url = publish(folder, args.repo_id, private=args.private)
    print(f"published {folder} -> {url}")
    return 0
