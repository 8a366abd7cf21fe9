"""Evaluation in one place: selecting metrics, loading their resources, scoring in both modes,
the paired bootstrap, signatures and reports. The metrics themselves are `medsimp.metrics` (one
module per family, the registry `--select` reads); this package runs them.

- `scorer`: `Scorer` (the resources loaded once, both modes), `Evaluation` (scores, scales,
  signature) and `score(...)`, the typed API (`from medsimp.evaluation.scorer import score`).
- `files`: `medsimp evaluate files`: the evaluation set (reference files, a MedLane file, a
  builder's split), the language and row-order checks, every system scored, the bootstrap.
- `stage`: `medsimp evaluate stage` (the DVC `evaluate` stage): every model's predictions in
  both modes, the per-model metrics, the length-bucket plots.
- `report`: the table, `--json`, `--sentence-level` and the HTML report.
"""
