"""Params `radiology`."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import model_validator

from medsimp.sections.base import Count, Positive, Section, ordered


class Radiology(Section):
    input: str = "data/sample/NOTEEVENTS.csv"
    output: str = "out/radiology"
    sections: list[str] = ["findings", "impression"]
    splitter: Literal["rules", "rush"] = "rules"
    min_tokens: Count = 2
    max_tokens: Positive = 60
    num_shards: Positive = 1
    num_ranges: Positive = 2
    max_text_chars: Positive = 1_000_000

    @model_validator(mode="after")
    def check_order(self) -> Self:
        return ordered(self, "min_tokens", "max_tokens")
