"""The train stage's step for DECLARE and BERT-MT (`medsimp train --model declare|bertmt`): the
device this machine can train on, the checkpoint key, training and prediction.

`medsimp.cli.commands.train` imports this module by name only for these two models, so the
baselines' stages do not run (nor depend on) DECLARE's code.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from medsimp.code_graph import closure
from medsimp.config import cache_path, params_hash, resolve_path
from medsimp.errors import UsageError

if TYPE_CHECKING:
    from medsimp.params_schema import Params, Train
    from training.data import Splits

# The model code; the checkpoint key carries the source of every training, text and pipelines
# module it imports (examples, tokens, labels, network, loop), so a change there retrains
# instead of resuming a stale checkpoint.
MODEL_MODULES = ("training.data", "training.declare", "training.trainer")
DATA_SHAPING = ("training", "medsimp.text", "pipelines")  # text: `abbr[full]` and tokens


def checkpoint_code() -> list[str]:
    """The modules whose source goes into the checkpoint key (sorted)."""
    return sorted(m for m in closure(MODEL_MODULES)[0] if m.startswith(DATA_SHAPING))


def data_key(cfg: Train, model: str, base) -> str:
    """Params hash of the train section, the model, the bytes of every input file (keyed by their
    params value, so the key does not depend on where the checkout lives) and the code version of
    what builds the examples and trains (a label-rule change must not resume a stale checkpoint)."""
    from medsimp.doccache import code_version

    data = cfg.data
    named = [*cfg.dictionaries]
    if data.format == "pairs":
        folder = Path(resolve_path(data.pairs, base))
        named += [f"{data.pairs.rstrip('/')}/{p.name}" for p in sorted(folder.glob("*.parquet"))]
    else:
        named += [data.train, data.validation, data.test]
    paths = {f: Path(resolve_path(f, base)) for f in sorted(set(named))}
    digests = {f: hashlib.sha256(p.read_bytes()).hexdigest() for f, p in paths.items() if p.is_file()}
    code = code_version(*checkpoint_code())
    return params_hash({"train": cfg.model_dump(), "model": model, "files": digests, "code": code})


def prepare(cfg: Train) -> Train:
    """`cfg` with the device and mixed precision resolved (they go into the checkpoint key); a
    device this machine lacks is one line (UsageError) before any work."""
    from training.trainer import select_device

    device, precision = select_device(cfg.device, cfg.mixed_precision)
    return cfg.model_copy(update={"device": device.type, "mixed_precision": precision})


def fit_predict(
    model: str,
    cfg: Train,
    splits: Splits,
    dictionary: dict[str, list[str]],
    sources: dict[str, list[list[str]]],
    out: Path,
    stats: dict,
    *,
    params: Params,
    base: str | Path,
    progress: bool,
) -> dict[str, list[str]]:
    """Train `model` (resuming from its checkpoint under cache.dir), save it in `out`, record the
    run in `stats` and return its predictions of each evaluation split."""
    from training import trainer

    cache_dir = cache_path(params, base)
    if cache_dir is None:
        raise UsageError("train keeps its checkpoints under cache.dir: set it (it is null)")
    ckpt = Path(cache_dir) / "checkpoints" / f"{model}-{data_key(cfg, model, base)}"
    net, feat, log = trainer.train(
        splits.train,
        splits.validation,
        dictionary if model == "declare" else {},  # BERT-MT reads no dictionary
        cfg,
        ckpt,
        progress=progress,
        val_terms=splits.validation_terms,
        system=model,
        device=cfg.device,
        mixed_precision=cfg.mixed_precision,
    )
    preds = {name: trainer.predict(net, feat, srcs) for name, srcs in sources.items()}
    # a warm rerun resumes from the last checkpoint and ends with the same model: where it
    # resumed is how the run went (the run record), not part of the output
    stats["resumed_from_epoch"] = log.pop("resumed_from", None)
    trainer.save(net, feat, out, log)
    stats["best_epoch"] = log["best_epoch"]
    stats["best_val_loss"] = round(log["best_val_loss"], 6) if log["best_val_loss"] is not None else None
    stats["epochs_run"] = len(log["epochs"])
    stats["encoder"], stats["encoder_fallback"] = log["encoder"], log["encoder_fallback"]
    return preds
