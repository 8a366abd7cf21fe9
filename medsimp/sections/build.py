"""Params `build`: one section per dataset builder (`build.<name>`) and their split settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from medsimp.sections.base import Count, Fraction, Section


class Split(Section):
    seed: int = 13
    validation: Fraction = 0.1
    test: Fraction = 0.1


class PlabaSplit(Section):
    seed: int = 13
    validation: Fraction = 0.15
    test: Fraction = 0.15
    method: Literal["exact", "hash"] = "exact"


class BuildMulticochrane(Section):
    pairs: str = "out/filter/pairs"
    sentences: str = "out/cochrane/sentences"
    linked: str = "out/linked/cochrane"
    split: Split = Field(default_factory=Split)
    mc_human: str | None = None
    mc_clean_validation: Count = 5
    mc_clean_test: Count = 22
    filter_splits: list[str] = ["train"]
    # a review two sources put in different splits (a benchmark test review the input puts in
    # train, a review in two input files) is refused; true: the most authoritative source wins,
    # recorded on the card
    allow_split_conflicts: bool = False


class BuildMedlane(Section):
    input: str = "data/sample/medlane"
    validation_size: Count = 1015
    candidates: str | None = "out/notes/sentences"


class BuildMsd(Section):
    sentences: str = "out/msd/sentences"
    groups: str | None = "out/msd/pairs"
    linked: str = "out/linked/msd"
    # Cao et al. §4.2: 20% of the (non-parallel) training data for validation; test = the paired
    # expert-annotated documents
    split: Split = Field(default_factory=lambda: Split(validation=0.2, test=0.0))


class BuildPlaba(Section):
    pairs: str = "out/plaba/pairs"
    sentences: str = "out/plaba/sentences"
    linked: str = "out/linked/plaba"
    split: PlabaSplit = Field(default_factory=PlabaSplit)


class BuildRadiology(Section):
    sentences: str = "out/radiology/sentences"
    split: Split = Field(default_factory=Split)


class Build(Section):
    multicochrane: BuildMulticochrane = Field(default_factory=BuildMulticochrane)
    medlane: BuildMedlane = Field(default_factory=BuildMedlane)
    msd: BuildMsd = Field(default_factory=BuildMsd)
    plaba: BuildPlaba = Field(default_factory=BuildPlaba)
    radiology: BuildRadiology = Field(default_factory=BuildRadiology)
