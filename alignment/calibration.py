"""The aligner's probabilities, calibrated: how often a row the CRF aligned with score s is
right, fitted on development gold, and the precision that estimates for a corpus's rows.

A row (`alignment.crf.CRFAligner.align`'s block, a corpus row) carries `crf_score`, the mean
CRF posterior of its predicted sentence pairs. On gold documents a row's correctness is the
share of its predicted pairs that the gold aligns (1.0 or 0.0 for a 1-1 row). `Calibration.fit`
maps score to correctness by isotonic regression (scikit-learn's `IsotonicRegression`: the
best non-decreasing fit, clipped to [0, 1]), kept as its breakpoints; `estimate` is the mean
calibrated correctness of a set of rows: their expected **row precision** (the mean share of a
row's pairs that are right; for 1-1 rows, the pair precision). The mean raw score is given
beside it, to show what the calibration changes. A calibration holds for the direction merge it
was fitted under (`align.crf.merge`): rows aligned under another merge get no estimate.

A calibration belongs to one model: the packaged `aligner_heldout.json` keeps it under the
model folder's content hash (`medsimp.corpora.writer.content_hash`, what align's stats.json
and the dataset card record), beside the model's held-out F1; `heldout(model)` reads that
row. `scripts/calibrate_aligner.py` fits and writes it (never on the 22 MC-CLEAN test reviews).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from medsimp import resources
from medsimp.errors import MedsimpError

HELDOUT = "aligner_heldout.json"


@dataclass(frozen=True)
class Calibration:
    """Score -> probability that the row is right, piecewise linear between `scores`."""

    scores: tuple[float, ...]  # breakpoints, increasing
    precision: tuple[float, ...]  # calibrated correctness at each breakpoint, non-decreasing
    gold: str  # what it was fitted on, in words
    rows: int  # predicted rows it was fitted on
    merge: str  # align.crf.merge of the rows it was fitted on

    @classmethod
    def fit(cls, scores: Sequence[float], correct: Sequence[float], gold: str, merge: str) -> Calibration:
        """Isotonic regression of `correct` (0-1 per row) on `scores`."""
        from sklearn.isotonic import IsotonicRegression

        if len(scores) != len(correct) or not scores:
            raise ValueError("calibration needs one correctness value per scored row, and a row")
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        iso.fit(np.asarray(scores, dtype=np.float64), np.asarray(correct, dtype=np.float64))
        return cls(
            tuple(round(float(x), 6) for x in iso.X_thresholds_),
            tuple(round(float(y), 6) for y in iso.y_thresholds_),
            gold,
            len(scores),
            merge,
        )

    @classmethod
    def from_json(cls, data: Any) -> Calibration:
        """A stored calibration, checked: ValueError says what is wrong with it."""
        if not isinstance(data, Mapping):
            raise ValueError("a calibration is a mapping")
        xs, ys, rows = data.get("scores"), data.get("precision"), data.get("rows")
        if (
            not isinstance(xs, list | tuple)
            or not isinstance(ys, list | tuple)
            or not xs
            or len(xs) != len(ys)
        ):
            raise ValueError("its scores and precision are two non-empty lists of one length")
        if not all(
            isinstance(v, int | float) and not isinstance(v, bool) and 0.0 <= v <= 1.0 for v in (*xs, *ys)
        ):
            raise ValueError("its scores and precision are numbers in [0, 1]")
        if any(b <= a for a, b in zip(xs, xs[1:])) or any(b < a for a, b in zip(ys, ys[1:])):
            raise ValueError("its scores increase and its precision never decreases")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
            raise ValueError("its rows is a positive count")
        if not isinstance(data.get("gold"), str) or data.get("merge") not in (
            "union",
            "intersection",
            "forward",
        ):
            raise ValueError("it names its gold and its merge (union, intersection or forward)")
        return cls(tuple(map(float, xs)), tuple(map(float, ys)), data["gold"], rows, data["merge"])

    def as_json(self) -> dict[str, Any]:
        return {
            "gold": self.gold,
            "rows": self.rows,
            "scores": list(self.scores),
            "precision": list(self.precision),
            "merge": self.merge,
        }

    def probability(self, scores: Iterable[float]) -> np.ndarray:
        """Calibrated correctness of each score (clipped at the ends, as fitted)."""
        return np.interp(np.asarray(list(scores), dtype=np.float64), self.scores, self.precision)

    def estimate(self, scores: Iterable[float]) -> dict[str, Any] | None:
        """Estimated precision of rows with these scores (None without any)."""
        values = [float(s) for s in scores]
        if not values:
            return None
        return {
            "rows": len(values),
            "precision": float(np.mean(self.probability(values))),
            "mean_score": float(np.mean(values)),
            "gold": self.gold,
            "calibration_rows": self.rows,
        }


def describe(est: Mapping[str, Any]) -> str:
    """One sentence of `Calibration.estimate`'s numbers (the card and the data report)."""
    return (
        f"expected row precision {est['precision']:.3f} (the mean share of a row's pairs that are "
        f"right) over {est['rows']} aligner-scored rows "
        f"(CRF probabilities calibrated by isotonic regression on {est['gold']}, "
        f"{est['calibration_rows']} predicted rows; mean raw probability {est['mean_score']:.3f})"
    )


def model_digest(model: str) -> str:
    """The content hash in a card's or stats.json's `... sha256:<hash>` model field ('' if none)."""
    digest = model.rpartition("sha256:")[2].strip()
    return "" if digest.startswith("_") or digest == "missing" else digest


def heldout(model: str) -> dict[str, Any] | None:
    """The packaged measurements of the model (`... sha256:<hash>`, or a bare hash): held-out
    P/R/F1 and, when measured, `calibration` as a `Calibration`; None for a model never measured.
    A malformed entry is one MedsimpError naming it (a packaging bug, never a silent number)."""
    digest = model_digest(model)
    try:
        known = json.loads(resources.path(HELDOUT).read_text(encoding="utf-8"))
        row = known.get(digest) if digest and isinstance(known, dict) else None
        if not isinstance(row, dict):
            return None
        out = dict(row)
        for key in ("precision", "recall", "f1"):
            if not isinstance(row.get(key), int | float) or isinstance(row.get(key), bool):
                raise ValueError(f"its {key} is not a number")
        if "calibration" in row:
            out["calibration"] = Calibration.from_json(row["calibration"])
        return out
    except ValueError as exc:  # json.JSONDecodeError is one
        raise MedsimpError(f"packaged {HELDOUT}, model {digest or model!r}: {exc}") from None


def row_correctness(predicted: Mapping[tuple[int, int], float], blocks, gold: set[tuple[int, int]]):
    """(score, correctness) of each aligned block of one document: the block's mean posterior
    over its predicted pairs (as `CRFAligner.align` scores it) and the share of those pairs
    in `gold`. Blocks without a complex or a simple side (deletions, insertions) are skipped."""
    out = []
    for complex_ids, simple_ids in blocks:
        inside = [(c, s) for c in complex_ids for s in simple_ids if (c, s) in predicted]
        if not inside:
            continue
        score = float(np.mean([predicted[k] for k in inside]))
        out.append((score, sum(k in gold for k in inside) / len(inside)))
    return out
