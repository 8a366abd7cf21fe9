"""Params `cochrane`."""

from __future__ import annotations

from medsimp.sections.base import Positive, Section


class Cochrane(Section):
    input: str = "data/sample/cochrane.jsonl"
    num_shards: Positive = 2
