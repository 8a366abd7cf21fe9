"""Push a built dataset folder to a Hugging Face Hub dataset repository.

    medsimp publish multicochrane --repo-id me/multicochrane

The guard reads the data, never a flag: every file that would be uploaded must be a Parquet
table whose schema carries a known lineage (`medsimp.lineage`) with no MIMIC source, or the
card / stats file; no string in them may show MIMIC's de-identification placeholders
(`[** ... **]`). MIMIC-derived corpora are never published to a hub by any flag: share them
through PhysioNet (docs/mimic.md). The check runs before any network call, and only the files
it checked are uploaded. Publishing needs network access (HF_HUB_OFFLINE=0 and a token).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

HELP = "push a builder folder to the Hugging Face Hub (never MIMIC-derived data)"
TEXT_FILES = ("README.md", "stats.json")  # checked for MIMIC shapes; every other file is Parquet


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("builder", help="builder name (folder builders/<name>) or a folder path")
    parser.add_argument("--repo-id", required=True, help="hub dataset repository, e.g. user/name")
    parser.add_argument("--private", action="store_true", help="create the repository private")


def builder_folder(name_or_path: str) -> Path:
    """`builders/<name>` for a bare name, else the path itself."""
    path = Path(name_or_path)
    return path if path.is_dir() or len(path.parts) > 1 else Path("builders") / name_or_path


def upload_files(folder: Path) -> list[str]:
    """Relative paths that would be uploaded: everything but hidden files and dead letters.
    A symbolic link anywhere is refused (it could point at anything)."""
    from medsimp.errors import Refused

    out = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or rel.parts[0] == "dead_letter":
            continue
        if path.is_symlink():
            raise Refused(f"{rel} is a symbolic link; publish real files only")
        if path.is_file():
            out.append(rel.as_posix())
    return out


def check_publishable(folder: Path) -> list[str]:
    """The files to upload; raise Refused unless each is provably free of MIMIC-derived text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from medsimp import lineage
    from medsimp.errors import Refused

    files = upload_files(folder)
    if not any(f.endswith(".parquet") for f in files):
        raise Refused(f"{folder} holds no Parquet data; run `medsimp build` first")
    for rel in files:
        path = folder / rel
        if rel in TEXT_FILES:
            text = path.read_text(encoding="utf-8", errors="replace")
            if lineage.has_mimic_shapes(text):
                raise Refused(f"{rel} contains MIMIC de-identification placeholders ([** ... **])")
            continue
        if not rel.endswith(".parquet"):
            raise Refused(f"{rel} is not a Parquet table whose lineage medsimp can check; "
                          "remove it or rebuild the folder with `medsimp build`")
        try:
            tags = lineage.from_metadata(pq.read_schema(path).metadata)
        except (OSError, ValueError) as exc:
            raise Refused(f"{rel} is not a readable Parquet file ({type(exc).__name__})") from None
        if tags is None:
            raise Refused(f"{rel} has no lineage (medsimp.lineage); rebuild it with `medsimp build`")
        if lineage.is_restricted(tags):
            raise Refused(f"{rel} derives from MIMIC ({', '.join(tags)}): PhysioNet data is never "
                          "published to a hub; share it through PhysioNet (docs/mimic.md)")
        table = pq.read_table(path)
        for name in table.column_names:
            column = table.column(name)
            if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                if any(v and lineage.has_mimic_shapes(v) for v in column.to_pylist()):
                    raise Refused(f"{rel}: column {name} contains MIMIC de-identification "
                                  "placeholders ([** ... **])")
    return files


def run(args: argparse.Namespace) -> int:
    from medsimp.errors import InputError, Refused, UsageError

    folder = builder_folder(args.builder)
    if not (folder / "README.md").is_file():
        raise InputError(f"{folder} is not a built dataset folder (no README.md); run medsimp build")
    files = check_publishable(folder)
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
        raise UsageError("publishing needs the network; run with HF_HUB_OFFLINE=0")
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(args.repo_id, repo_type="dataset", private=args.private, exist_ok=True)
    if args.private and not api.dataset_info(args.repo_id).private:
        # create_repo ignores `private` for an existing repository: never push into a public one.
        raise Refused(f"{args.repo_id} already exists and is public; choose another --repo-id")
    info = api.upload_folder(folder_path=str(folder), repo_id=args.repo_id, repo_type="dataset",
                             allow_patterns=files, commit_message=f"medsimp publish {folder.name}")
    print(f"published {folder} -> {info}")
    return 0
