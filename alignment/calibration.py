"""The aligner's probabilities, calibrated: how often a row the CRF aligned with score s, and
the overlap filter kept, is right, fitted on gold that the model never trained on; and the
precision that estimates for the kept rows of a corpus (what a user publishes).

A row (`alignment.crf.CRFAligner.align`'s block, a corpus row) carries `crf_score`, the mean
CRF posterior of its predicted sentence pairs. On gold documents a row's correctness is the
share of its predicted pairs that the gold aligns (1.0 or 0.0 for a 1-1 row). Only the rows the
overlap filter keeps (`alignment.overlap.filter_row` under params `filter`, on the row's joined
sentences as `align corpus` writes them) are fitted: the filter keeps rows of high lexical
overlap, which are right more often than their score alone says. `Calibration` maps score to
correctness by isotonic regression (scikit-learn's `IsotonicRegression`: the best
non-decreasing fit, clipped to [0, 1]); `estimate` is the mean calibrated correctness of a set
of kept rows, their expected **row precision** (the mean share of a row's pairs that are right;
for 1-1 rows, the pair precision), with a 95% interval: the 2.5th and 97.5th percentiles of the
estimate over `bootstrap` resamples of the gold's documents (seeded: the same interval every
run), each refitted. `heldout_check` fits on part of the gold documents and estimates the
rest's kept rows (`folds`-fold by document; both knobs are params `align.calibration`, stored in
the calibration), against their measured precision: how far off the
estimate runs on gold it was not fitted on.

A calibration belongs to what decides the scores (`scoring_key`): the bytes of the model's
weights (`model.pt`), the direction merge, the CRF's shape (`jump_cap`, `hidden`, `threads`),
the encoder by name and content (its cache fingerprint, `alignment.encoders`), and the
features (the code of `alignment.features` and the stop-word list); never the model folder's
bookkeeping (its path, stats.json's counts and paths, the time it was trained). `align train`
and `align corpus` record the key in their stats.json; `medsimp align calibrate --gold PATH`
fits one and writes it beside the model folder (`calibration_path`: `<model>.calibration.json`,
outside the folder, so retraining the same weights keeps it and the folder's content hash is
untouched); `find` returns it for a key, or the one line saying why there is none.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from medsimp import resources
from medsimp.config import resolve_path
from medsimp.doccache import code_version, content_key
from medsimp.errors import MedsimpError
from medsimp.params_schema import AlignCalibration

HELDOUT = "aligner_heldout.json"
SUFFIX = ".calibration.json"
METHOD = (
    "isotonic regression (scikit-learn) of each kept gold row's correct share of pairs on its "
    "crf_score; 95% interval: percentiles over `bootstrap` resamples of the gold documents"
)


def scoring_key(model_dir: str | Path, aligner: Any) -> str:
    """What decides a loaded `CRFAligner`'s scores, hashed (16 hex digits): the bytes of
    `model_dir/model.pt`, the merge, jump_cap, hidden and threads it runs with, its encoder's
    name and content fingerprint (as the embedding cache keys it), the features' code and stop
    words, and the deletion prior when there is one. Not the folder's path or its stats.json."""
    weights = hashlib.sha256((Path(model_dir) / "model.pt").read_bytes()).hexdigest()
    cfg = aligner.config
    key = content_key(
        "crf-scores",
        weights,
        {"merge": cfg.merge, "jump_cap": cfg.jump_cap, "hidden": cfg.hidden, "threads": cfg.threads}
        # without a prior the key is the one calibrations were fitted under before it was a param
        | ({"deletion_prior": cfg.deletion_prior} if cfg.deletion_prior else {}),
        aligner.encoder.name,
        aligner.encoder.fingerprint("en"),
        code_version("alignment.features"),
        cfg.stopwords,
    )
    return key[:16]


def calibration_path(model_dir: str | Path) -> Path:
    """The calibration file of a model folder: `<folder>.calibration.json`, beside it."""
    folder = Path(str(model_dir).rstrip("/") or ".")
    return folder.with_name(folder.name + SUFFIX)


def filter_rule(
    threshold: float,
    comparison: str,
    aligner_min: float | None,
    drop_copies: str = "none",
    copy_overlap: float = 0.9,
) -> dict[str, Any]:
    """The overlap filter (params `filter`) as a calibration records it: the kept rows differ
    with each of these. `drop_copies` and `copy_overlap` appear only when copies are dropped (the
    paper drops none), so a rule without them is the paper's."""
    rule: dict[str, Any] = {
        "threshold": float(threshold),
        "comparison": comparison,
        "aligner_min": aligner_min,
    }
    if drop_copies != "none":
        rule.update(drop_copies=drop_copies, copy_overlap=float(copy_overlap))
    return rule


def describe_filter(rule: Mapping[str, Any]) -> str:
    floor = rule.get("aligner_min")
    return (
        f"overlap r {rule['comparison']} {rule['threshold']}"
        + (f" or CRF probability >= {floor}" if floor is not None else "")
        + (
            f", {rule['drop_copies']} copies dropped (copy_overlap {rule.get('copy_overlap')})"
            if rule.get("drop_copies", "none") != "none"
            else ""
        )
    )


def _isotonic(scores: Sequence[float], correct: Sequence[float]):
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    return iso.fit(np.asarray(scores, dtype=np.float64), np.asarray(correct, dtype=np.float64))


def _fit_mean(rows: Sequence[tuple[int, float, float]], scores: np.ndarray) -> float:
    iso = _isotonic([s for _, s, _ in rows], [c for _, _, c in rows])
    return float(np.mean(iso.predict(scores)))


@dataclass(frozen=True)
class Calibration:
    """The kept gold rows one model's scores are calibrated on, and what they are."""

    key: str  # scoring_key of the model it was fitted for
    gold: str  # what it was fitted on, in words (path and content hash)
    merge: str  # align.crf.merge of the rows it was fitted on
    filter: Mapping[str, Any]  # filter_rule the kept rows passed
    rows: tuple[tuple[int, float, float], ...]  # (gold document, crf_score, correctness) per kept row
    documents: int  # gold documents
    heldout: Mapping[str, Any]  # heldout_check's numbers
    pairs: Mapping[str, Any]  # pair P/R/F1 of the model on the gold (all rows), and its rows
    bootstrap: int = 1000  # params align.calibration
    seed: int = 53

    @classmethod
    def fit(
        cls,
        key: str,
        gold: str,
        merge: str,
        rule: Mapping[str, Any],
        documents: Sequence[Sequence[tuple[float, float, bool]]],
        pairs: Mapping[str, Any],
        knobs: Any = None,
    ) -> Calibration:
        """From each gold document's rows (crf_score, correctness, kept by the filter);
        `knobs`: params `align.calibration` (folds, bootstrap, seed; None: the schema's)."""
        knobs = knobs or AlignCalibration()
        rows = tuple(
            (i, round(float(s), 6), round(float(c), 6))
            for i, doc in enumerate(documents)
            for s, c, kept in doc
            if kept
        )
        if len({s for _, s, _ in rows}) < 2:
            raise ValueError(
                f"the gold gives {len(rows)} kept row(s) with fewer than 2 distinct scores: "
                "nothing to calibrate on"
            )
        return cls(
            key,
            gold,
            merge,
            dict(rule),
            rows,
            len(documents),
            heldout_check(rows, knobs.folds),
            dict(pairs),
            knobs.bootstrap,
            knobs.seed,
        )

    @classmethod
    def from_json(cls, data: Any) -> Calibration:
        """A stored calibration, checked: ValueError says what is wrong with it."""
        if not isinstance(data, Mapping):
            raise ValueError("a calibration is a mapping")
        rows = data.get("rows")
        if not isinstance(rows, list) or len(rows) < 2:
            raise ValueError("its rows are a list of at least 2 [document, score, correctness]")
        for row in rows:
            if (
                not isinstance(row, list)
                or len(row) != 3
                or not isinstance(row[0], int)
                or not all(
                    isinstance(v, int | float) and not isinstance(v, bool) and 0.0 <= v <= 1.0
                    for v in row[1:]
                )
            ):
                raise ValueError("each row is [document, score in [0, 1], correctness in [0, 1]]")
        if data.get("merge") not in ("union", "intersection", "forward"):
            raise ValueError("it names its merge (union, intersection or forward)")
        for name in ("key", "gold"):
            if not isinstance(data.get(name), str) or not data[name]:
                raise ValueError(f"it names its {name}")
        rule = data.get("filter")
        if not isinstance(rule, Mapping) or not {"threshold", "comparison", "aligner_min"} <= set(rule):
            raise ValueError("it names the filter its rows passed (threshold, comparison, aligner_min)")
        for name in ("documents", "bootstrap"):
            n = data.get(name)
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ValueError(f"its {name} is a positive count")
        if not isinstance(data.get("seed"), int) or isinstance(data.get("seed"), bool):
            raise ValueError("its seed is an integer")
        return cls(
            data["key"],
            data["gold"],
            data["merge"],
            dict(rule),
            tuple((int(d), float(s), float(c)) for d, s, c in rows),
            data["documents"],
            dict(data.get("heldout") or {}),
            dict(data.get("pairs") or {}),
            data["bootstrap"],
            data["seed"],
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "gold": self.gold,
            "documents": self.documents,
            "merge": self.merge,
            "filter": dict(self.filter),
            "method": METHOD,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "heldout": dict(self.heldout),
            "pairs": dict(self.pairs),
            "rows": [list(r) for r in self.rows],
        }

    def probability(self, scores: Iterable[float]) -> np.ndarray:
        """Calibrated correctness of each score (clipped at the ends, as fitted)."""
        iso = _isotonic([s for _, s, _ in self.rows], [c for _, _, c in self.rows])
        return iso.predict(np.asarray(list(scores), dtype=np.float64))

    def interval(self, scores: Sequence[float]) -> tuple[float, float]:
        """95% bootstrap interval of the estimate: the gold documents resampled with
        replacement `bootstrap` times (seeded), the isotonic fit redone on each."""
        values = np.asarray(scores, dtype=np.float64)
        docs = sorted({d for d, _, _ in self.rows})
        by_doc = {d: [r for r in self.rows if r[0] == d] for d in docs}
        rng = np.random.default_rng(self.seed)
        means = []
        for _ in range(self.bootstrap):
            sample = [r for d in rng.choice(docs, size=len(docs)) for r in by_doc[int(d)]]
            if len({s for _, s, _ in sample}) < 2:
                continue
            means.append(_fit_mean(sample, values))
        return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))

    def estimate(self, scores: Iterable[float]) -> dict[str, Any] | None:
        """Estimated precision of kept rows with these scores, with its interval (None without any)."""
        values = sorted(float(s) for s in scores)
        if not values:
            return None
        low, high = self.interval(values)
        return {
            "rows": len(values),
            "precision": float(np.mean(self.probability(values))),
            "low": low,
            "high": high,
            "mean_score": float(np.mean(values)),
            "gold": self.gold,
            "calibration_rows": len(self.rows),
            "heldout": dict(self.heldout),
        }


def heldout_check(rows: Sequence[tuple[int, float, float]], folds: int = 5) -> dict[str, Any]:
    """Fit on part of the gold documents, estimate the kept rows of the rest: `folds` folds
    (document i in fold i mod folds; fewer with fewer documents), the estimates and the measured correctness pooled over
    the folds; `error` is estimated minus measured."""
    docs = sorted({d for d, _, _ in rows})
    folds = min(folds, len(docs))
    estimated: list[float] = []
    measured: list[float] = []
    for k in range(folds):
        test = {d for i, d in enumerate(docs) if i % folds == k}
        train = [r for r in rows if r[0] not in test]
        held = [r for r in rows if r[0] in test]
        if not held or len({s for _, s, _ in train}) < 2:
            continue
        iso = _isotonic([s for _, s, _ in train], [c for _, _, c in train])
        estimated += iso.predict(np.asarray([s for _, s, _ in held], dtype=np.float64)).tolist()
        measured += [c for _, _, c in held]
    if not measured:
        return {"folds": folds, "rows": 0}
    est, meas = float(np.mean(estimated)), float(np.mean(measured))
    return {
        "folds": folds,
        "rows": len(measured),
        "estimated": round(est, 4),
        "measured": round(meas, 4),
        "error": round(est - meas, 4),
    }


def describe(est: Mapping[str, Any]) -> str:
    """One sentence of `Calibration.estimate`'s numbers (the card and the data report)."""
    held = est.get("heldout") or {}
    check = (
        f"; on held-out gold ({held['folds']}-fold by document, {held['rows']} kept rows) it estimated "
        f"{held['estimated']:.3f} against {held['measured']:.3f} measured ({held['error']:+.3f})"
        if held.get("rows")
        else "; no held-out check (too few gold documents)"
    )
    return (
        f"expected precision of the kept rows {est['precision']:.3f} "
        f"(95% interval {est['low']:.3f}-{est['high']:.3f}, bootstrap over the gold's documents; "
        f"the mean share of a row's pairs that are right) over {est['rows']} aligner-scored kept rows "
        f"(CRF probabilities calibrated by isotonic regression on {est['gold']}, "
        f"{est['calibration_rows']} kept rows; mean raw probability {est['mean_score']:.3f}){check}"
    )


def find(
    model_dir: str | Path | None, key: str | None, shown_as: str | None = None
) -> tuple[Calibration | None, str]:
    """The calibration beside `model_dir` for the model of scoring `key`, or None and the one
    line saying why there is none (MedsimpError for an unreadable file: never a silent drop).
    The line names the file beside `shown_as` (the model's path as align recorded it, relative
    to the params), never the resolved one: a card is the same from any folder."""
    how = "medsimp align calibrate --gold PATH"
    if not key:
        return (
            None,
            f"not estimated: align recorded no scoring key for its model (re-run align corpus; {how})",
        )
    if not model_dir:
        return None, f"not estimated: align recorded no model folder ({how})"
    path = calibration_path(model_dir)
    shown = calibration_path(shown_as) if shown_as else Path(path.name)
    if not path.is_file():
        return None, f"not estimated: no calibration at {shown} ({how})"
    try:
        cal = Calibration.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise MedsimpError(f"{shown}: not a calibration ({exc}); fit it again with {how}") from None
    if cal.key != key:
        return None, (
            f"not estimated: {shown} is for another model's scores (key {cal.key}, this model's {key}: "
            f"other weights, merge, encoder or features; {how})"
        )
    return cal, ""


def estimate_line(
    cal: Calibration | None, why: str, scores: Sequence[float], merge: str, rule: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, str]:
    """The estimate for kept rows of these scores and its sentence, or None and why not."""
    if cal is None:
        return None, why
    if cal.merge != merge:
        return None, f"not estimated: the calibration is for align.crf.merge {cal.merge}, not {merge}"
    if dict(cal.filter) != dict(rule):
        return None, (
            f"not estimated: the calibration's kept rows passed {describe_filter(cal.filter)}, "
            f"this corpus's filter is {describe_filter(rule)}"
        )
    est = cal.estimate(scores)
    if est is None:
        return None, "not estimated: no kept row carries a CRF score"
    return est, describe(est)


def model_shown(model: str) -> str | None:
    """The model folder of align's `<path> sha256:<hash>` model field as recorded (relative to
    the params file), for messages; None when align recorded none."""
    path = model.rpartition(" sha256:")[0].strip() if " sha256:" in model else ""
    return path or None


def model_folder(model: str, params_dir: str | Path) -> str | None:
    """The model folder of align's `<path> sha256:<hash>` model field (stats.json, the card),
    resolved as params paths are; None when align recorded none."""
    path = model.rpartition(" sha256:")[0].strip() if " sha256:" in model else ""
    return resolve_path(path, params_dir) if path else None


def model_digest(model: str) -> str:
    """The content hash in a card's or stats.json's `... sha256:<hash>` model field ('' if none)."""
    digest = model.rpartition("sha256:")[2].strip()
    return "" if digest.startswith("_") or digest == "missing" else digest


def heldout(key: str) -> dict[str, Any] | None:
    """The packaged held-out P/R/F1 of the model whose scores `key` names (its `scoring_key`:
    the weights, merge, encoder and features, never the folder's bookkeeping); None for a model
    never measured. A malformed entry is one MedsimpError naming it (a packaging bug, never a
    silent number)."""
    digest = "" if key.startswith("_") else key.strip()
    try:
        known = json.loads(resources.path(HELDOUT).read_text(encoding="utf-8"))
        row = known.get(digest) if digest and isinstance(known, dict) else None
        if not isinstance(row, dict):
            return None
        for key in ("precision", "recall", "f1"):
            value = row.get(key)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ValueError(f"its {key} is not a number")
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):  # NaN, inf, 5.0, -0.5: no score
                raise ValueError(f"its {key} {value!r} is not a fraction from 0 to 1")
        return dict(row)
    except ValueError as exc:  # json.JSONDecodeError is one
        raise MedsimpError(f"packaged {HELDOUT}, model {digest or key!r}: {exc}") from None


def score_gold(
    aligner: Any, docs: Sequence[Any], rule: Mapping[str, Any]
) -> tuple[list[list[tuple[float, float, bool]]], dict[str, Any]]:
    """Align each gold document (`alignment.gold.DocPair`) with a loaded `CRFAligner`: per
    document, each row's (crf_score, correctness, kept by the overlap filter `rule`: the row's
    joined sentences as `align corpus` writes them, `alignment.overlap.filter_row`), and the
    pair P/R/F1 of all rows over the documents (`alignment.score.pair_prf`)."""
    from alignment.overlap import filter_row
    from alignment.score import pair_prf

    documents, predicted = [], []
    for d in docs:
        res = aligner.align(d.complex, d.simple)
        predicted.append(set(res.pairs))
        gold = set(d.pairs)
        rows = []
        for complex_ids, simple_ids in res.blocks:
            inside = [(c, s) for c in complex_ids for s in simple_ids if (c, s) in res.pairs]
            if not inside:
                continue
            score = float(np.mean([res.pairs[k] for k in inside]))
            row = {
                "language": "en",
                "complex_text": " ".join(d.complex[c] for c in complex_ids),
                "simple_text": " ".join(d.simple[s] for s in simple_ids),
                "crf_score": score,
            }
            kept = filter_row(
                row,
                rule["threshold"],
                rule["comparison"],
                rule["aligner_min"],
                rule.get("drop_copies", "none"),
                rule.get("copy_overlap", 0.9),
            )["keep"]
            rows.append((score, sum(k in gold for k in inside) / len(inside), bool(kept)))
        documents.append(rows)
    prf = pair_prf([set(d.pairs) for d in docs], predicted)
    return documents, {k: round(float(prf[k]), 4) for k in ("precision", "recall", "f1")}
