"""Params `plaba`."""

from __future__ import annotations

from medsimp.sections.base import Positive, Section


class Plaba(Section):
    input: str = "data/sample/plaba.json"
    num_shards: Positive = 1
