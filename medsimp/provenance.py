"""What a stage records of the upstream outputs it read: a file's or folder's content hash and the
CRF model an alignment used (its path, hash, gold and self-training).

A ground-floor module so the stages that record these (align, align train, build) share them
without importing one another's code: `align train` hashes its gold here, not through the
dataset writer (`medsimp.corpora.writer`), so a comment in a builder does not rerun alignment.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from medsimp.config import shown_path


def content_hash(path: str | Path) -> str:
    """sha256 (first 16 hex digits) of a file, or of a folder's files (relative names and bytes,
    in sorted order; `.`-names skipped); `missing` when the path does not exist."""
    path = Path(path)
    if path.is_file():
        files = [(path.name, path)]
    elif path.is_dir():
        files = sorted(
            (p.relative_to(path).as_posix(), p)
            for p in path.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    else:
        return "missing"
    digest = hashlib.sha256()
    for name, p in files:
        digest.update(name.encode("utf-8") + b"\0")
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def used_aligner(model_dir: str, params_dir: str) -> dict[str, object]:
    """What a dataset card records of the CRF model `align corpus` used (issue 35 item 4: the card
    named params' model even after `--model OTHER`): its path as params would name it, its content
    hash, the gold it was trained on and its self-training (the model's own stats.json)."""
    trained = Path(model_dir) / "stats.json"
    stats = json.loads(trained.read_text(encoding="utf-8")) if trained.is_file() else {}
    return {
        "model": f"{shown_path(model_dir, params_dir)} sha256:{content_hash(model_dir)}",
        "gold": stats.get("gold"),
        "self_training": describe_self_training(stats.get("self_training")),
    }


def describe_self_training(info: object) -> str:
    """One line for the card on how a CRF model was self-trained (`align train`'s stats)."""
    if not isinstance(info, dict):
        return "not recorded by align train"
    if not info.get("enabled"):
        return "off: trained on the gold alone"
    if not info.get("pseudo_documents"):
        return (
            f"on, but none of the {info.get('pool_read', 0)} reviews of {info.get('input')} is left to label "
            "(gold, MC-CLEAN test or dev reviews, or one side empty): trained on the gold alone"
        )
    line = (
        f"{info.get('pseudo_documents', 0)} unlabelled reviews of {info.get('input')} labelled by the "
        f"gold-trained CRF ({info.get('pseudo_pairs', 0)} pairs of posterior >= {info.get('min_posterior')}), "
        "then trained on the gold + them; the 22 MC-CLEAN English test reviews are never used"
    )
    if isinstance(info.get("pool_eligible"), int):  # which reviews shaped the model that aligned them all
        line += (
            f"; trained when {info['pool_eligible']} reviews could be labelled: reviews added since are "
            "aligned by this model without having shaped it (align.self_training.retrain_after_new)"
        )
    return line
