"""Training and evaluation data for DECLARE and the baselines.

Two inputs: MedLane-format files (`pipelines.medlane_format`) or a parquet of
(complex, simple) English pairs such as the multicochrane builder writes; the
latter is split deterministically (hash of the complex text) into
train / validation / test.
"""
from __future__ import annotations

import glob
import hashlib
from dataclasses import dataclass
from pathlib import Path

from training.scoring import EvalItem, expand, tokenize


@dataclass
class Splits:
    """Word-tokenized training pairs, validation pairs, and evaluation items per split."""
    train: list[tuple[list[str], list[str]]]
    validation: list[tuple[list[str], list[str]]]
    eval: dict[str, list[EvalItem]]
    counts: dict[str, int]


def _pairs_from_eval(items: list[EvalItem]) -> list[tuple[list[str], list[str]]]:
    """Validation pairs: the source and its first reference (annotations expanded)."""
    return [(tokenize(it.source or ""), tokenize(expand(it.references[0]))) for it in items]


def load_medlane(train: str, validation: str, test: str) -> Splits:
    """MedLane train file (source, target, second-person target) and two evaluation files."""
    from pipelines.medlane_format import read_medlane_eval, read_medlane_train

    rejects: list[dict] = []
    train_recs = read_medlane_train(train, rejects)
    evals = {}
    for name, path in (("validation", validation), ("test", test)):
        evals[name] = [EvalItem(r["source"], list(r["raw_references"]))
                       for r in read_medlane_eval(path, rejects)]
    pairs = [(tokenize(r["source"]), tokenize(r["target"])) for r in train_recs]
    counts = {"train": len(pairs), "validation": len(evals["validation"]), "test": len(evals["test"]),
              "rejected": len(rejects)}
    return Splits(pairs, _pairs_from_eval(evals["validation"]), evals, counts)


def _bucket(text: str) -> float:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF


def load_pairs(pattern: str, complex_column: str, simple_column: str,
               validation_fraction: float, test_fraction: float) -> Splits:
    """(complex, simple) pairs from parquet files matching `pattern`, split by content hash."""
    import pyarrow.parquet as pq

    files = sorted(glob.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no parquet files match {pattern!r}")
    rows: list[tuple[str, str]] = []
    for f in files:
        table = pq.read_table(f, columns=[complex_column, simple_column])
        rows += [(c, s) for c, s in zip(table.column(complex_column).to_pylist(),
                                        table.column(simple_column).to_pylist()) if c and s]
    rows = sorted(set(rows))
    train, val, test = [], [], []
    for c, s in rows:
        u = _bucket(c)
        (test if u < test_fraction else val if u < test_fraction + validation_fraction else train).append((c, s))
    evals = {"validation": [EvalItem(c, [s]) for c, s in val], "test": [EvalItem(c, [s]) for c, s in test]}
    counts = {"train": len(train), "validation": len(val), "test": len(test), "rejected": 0,
              "files": len(files)}
    return Splits([(tokenize(c), tokenize(s)) for c, s in train], _pairs_from_eval(evals["validation"]),
                  evals, counts)


def load_splits(cfg: dict) -> Splits:
    """Dispatch on `train.data.format` (medlane | pairs)."""
    data = cfg.get("data") or {}
    fmt = data.get("format", "medlane")
    if fmt == "medlane":
        for key in ("train", "validation", "test"):
            if not Path(data[key]).exists():
                raise FileNotFoundError(f"train.data.{key}: {data[key]} not found")
        return load_medlane(data["train"], data["validation"], data["test"])
    if fmt == "pairs":
        return load_pairs(data["pairs"], data.get("complex_column", "complex_text"),
                          data.get("simple_column", "simple_text"),
                          float(data.get("validation_fraction", 0.1)), float(data.get("test_fraction", 0.1)))
    raise ValueError(f"train.data.format must be medlane or pairs, not {fmt!r}")
