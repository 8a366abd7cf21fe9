"""The value types and the `Section` base every params section is built from."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, model_validator
from pydantic_core import PydanticCustomError

# choice lists that code outside the params names too: defined without pydantic in
# medsimp.params_choices (a command parses its flags without building the schema), re-exported
from medsimp.params_choices import Algorithm1Reading as Algorithm1Reading
from medsimp.params_choices import Comparison as Comparison
from medsimp.params_choices import Language as Language
from medsimp.params_choices import RougeTokenizer as RougeTokenizer
from medsimp.params_choices import ScoringMode as ScoringMode


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
