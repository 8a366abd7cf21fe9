"""Params `train`: the models, their training data and the training loop."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from medsimp.sections.base import Count, Fraction, NonNegative, Positive, Section


class TrainData(Section):
    format: Literal["medlane", "pairs"] = "medlane"
    train: str = "data/sample/medlane/train.txt"
    validation: str = "data/sample/medlane/validation.txt"
    test: str = "data/sample/medlane/test.txt"
    pairs: str = "builders/multicochrane/en"
    complex_column: str = "complex_text"
    simple_column: str = "simple_text"
    validation_fraction: Fraction = 0.1
    test_fraction: Fraction = 0.1
    resplit: bool = False


class Train(Section):
    models: list[str] = ["declare", "bertmt", "dictionary", "copy"]
    data: TrainData = Field(default_factory=TrainData)
    dictionaries: list[str] = [
        "medsimp/resources/abbreviations.json",
        "medsimp/resources/medlane_dictionary.json",
    ]

    encoder: str = "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext"
    encoder_fallback: str | None = "minilm"
    max_length: Positive = 64
    max_option_length: Positive = 16
    max_options: Positive = 8
    max_span: Positive = 16
    batch_size: Positive = 8
    epochs: Count = 10
    lr: NonNegative = 5.0e-5
    head_lr: NonNegative = 5.0e-5
    weight_decay: NonNegative = 0.01
    warmup_ratio: Fraction = 0.1
    patience: Count = 1  # stop after this many epochs in a row without a better validation loss
    dropout: Fraction = 0.1
    copy_attention: bool = False
    decoder: Literal["paper", "luong_tied"] = "paper"  # RSSP / BERT-MT decoder (Sec. 4.3)
    locator_labels: Literal["annotation", "dictionary"] = "annotation"
    dictionary_expansion: Literal["random", "first"] = "random"
    seed: int = 13
    threads: Positive = (
        2  # fixed (not the core count): bit-reproducible; 2 is 1.5x faster than 1 with the pinned kernels
    )
    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto: CUDA when torch sees one
    mixed_precision: Literal["auto", "off", "fp16", "bf16"] = "auto"  # auto: fp16 on CUDA, off on CPU

    # the settings MedLane §4.3/§5.1 fixes: the schema defaults are the paper's (docs/fidelity.md)
    PAPER_KEYS: ClassVar[tuple[str, ...]] = (
        "max_length",
        "max_options",
        "epochs",
        "lr",
        "head_lr",
        "patience",
        "copy_attention",
        "decoder",
        "locator_labels",
        "dictionary_expansion",
    )

    # which of PAPER_KEYS each model reads
    PAPER_KEYS_USED: ClassVar[dict[str, tuple[str, ...]]] = {
        "declare": tuple(k for k in PAPER_KEYS if k != "dictionary_expansion"),
        "bertmt": tuple(
            k for k in PAPER_KEYS if k not in ("max_options", "locator_labels", "dictionary_expansion")
        ),
        "dictionary": ("dictionary_expansion",),
        "copy": (),
    }

    def paper_deviations(self, model: str) -> dict[str, dict[str, Any]]:
        """{key: {"used", "paper"}} for each of PAPER_KEYS that `model` reads and that is set away
        from the paper's value (e.g. params.yaml's sample profile), so a model's stats say how
        its settings differ from the paper's (the encoder actually loaded is in `encoder`)."""
        paper = Train()
        return {
            key: {"used": getattr(self, key), "paper": getattr(paper, key)}
            for key in self.PAPER_KEYS_USED[model]
            if getattr(self, key) != getattr(paper, key)
        }
