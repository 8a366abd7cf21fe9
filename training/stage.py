"""`medsimp train` as one stage function: train one simplifier (or run a baseline) on params
`train`, write its predictions, model files and stats.json into one output folder. The command
(`medsimp.cli.commands.train`) parses its flags, names the model's step module (`MODEL_STEPS`:
imported by name, so `--model copy` loads neither torch nor DECLARE's code) and calls `train`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medsimp import lineage
from medsimp.atomic import atomic_dir, write_json
from medsimp.config import resolve_path
from medsimp.params_schema import Params, Train
from medsimp.stats import check_reconciles, output_stats
from medsimp.text.words import lower_tokens as tokenize
from training.data import load_splits
from training.lexicon import load_dictionary


@dataclass(frozen=True)
class Runtime:
    """How the run goes besides params `train`: the model's step module (`training.neural` or
    `training.baselines`: `prepare(cfg)` then `fit_predict(...)`), the whole params (the cache
    folder), the params file's folder and whether to draw a progress bar."""

    step: str
    params: Params
    base: str = "."
    progress: bool = False


def data_lineage(cfg: Train, base: str | Path = ".") -> list[str]:
    """Lineage of the training data, recorded for the model and predictions trained on it:
    MedLane-format files are MedLane (MIMIC-III); pairs carry their own (`base`: the params
    file's folder)."""
    data = cfg.data
    if data.format == "pairs":
        return lineage.marker_tags(lineage.read_lineage(resolve_path(data.pairs, base)))
    return [lineage.MIMIC_III]


def train(model: str, out: str, cfg: Train, runtime: Runtime) -> dict[str, Any]:
    """Train `model` on `cfg` (the train section, pointed at a builder's splits if asked) into the
    folder `out`. -> the stats (as written in its stats.json, before `output_stats`)."""
    step = importlib.import_module(runtime.step)
    cfg = step.prepare(cfg)  # what this machine cannot run: one line, before any work
    splits = load_splits(cfg, runtime.base)
    dictionary = load_dictionary([resolve_path(p, runtime.base) for p in cfg.dictionaries])
    sources = {name: [tokenize(it.source or "") for it in items] for name, items in splits.eval.items()}
    stats: dict = {
        "model": model,
        "dictionary_terms": len(dictionary),
        "read": sum(splits.counts.values()),
        "kept": splits.counts["train"] + splits.counts["validation"] + splits.counts["test"],
        "filtered": 0,
        "rejected": splits.counts["rejected"],
        "splits": dict(splits.counts),
    }
    with atomic_dir(out, lineage=data_lineage(cfg, runtime.base)) as tmp:
        preds = step.fit_predict(
            model,
            cfg,
            splits,
            dictionary,
            sources,
            tmp,
            stats,
            params=runtime.params,
            base=runtime.base,
            progress=runtime.progress,
        )
        (tmp / "predictions").mkdir()
        for name, lines in sorted(preds.items()):
            (tmp / "predictions" / f"{name}.txt").write_text(
                "".join(line + "\n" for line in lines), encoding="utf-8"
            )
            stats[f"predictions_{name}"] = len(lines)
        stats["paper_deviations"] = cfg.paper_deviations(model)  # e.g. params.yaml's sample profile
        check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
        write_json(tmp / "stats.json", output_stats(stats))
    return stats
