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

# Each model's step (`prepare(cfg)`, then `fit_predict(...)`), imported by name only when that
# model runs, so `--model copy` loads neither torch nor DECLARE's code. A stage's code deps are
# this command's import closure plus its model step's (`code_modules`, which
# medsimp.cli.dvc_deps reads for each train@ stage): a comment in training/declare.py reruns
# train@declare and train@bertmt, not the baselines.
MODEL_STEPS = {"declare": "neural", "bertmt": "neural", "dictionary": "baselines", "copy": "baselines"}
MODELS = tuple(MODEL_STEPS)


def code_modules(args: argparse.Namespace) -> list[str]:
    """The modules a run with `args` imports by name: its model's step in `training`."""
    return [f"training.{MODEL_STEPS[args.model]}"]


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
    import importlib

    from medsimp.atomic import atomic_dir, write_json
    from medsimp.config import resolve_path
    from medsimp.progress import interactive
    from medsimp.stats import check_reconciles, finish_stage, output_stats
    from medsimp.text.words import lower_tokens as tokenize
    from training.data import load_splits, with_dataset
    from training.lexicon import load_dictionary

    step = importlib.import_module(code_modules(args)[0])
    cfg = with_dataset(args.params_data.train, args.dataset, args.config, args.resplit)
    cfg = step.prepare(cfg)  # what this machine cannot run: one line, before any work
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
        preds = step.fit_predict(
            args.model,
            cfg,
            splits,
            dictionary,
            sources,
            tmp,
            stats,
            params=args.params_data,
            base=args.params_dir,
            progress=not args.no_progress and interactive(),
        )
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
