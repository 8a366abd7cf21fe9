"""Push a built dataset folder to a Hugging Face Hub dataset repository.

    medsimp publish multicochrane --repo-id me/multicochrane
    medsimp publish medlane --repo-id me/medlane --private --i-accept-physionet-dua

MIMIC-derived builders (card YAML `medsimp.mimic_derived: true`, e.g. medlane) are
refused unless the repository is private AND `--i-accept-physionet-dua` is given;
a folder whose card lacks the flag is refused too. The check runs before any
network call. Publishing needs network access: run with HF_HUB_OFFLINE=0 and a
token (`HF_TOKEN` or `huggingface-cli login`).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import yaml

HELP = "push a builder folder to the Hugging Face Hub (MIMIC-derived ones only privately)"
IGNORE = ["dead_letter/*", ".*"]


class PublishRefused(RuntimeError):
    """Publishing this folder to this target is not allowed."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("builder", help="builder name (folder builders/<name>) or a folder path")
    parser.add_argument("--repo-id", required=True, help="hub dataset repository, e.g. user/name")
    parser.add_argument("--private", action="store_true", help="create the repository private")
    parser.add_argument("--i-accept-physionet-dua", dest="accept_dua", action="store_true",
                        help="confirm every user of the private repository is a credentialed "
                             "PhysioNet user bound by the MIMIC data use agreement")


def builder_folder(name_or_path: str) -> Path:
    """`builders/<name>` for a bare name, else the path itself."""
    path = Path(name_or_path)
    return path if path.is_dir() or len(path.parts) > 1 else Path("builders") / name_or_path


def card_metadata(folder: Path) -> dict[str, Any]:
    """The YAML header of `folder/README.md` ({} when absent or unreadable)."""
    card = folder / "README.md"
    if not card.is_file():
        return {}
    text = card.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---\n", 4)
    if end < 0:
        return {}
    try:
        data = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def check_publishable(meta: dict[str, Any], private: bool, accept_dua: bool) -> None:
    """Raise PublishRefused unless this card may go to a repository with these settings."""
    medsimp = meta.get("medsimp")
    flag = medsimp.get("mimic_derived") if isinstance(medsimp, dict) else None
    if not isinstance(flag, bool):
        raise PublishRefused("the card has no boolean `medsimp.mimic_derived` flag; rebuild the "
                             "folder with `medsimp build` before publishing")
    if flag and not (private and accept_dua):
        missing = [m for m, ok in (("--private", private), ("--i-accept-physionet-dua", accept_dua))
                   if not ok]
        raise PublishRefused("this dataset derives from MIMIC (PhysioNet credentialed access): it "
                             "may only go to a private repository; missing "
                             + " and ".join(missing))


def run(args: argparse.Namespace) -> int:
    folder = builder_folder(args.builder)
    if not (folder / "README.md").is_file():
        print(f"error: {folder} is not a built dataset folder (no README.md); run medsimp build")
        return 2
    try:
        check_publishable(card_metadata(folder), args.private, args.accept_dua)
    except PublishRefused as exc:
        print(f"refused: {exc}")
        return 3
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
        print("error: publishing needs the network; run with HF_HUB_OFFLINE=0")
        return 2
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(args.repo_id, repo_type="dataset", private=args.private, exist_ok=True)
    if args.private and not api.dataset_info(args.repo_id).private:
        # create_repo ignores `private` for an existing repository: never push into a public one.
        print(f"refused: {args.repo_id} already exists and is public; choose another --repo-id")
        return 3
    info = api.upload_folder(folder_path=str(folder), repo_id=args.repo_id, repo_type="dataset",
                             ignore_patterns=IGNORE,
                             commit_message=f"medsimp publish {folder.name}")
    print(f"published {folder} -> {info}")
    return 0
