"""Params `humaneval`."""

from __future__ import annotations

from medsimp.sections.base import Positive, Section


class Humaneval(Section):
    input: str = "out/simplify/variants.csv"
    forms: str = "out/humaneval/forms"
    responses: str = "humaneval/responses"
    output: str = "out/humaneval/results"
    systems: list[str] = ["plain", "plain_sc", "cot", "cot_sc"]
    n_laypeople: Positive = 8
    seed: int = 0
    metric_columns: list[str] = ["fkgl", "gunning_fog", "ari"]
