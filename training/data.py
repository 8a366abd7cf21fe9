"""Training and evaluation data for DECLARE and the baselines.

Two inputs: MedLane-format files (`pipelines.sources.medlane`) or a builder
folder of (complex, simple) English pairs such as `builders/multicochrane/en`
(locator labels then come from the diff, as for MedLane).
"""

from __future__ import annotations

import glob
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medsimp.config import resolve_path
from medsimp.errors import UsageError
from medsimp.params_schema import Train
from medsimp.text.medlane_refs import EvalItem, annotated_terms, expand
from medsimp.text.words import lower_tokens as tokenize
from pipelines.sources.medlane import read_medlane_eval, read_medlane_train


@dataclass
class Splits:
    """Word-tokenized training pairs, validation pairs (with the annotated terms of their
    reference: explained word -> expansion, empty without annotation), evaluation items per split."""

    train: list[tuple[list[str], list[str]]]
    validation: list[tuple[list[str], list[str]]]
    eval: dict[str, list[EvalItem]]
    counts: dict[str, int]
    validation_terms: list[dict[str, str]] = field(default_factory=list)


def _pairs_from_eval(items: list[EvalItem]) -> list[tuple[list[str], list[str]]]:
    """Validation pairs: the source and its first reference (annotations expanded)."""
    return [(tokenize(it.source or ""), tokenize(expand(it.references[0]))) for it in items]


def _terms_from_eval(items: list[EvalItem]) -> list[dict[str, str]]:
    """The `abbr[full]` annotations of each item's first reference: the explained word (one
    token) -> its expansion (tokens joined by spaces)."""
    out = []
    for it in items:
        terms = {}
        for abbr, full in annotated_terms(it.references[0]):
            words = tokenize(abbr)
            if len(words) == 1:
                terms[words[0]] = " ".join(tokenize(full))
        out.append(terms)
    return out


def load_medlane(train: str, validation: str, test: str) -> Splits:
    """MedLane train file (source, target, second-person target) and two evaluation files."""
    rejects: list[dict] = []
    train_recs = read_medlane_train(train, rejects)
    evals = {}
    for name, path in (("validation", validation), ("test", test)):
        evals[name] = [
            EvalItem(r["source"], list(r["raw_references"])) for r in read_medlane_eval(path, rejects)
        ]
    pairs = [(tokenize(r["source"]), tokenize(r["target"])) for r in train_recs]
    counts = {
        "train": len(pairs),
        "validation": len(evals["validation"]),
        "test": len(evals["test"]),
        "rejected": len(rejects),
    }
    return Splits(
        pairs,
        _pairs_from_eval(evals["validation"]),
        evals,
        counts,
        _terms_from_eval(evals["validation"]),
    )


def _bucket(text: str) -> float:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF


def _read_pairs(files: list[str], complex_column: str, simple_column: str) -> list[tuple[str, str]]:
    """Every row with both sides, in the order `load_dataset(folder)[split]` yields them (its
    files sorted by name, each file's rows in order): an evaluation's outputs follow that order."""
    import pyarrow.parquet as pq

    rows: list[tuple[str, str]] = []
    for f in files:
        table = pq.read_table(f, columns=[complex_column, simple_column])
        rows += [
            (c, s)
            for c, s in zip(table.column(complex_column).to_pylist(), table.column(simple_column).to_pylist())
            if c and s
        ]
    return rows


def load_pairs(
    folder: str,
    complex_column: str,
    simple_column: str,
    validation_fraction: float,
    test_fraction: float,
    resplit: bool = False,
) -> Splits:
    """(complex, simple) pairs from a builder config folder (`<split>-*.parquet`, e.g.
    builders/multicochrane/en), in the builder's own splits. A split the folder lacks is an
    error, or with `resplit` is carved out of train by a hash of the complex text
    (`validation_fraction`, `test_fraction`)."""
    files = {
        name: sorted(glob.glob(str(Path(folder) / f"{name}-*.parquet")))
        for name in ("train", "validation", "test")
    }
    if not files["train"]:
        raise FileNotFoundError(f"no train-*.parquet in {folder}")
    missing = [name for name in ("validation", "test") if not files[name]]
    if missing and not resplit:
        raise FileNotFoundError(
            f"{folder} has no {' and no '.join(missing)} split (small inputs keep everything in train): "
            "set train.data.resplit (medsimp train --resplit) to carve it out of train"
        )
    rows = {name: _read_pairs(f, complex_column, simple_column) for name, f in files.items()}
    train = []
    for c, s in dict.fromkeys(rows["train"]):  # training: each pair once, first place kept
        u = _bucket(c)
        if not files["test"] and u < test_fraction:
            rows["test"].append((c, s))
        elif not files["validation"] and test_fraction <= u < test_fraction + validation_fraction:
            rows["validation"].append((c, s))
        else:
            train.append((c, s))
    evals = {name: [EvalItem(c, [s]) for c, s in rows[name]] for name in ("validation", "test")}
    counts = {
        "train": len(train),
        "validation": len(evals["validation"]),
        "test": len(evals["test"]),
        "rejected": 0,
    }
    return Splits(
        [(tokenize(c), tokenize(s)) for c, s in train], _pairs_from_eval(evals["validation"]), evals, counts
    )


def data_path(value: str, base: str | Path = ".") -> str:
    """A `train.data` path resolved against `base`, the params file's folder."""
    return resolve_path(value, base)


def load_splits(cfg: Train, base: str | Path = ".") -> Splits:
    """Dispatch on `train.data.format` (medlane | pairs) of the typed section. Relative
    paths are resolved against `base`, the params file's folder."""
    data = cfg.data
    fmt = data.format
    if fmt == "medlane":
        files = {key: data_path(getattr(data, key), base) for key in ("train", "validation", "test")}
        for key, path in files.items():
            if not Path(path).exists():
                raise FileNotFoundError(f"train.data.{key}: {path} not found")
        return load_medlane(files["train"], files["validation"], files["test"])
    if fmt == "pairs":
        return load_pairs(
            data_path(data.pairs, base),
            data.complex_column,
            data.simple_column,
            float(data.validation_fraction),
            float(data.test_fraction),
            data.resplit,
        )
    raise ValueError(f"train.data.format must be medlane or pairs, not {fmt!r}")


def with_dataset(cfg: Train, dataset: str | None, config: str | None, resplit: bool) -> Train:
    """The train section pointed at `<dataset>/<config>` (`--dataset`/`--config`) as pairs."""
    if (dataset is None) != (config is None):
        raise UsageError(
            "--dataset and --config go together (e.g. --dataset builders/multicochrane --config en)"
        )
    data: dict[str, Any] = {}
    if dataset is not None:
        # a command-line path: the current folder's (absolute, as params paths are the params file's)
        data.update(format="pairs", pairs=os.path.abspath(f"{dataset.rstrip('/')}/{config}"))
    if resplit:
        data["resplit"] = True
    return cfg.model_copy(update={"data": cfg.data.model_copy(update=data)})
