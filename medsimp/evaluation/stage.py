"""The DVC `evaluate` stage (`medsimp evaluate stage`): score every model's predictions.

Scores `<evaluate.models_dir>/<model>/predictions/<split>.txt` for every model in
`evaluate.models`, in both modes (default and the MedLane authors' scorer) unless one is
asked for, and writes:

- `metrics_dir/<model>.json`: the headline numbers per model (`HEADLINE`, default mode), one
  flat file per model so `dvc metrics show` lists one row per model with four columns;
- `plots`: AScore and its inputs per source-length bucket (the paper's Figure 4);
- `scores` (optional): every score of every model and mode, signatures, scales.

The MedLane evaluation file reader (`medlane_items`) lives here too: files mode
(`medsimp evaluate files --medlane`) reads it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from medsimp import ownership
from medsimp.atomic import check_file_target, current_command, write_json
from medsimp.config import resolve_path
from medsimp.errors import InputError, UsageError
from medsimp.inputs import read_lines
from medsimp.params_schema import ScoringMode
from pipelines.sources.medlane import MedLaneFormatError, read_medlane_authors, read_medlane_eval

if TYPE_CHECKING:
    from medsimp.params_schema import Params

# per model, default mode: what `dvc metrics show` lists. The DECLARE stage reports MedLane's
# BLEU (the mean of BLEU-1..4, AScore's input), not sacrebleu's `bleu`.
HEADLINE = ("medlane_bleu", "sari", "fkgl", "ascore")


@dataclass
class MedLaneEval:
    """Scored items of a MedLane evaluation file and where each sits in the file.

    `positions[i]`: item i's 0-based record position in the whole file; `split_positions`:
    the positions of every record of the chosen split (scored or dead-lettered), in order.
    A hypothesis file has one line per record of the split, or per record of the file, or
    per scored record (as `medsimp train` writes its predictions).
    """

    items: list
    positions: list[int]
    split_positions: list[int]
    n_records: int
    rejects: list[dict]

    def align(self, hyps: list[str]) -> list[str]:
        """The output lines of the scored items (dead-lettered records' lines dropped)."""
        if len(hyps) == self.n_records:
            return [hyps[p] for p in self.positions]
        if len(hyps) == len(self.split_positions):
            index = {p: i for i, p in enumerate(self.split_positions)}
            return [hyps[index[p]] for p in self.positions]
        if len(hyps) == len(self.positions):
            return hyps
        whole = "" if len(self.split_positions) == self.n_records else f" (the whole file: {self.n_records})"
        raise InputError(
            f"--hyp has {len(hyps)} lines but the evaluation set has "
            f"{len(self.split_positions)} records{whole}; give one output line per record"
        )


def medlane_items(path: str, split: str | None, mode: str = "default") -> MedLaneEval:
    """The records of a MedLane evaluation file; `split` keeps the authors' half.

    `medlane` mode reads the file exactly as the authors' scorer does
    (`read_medlane_authors`: blank-line blocks of the lowercased text, the first
    `len(blocks) // 2` blocks are validation). Default mode uses `read_medlane_eval`:
    odd records are dead-lettered (and their output lines skipped), and the first
    `n_records // 2` records are validation.
    """
    from medsimp.metrics.scoring import EvalItem

    if not Path(path).is_file():
        raise InputError(f"--medlane {path}: not a file")
    rejects: list[dict] = []
    try:
        if mode == "medlane":
            records, rejects = read_medlane_authors(path)
            n = len(records)
            in_split = [split is None or r["split"] == split for r in records]
            items = [EvalItem(r["source"], list(r["references"])) for r in records]
        else:
            records = read_medlane_eval(path, rejects)
            n = len(records) + len(rejects)
            in_split = [split is None or (r["ordinal"] < n // 2) == (split == "validation") for r in records]
            items = [EvalItem(r["source"], list(r["raw_references"])) for r in records]
    except MedLaneFormatError as exc:
        raise InputError(f"--medlane {exc}") from None
    if mode == "medlane":
        split_positions = [r["ordinal"] for r, keep in zip(records, in_split) if keep]
    else:
        split_positions = [p for p in range(n) if split is None or (p < n // 2) == (split == "validation")]
        rejects = [r for r in rejects if r["ordinal"] in set(split_positions)]
    kept = [(it, r["ordinal"]) for it, r, keep in zip(items, records, in_split) if keep]
    return MedLaneEval([it for it, _ in kept], [p for _, p in kept], split_positions, n, rejects)


@dataclass
class StageResult:
    """What the stage computed: `title` and `summary` (each model's headline value of every
    metric, per mode) for the stage's epilogue."""

    title: str
    summary: dict[str, Any] = field(default_factory=dict)


def write_model_metrics(metrics_dir: str | Path, per_model: dict[str, dict[str, Any]]) -> list[Path]:
    """`metrics_dir/<model>.json` with the `HEADLINE` keys of each model (null when not
    computed). A `<name>.json` that this command (`evaluate stage`) wrote there before for a
    model no longer evaluated is removed, so the folder lists exactly these models; a file
    another command wrote (`evaluate files --json`, a `--metrics` file) or the user's is never
    touched: inside a folder written into, a command touches only what it writes."""
    folder = Path(metrics_dir)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--metrics {folder} is a file; give the folder the per-model files go in")
    written = []
    for model, scores in per_model.items():
        path = folder / f"{model}.json"
        write_json(path, {k: scores.get(k) for k in HEADLINE})
        written.append(path)
    for stale in sorted(folder.glob("*.json")):
        if stale not in written and ownership.writer(stale) == current_command():
            check_file_target(stale)
            stale.unlink()
            ownership.forget(stale)
    return written


def run_stage(
    params: Params,
    params_dir: str | Path,
    *,
    metrics_dir: str | Path,
    plots: str | Path,
    scores: str | Path | None = None,
    mode: ScoringMode | None = None,
    select: list[str] | None = None,
    from_file: bool = True,
) -> StageResult:
    """Score every model of `params.evaluate.models` and write the stage's files (module doc)."""
    from medsimp.evaluation.scorer import BUCKET_METRICS, SCALES, Scorer, warn_once
    from medsimp.metrics import metrics as all_metrics

    cfg, train_cfg = params.evaluate, params.train
    scorer = Scorer(cfg, train_cfg, params.notes, params_dir, select, params.link, from_file)
    split = cfg.split
    data = train_cfg.data
    modes: list[ScoringMode] = [mode] if mode else list(get_args(ScoringMode))
    evalsets: dict[str, MedLaneEval] = {}
    if data.format == "medlane":
        from training.data import data_path

        evalsets = {
            m: medlane_items(data_path(getattr(data, split), params_dir), None, m)
            for m in {"default", *modes}
        }
        items = evalsets["default"].items
    else:
        from training.data import load_splits

        items = load_splits(train_cfg, params_dir).eval[split]
    models_dir = Path(resolve_path(cfg.models_dir, params_dir))
    edges = list(cfg.length_buckets)
    results: dict = {m: {} for m in modes}
    signatures: dict[str, str] = {}
    buckets: dict[str, dict] = {}
    try:
        for model in cfg.models:
            lines = read_lines(str(models_dir / model / "predictions" / f"{split}.txt"), "prediction file")
            for m in modes:
                ev = evalsets.get(m)
                result = scorer.evaluate(ev.align(lines) if ev else lines, ev.items if ev else items, m)
                results[m][model] = result.scores
                signatures[m] = result.signature
            hyps = evalsets["default"].align(lines) if evalsets else lines
            for b in scorer.buckets(hyps, items, edges):
                row = buckets.setdefault(b["bucket"], {"bucket": b["bucket"], "n": b["n"]})
                row.update({f"{model}_{key}": b[key] for key in BUCKET_METRICS})
    except ValueError as exc:
        raise InputError(str(exc)) from None
    for name, why in scorer.unavailable.items():  # e.g. METEOR without Java: null, said once
        warn_once(f"{name} not computed (null): {why}")
    everything = {
        "split": split,
        "n": len(items),
        **results,
        "signature": signatures,
        "scales": {
            k: v for k, v in SCALES.items() if any(k in sc for r in results.values() for sc in r.values())
        },
    }
    if scores:
        write_json(scores, everything)
    write_model_metrics(metrics_dir, results.get("default") or next(iter(results.values())))
    write_json(plots, list(buckets.values()))
    headline_keys = {mt.keys[0] for mt in all_metrics().values()}  # each metric's headline value
    summary = {
        f"{m}.{model}.{k}": v
        for m in modes
        for model, sc in results[m].items()
        for k, v in sc.items()
        if k in headline_keys
    }
    return StageResult(f"medsimp evaluate stage ({', '.join(modes)}, {split}, n={len(items)})", summary)
