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


def run(args: argparse.Namespace) -> int:
    from medsimp.progress import interactive
    from medsimp.stats import finish_stage
    from training.data import with_dataset
    from training.stage import Runtime, train

    cfg = with_dataset(args.params_data.train, args.dataset, args.config, args.resplit)
    progress = not args.no_progress and interactive()
    runtime = Runtime(code_modules(args)[0], args.params_data, args.params_dir, progress)
    stats = train(args.model, args.output, cfg, runtime)
    shown = {k: v for k, v in stats.items() if k != "model"}
    finish_stage(f"train {args.model}", stats, HEADLINE, args.metrics, summary=shown)
    return 0
