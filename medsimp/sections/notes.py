"""Params `notes`."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import model_validator

from medsimp.sections.base import Algorithm1Reading, Count, NonNegative, Positive, Section, ordered


class Notes(Section):
    input: str = "data/sample/NOTEEVENTS.csv"
    output: str = "out/notes"
    categories: list[str] = ["Discharge summary"]
    headers: dict[str, str] | None = {
        "History of Present Illness": r"history\s+of\s+(?:the\s+)?present(?:ing)?\s+illness|hpi",
        "Brief Summary of Hospital Course": r"brief\s+summary\s+of\s+(?:the\s+)?hospital\s+course",
        "Brief Hospital Course": r"brief\s+hospital\s+course",
    }

    any_header: str | None = None
    splitter: Literal["rules", "rush"] = "rules"
    abbreviations: str = "medsimp/resources/abbreviations.json"
    common_words: str = "medsimp/resources/common_words.txt"
    abbreviation_counting: Algorithm1Reading = "pseudocode"
    selection_rule: Algorithm1Reading = "pseudocode"  # Algorithm 1 line 11 | §3.1's three tests
    case_sensitive: bool = True
    min_tokens: Count = 10
    min_ratio: NonNegative = 0.1
    max_ratio: NonNegative = 0.5
    num_ranges: Positive = 2
    batch_notes: Positive = 1000
    max_text_chars: Positive = 1_000_000

    @model_validator(mode="after")
    def check_order(self) -> Self:
        return ordered(self, "min_ratio", "max_ratio")
