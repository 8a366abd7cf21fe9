"""The value types and the `Section` base every params section is built from."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, model_validator
from pydantic_core import PydanticCustomError


# --------------------------------------------------------------------------- value types
def _number(value: Any) -> Any:
    """A finite int or float, kept as given (so `timeout: 60` stays 60 and params hashes hold)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PydanticCustomError("float_type", "not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("param_range", "a finite number")
    return value


def ranged(lo: float, hi: float | None, what: str):
    def check(value: Any) -> Any:
        value = _number(value)
        if value < lo or (hi is not None and value > hi):
            raise PydanticCustomError("param_range", what)
        return value

    return check


Number = Annotated[float, PlainValidator(_number)]
NonNegative = Annotated[float, PlainValidator(ranged(0, None, "a number >= 0"))]
Fraction = Annotated[float, PlainValidator(ranged(0, 1, "a number from 0 to 1"))]
Positive = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
Port = Annotated[int, Field(ge=0, le=65535)]
StopwordList = Literal["spacy", "sklearn"]
# choice lists that code outside this module names too (it reads them with typing.get_args)
Algorithm1Reading = Literal["pseudocode", "prose"]  # MedLane Algorithm 1's pseudocode | §3.1's prose
Comparison = Literal["gt", "ge"]
Language = Literal["en", "es", "fr", "fa"]
# how `evaluate` scores: medsimp's metrics, or the MedLane authors' scorer (docs/metrics.md)
ScoringMode = Literal["default", "medlane"]


class Section(BaseModel):
    """A params section: strict types, no unknown keys; an empty section (`humaneval:`) is all defaults."""

    model_config = ConfigDict(strict=True, extra="forbid", validate_default=False)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_defaults(cls, data: Any) -> Any:
        return {} if data is None else data


def ordered(model: Any, low: str, high: str) -> Any:
    lo, hi = getattr(model, low), getattr(model, high)
    if lo > hi:
        raise PydanticCustomError(
            "param_order",
            "{low} must not exceed {high}",
            {"low": low, "high": high, "low_value": repr(lo), "high_value": repr(hi)},
        )
    return model
