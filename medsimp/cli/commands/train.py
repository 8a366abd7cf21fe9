"""Train one simplifier (DECLARE, the BERT-MT baseline, or a rule baseline) and write its predictions.

`medsimp train --model declare --output out/models/declare` trains DECLARE on
`train.data` (MedLane-format files or a parquet of English pairs), keeps the
checkpoint with the lowest validation loss, and writes
`predictions/{validation,test}.txt` (one output per evaluation sentence), the
model files and `stats.json`. `bertmt` (encoder + attention decoder) trains with the same
loop and settings. Baselines (`dictionary`, `copy`) only predict.
Interrupted DECLARE / BERT-MT runs resume from the last checkpoint under
`<cache.dir>/checkpoints/` (keyed by the params and data).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from medsimp.params_schema import Train

HELP = "train DECLARE or a baseline (bertmt, dictionary, copy) and write predictions"
MODELS = ("declare", "bertmt", "dictionary", "copy")


# The model code; the checkpoint key carries the source of every training, text and pipelines
# module it imports (examples, tokens, labels, network, loop), so a change there retrains
# instead of resuming a stale checkpoint.
MODEL_MODULES = ("training.data", "training.declare", "training.trainer")
DATA_SHAPING = ("training", "medsimp.text", "pipelines")  # text: `abbr[full]` and tokens


def checkpoint_code() -> list[str]:
    """The modules whose source goes into the checkpoint key (sorted)."""
    from medsimp.code_graph import closure

    return sorted(m for m in closure(MODEL_MODULES)[0] if m.startswith(DATA_SHAPING))


# What `dvc metrics show` shows for this stage (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected", "best_val_loss")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", choices=MODELS, required=True, help="which simplifier")
    parser.add_argument("--output", required=True, help="output directory (out/models/<model>)")
    parser.add_argument("--metrics", help="also write the stats here (metrics/train_<model>.json)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--dataset", help="train on a builder's own splits, e.g. builders/multicochrane (with --config)"
    )
    parser.add_argument("--config", help="the builder config to train on, e.g. en (with --dataset)")
    parser.add_argument(
        "--resplit",
        action="store_true",
        help="carve a split the builder lacks out of train (train.data.resplit; default: an error)",
    )


def _data_key(cfg: Train, model: str, base) -> str:
    """Params hash of the train section, the model, the bytes of every input file (keyed by their
    params value, so the key does not depend on where the checkout lives) and the code version of
    what builds the examples and trains (a label-rule change must not resume a stale checkpoint)."""
    import hashlib
    from pathlib import Path

    from medsimp.config import params_hash, resolve_path
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


def data_lineage(cfg: Train, base: str | Path = ".") -> list[str]:
    """Lineage of the training data, recorded for the model and predictions trained on it:
    MedLane-format files are MedLane (MIMIC-III); pairs carry their own (`base`: the params
    file's folder)."""
    from medsimp import lineage
    from medsimp.config import resolve_path

    data = cfg.data
    if data.format == "pairs":
        return lineage.marker_tags(lineage.read_lineage(resolve_path(data.pairs, base)))
    return [lineage.MIMIC_III]


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from medsimp.atomic import atomic_dir, write_json
    from medsimp.config import cache_path, resolve_path
    from medsimp.progress import interactive
    from medsimp.stats import check_reconciles, finish_stage, output_stats
    from medsimp.text.words import lower_tokens as tokenize
    from training import baselines
    from training.data import load_splits, with_dataset
    from training.lexicon import load_dictionary

    cfg = with_dataset(args.params_data.train, args.dataset, args.config, args.resplit)
    if args.model in ("declare", "bertmt"):  # a device this machine lacks: one line, before any work
        from training.trainer import select_device

        device, precision = select_device(cfg.device, cfg.mixed_precision)  # resolved: in the checkpoint key
        cfg = cfg.model_copy(update={"device": device.type, "mixed_precision": precision})
    splits = load_splits(cfg, args.params_dir)
    dictionary = load_dictionary([resolve_path(p, args.params_dir) for p in cfg.dictionaries])
    sources = {name: [tokenize(it.source or "") for it in items] for name, items in splits.eval.items()}
    stats: dict = {
        "model": args.model,
        "dictionary_terms": len(dictionary),
        "read": sum(splits.counts.values()),
        "kept": splits.counts["train"] + splits.counts["validation"] + splits.counts["test"],
        "filtered": 0,
        "rejected": splits.counts["rejected"],
        "splits": dict(splits.counts),
    }
    with atomic_dir(args.output, lineage=data_lineage(cfg, args.params_dir)) as tmp:
        if args.model in ("declare", "bertmt"):
            from training import trainer

            cache_dir = cache_path(args.params_data, args.params_dir)
            if cache_dir is None:
                from medsimp.errors import UsageError

                raise UsageError("train keeps its checkpoints under cache.dir: set it (it is null)")
            cache = Path(cache_dir)
            ckpt = cache / "checkpoints" / f"{args.model}-{_data_key(cfg, args.model, args.params_dir)}"
            model, feat, log = trainer.train(
                splits.train,
                splits.validation,
                dictionary if args.model == "declare" else {},  # BERT-MT reads no dictionary
                cfg,
                ckpt,
                progress=not args.no_progress and interactive(),
                val_terms=splits.validation_terms,
                system=args.model,
                device=cfg.device,
                mixed_precision=cfg.mixed_precision,
            )
            preds = {name: trainer.predict(model, feat, srcs) for name, srcs in sources.items()}
            # a warm rerun resumes from the last checkpoint and ends with the same model: where it
            # resumed is how the run went (the run record), not part of the output
            stats["resumed_from_epoch"] = log.pop("resumed_from", None)
            trainer.save(model, feat, tmp, log)
            stats["best_epoch"] = log["best_epoch"]
            stats["best_val_loss"] = (
                round(log["best_val_loss"], 6) if log["best_val_loss"] is not None else None
            )
            stats["epochs_run"] = len(log["epochs"])
            stats["encoder"], stats["encoder_fallback"] = log["encoder"], log["encoder_fallback"]
        elif args.model == "dictionary":
            expansion, seed = cfg.dictionary_expansion, cfg.seed
            preds = {
                name: baselines.dictionary_baseline(srcs, dictionary, expansion, seed)
                for name, srcs in sources.items()
            }
        else:
            preds = {name: baselines.copy_source(srcs) for name, srcs in sources.items()}
        (tmp / "predictions").mkdir()
        for name, lines in sorted(preds.items()):
            (tmp / "predictions" / f"{name}.txt").write_text(
                "".join(line + "\n" for line in lines), encoding="utf-8"
            )
            stats[f"predictions_{name}"] = len(lines)
        stats["paper_deviations"] = cfg.paper_deviations(args.model)  # e.g. params.yaml's sample profile
        check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
        write_json(tmp / "stats.json", output_stats(stats))
    shown = {k: v for k, v in stats.items() if k != "model"}
    finish_stage(f"train {args.model}", stats, HEADLINE, args.metrics, summary=shown)
    return 0
