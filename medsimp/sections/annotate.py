"""Params `annotate`: the annotators' majority and the data report."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, PlainValidator

from medsimp.sections.base import Count, Fraction, Port, Positive, Section, ranged


class AnnotateReport(Section):
    examples: Count = 3
    bins: Positive = 20
    top_semtypes: Count = 10
    long_sentence: Positive = 80  # a sentence over this many words is an outlier
    length_ratio: Annotated[float, PlainValidator(ranged(1, None, "a number >= 1"))] = 4.0
    clip_percentile: Annotated[float, PlainValidator(ranged(50, 100, "a number from 50 to 100"))] = 99.0


class Annotate(Section):
    similarities: list[str] = ["overlap", "cosine", "crf"]
    majority: Fraction = 0.5
    annotations: str = "data/sample/annotations"
    gold: str = "out/annotate/gold"
    host: str = "127.0.0.1"
    port: Port = 8765
    report: AnnotateReport = Field(default_factory=AnnotateReport)
