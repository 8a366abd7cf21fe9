"""`align train` and `align calibrate` as stage functions: the command (`medsimp.cli.commands.align`)
parses its flags, resolves paths and checks outputs, then calls one of these with the typed
params section and what it resolved; each returns the stage's stats and its summary."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alignment.calibration import (
    Calibration,
    calibration_path,
    describe_filter,
    score_gold,
    scoring_key,
)
from alignment.crf import CRFAligner
from alignment.devgold import DESCRIPTION, FILES, dev_gold, is_dev_folder
from alignment.encoders import make_encoder
from alignment.gold import DocPair, read_golds
from alignment.selftrain import Pool, choose_pool, english_documents, keep_pinned, pool_record, self_train
from medsimp import code_graph
from medsimp.atomic import atomic_dir, write_json
from medsimp.doccache import code_version, content_key
from medsimp.errors import InputError
from medsimp.markers import marker_of
from medsimp.params_schema import Align
from medsimp.provenance import content_hash
from medsimp.reviews import MC_CLEAN_TEST_REVIEWS, review_key
from medsimp.stats import output_stats
from pipelines.sources.tables import sentence_files


@dataclass(frozen=True)
class TrainRun:
    """What `train` needs besides params `align`: resolved paths and flags."""

    gold: Sequence[str]  # gold files, in order
    gold_format: str
    out: str  # the model folder (checked and held by the command)
    table: str | None = None  # the sentence table self-training labels (None: self-training off)
    retrain: bool = False  # retrain even when the model at `out` may stay
    cache: str | None = None  # the embedding cache folder
    shown: Callable[[str], str] = field(default=str)  # a path as records name it (params-relative)


def train(params: Align, run: TrainRun) -> tuple[dict[str, Any], dict[str, Any]]:
    """Train the CRF on the gold, self-trained on the table's reviews (params
    align.self_training), into `run.out`; or keep the model there (`keep_pinned`, issue 55).
    -> (stats, summary)."""
    docs = read_golds(run.gold, run.gold_format)
    if not docs:
        raise InputError(f"no gold documents in {', '.join(map(str, run.gold)) or 'align.gold (empty list)'}")
    enabled = params.self_training.enabled
    previous = _previous_self_training(run.out) if enabled and not run.retrain else {}
    watch = list(previous["pool_docs"]) if isinstance(previous.get("pool_docs"), dict) else []
    pool = _pool(run, params, docs, watch) if enabled else None  # read before any work
    enc = make_encoder(params.crf.encoder, run.cache)
    gold_hashes = [content_hash(g) for g in run.gold]
    self_stats: dict[str, object] = {"enabled": False}
    if pool is None:
        model = CRFAligner.train(docs, enc, params.crf)
    else:
        recipe = _recipe(gold_hashes, run.gold_format, params, enc)
        why = (
            keep_pinned(previous, recipe, pool, params.self_training.retrain_after_new) if previous else None
        )
        if why:  # the old reviews' pairs stay as they are: nothing is written
            return _kept(run, previous, pool, why)
        model, info = self_train(docs, pool.documents, enc, params.crf, params.self_training)
        self_stats = {
            "enabled": True,
            "input": run.shown(str(run.table)),
            "min_posterior": params.self_training.min_posterior,
            "max_documents": params.self_training.max_documents,
            **pool.stats(),
            **info,
            "recipe": recipe,  # what the model is a function of, beside its pool (keep_pinned)
            **pool_record(pool),
        }
    stats = {
        "documents": len(docs),
        "gold": [f"{run.shown(g)} sha256:{h}" for g, h in zip(run.gold, gold_hashes)],
        "gold_pairs": sum(len(d.pairs) for d in docs),
        "self_training": self_stats,
        "encoder": enc.name,
        "cache_hits": enc.hits,
        "cache_misses": enc.misses,
    }
    with atomic_dir(run.out) as tmp:
        model.save(tmp)
        if self_stats["enabled"]:  # a later run keeps the model only while these bytes are there
            self_stats["weights"] = _weights_digest(tmp)
        # what decides its scores (alignment.calibration): its calibration is found by it
        stats["scoring_key"] = scoring_key(tmp, model)
        write_json(tmp / "stats.json", output_stats(stats))
    summary = {
        **stats,
        "self_training": self_training_line(self_stats),  # stats.json keeps the counts
        # an F1 on its own training documents says little: none here (issue 53)
        "f1": "none on its training documents (align calibrate measures it on held-out gold)",
    }
    return stats, summary


def _recipe(gold_hashes: list[str], gold_format: str, params: Align, enc) -> str:
    """What a self-trained model is a function of, besides its pool: the gold's content in its
    order and how it is read, params align.crf, the self-training knobs that shape it, the
    encoder, and the code `align train` runs (this module's whole import closure, as DVC's
    align_train stage lists it: a code change retrains)."""
    knobs = params.self_training
    modules, _ = code_graph.closure([__name__])
    return content_key(
        "align-train",
        gold_hashes,
        gold_format,
        params.crf.model_dump(mode="json"),
        {"min_posterior": knobs.min_posterior, "max_documents": knobs.max_documents},
        enc.name,
        enc.fingerprint("en"),
        code_version(*sorted(modules)),
    )


def _weights_digest(folder: Path) -> str:
    """sha256 over the files `CRFAligner.save` writes (model.pt, config.json)."""
    h = hashlib.sha256()
    for name in ("model.pt", "config.json"):
        path = folder / name
        h.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"<missing>") + b"\0")
    return h.hexdigest()


def _previous_self_training(out: str) -> dict:
    """The `self_training` record of the model `align train` wrote at `out` before, or {}: a
    folder that is not align train's (no marker naming it, a link) is never read."""
    folder = Path(out)
    if (
        folder.is_symlink()
        or not folder.is_dir()
        or (marker_of(folder) or {}).get("command") != "align train"
    ):
        return {}
    info = _read_json(folder / "stats.json").get("self_training")
    if not isinstance(info, dict) or info.get("weights") != _weights_digest(folder):
        return {}  # not a record, or the model's files changed since it was written: retrain
    return info


def _kept(run: TrainRun, previous: dict, pool: Pool, why: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The stats and summary of a run that keeps the model at `run.out` as it is."""
    stats = {**_read_json(Path(run.out) / "stats.json"), "kept": why}
    summary = {
        "model": f"{run.shown(run.out)} kept ({why})",
        "self_training": self_training_line(previous),
        "pool_now": f"{pool.eligible} usable reviews (pool_eligible), {previous.get('pool_eligible')} when trained",
    }
    return stats, summary


def self_training_line(info: dict) -> str:
    """The summary's one line for `align train`'s self-training counts."""
    if not info.get("enabled"):
        return "off"
    skipped = ", ".join(
        f"{key.removeprefix('pool_skipped_').replace('_', ' ')} {n}"
        for key, n in info.items()
        if key.startswith("pool_skipped_") and n
    )
    return (
        f"{info['pool_used']} of {info['pool_read']} reviews labelled, {info['pseudo_pairs']} pairs kept"
        + (f"; left out: {skipped}" if skipped else "")
    )


def _pool(run: TrainRun, params: Align, gold: Sequence[DocPair], watch) -> Pool:
    """The English reviews of the sentence table that self-training labels, or one line saying
    how to get one."""
    table = str(run.table)
    try:
        sentence_files(table)
    except FileNotFoundError:
        raise InputError(
            f"align.self_training reads the reviews to label from {run.shown(table)}, "
            "which holds no sentence table: run `medsimp cochrane` first, pass --input DIR, or set "
            "align.self_training.enabled=false"
        ) from None
    try:
        return choose_pool(english_documents(table), gold, params.self_training.max_documents, watch)
    except ValueError as exc:  # a document id twice: the pool would depend on the table's order
        raise InputError(f"{run.shown(table)}: {exc}") from None


def calibrate(
    params: Align,
    rule: dict[str, Any],
    model_dir: str,
    gold_arg: str,
    gold_format: str | None,
    cache: str | None,
    shown: Callable[[str], str] = str,
) -> tuple[Path, dict[str, Any]]:
    """Fit the calibration of the model at `model_dir` on the held-out gold `gold_arg` (Devaraj et
    al.'s dev folder or a gold file) under the filter `rule` (`calibration.filter_rule` of params
    `filter`), write it beside the model.
    -> (the file written, the summary)."""
    gold = Path(gold_arg)
    if not gold.exists():
        raise InputError(f"--gold {gold_arg}: no such file or folder")
    if gold.is_dir() and not is_dev_folder(gold):
        raise InputError(
            f"--gold {gold_arg}: a folder without Devaraj et al.'s {', '.join(FILES)}; "
            "give that folder (the dev gold) or a gold file as align train reads"
        )
    try:
        docs = dev_gold(gold) if gold.is_dir() else read_golds([gold], gold_format or "auto")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            f"--gold {gold_arg}: not gold alignments ({type(exc).__name__}: {exc})"[:300]
        ) from None
    if not docs or not any(d.pairs for d in docs):
        raise InputError(f"--gold {gold_arg}: no gold document with an aligned pair")
    test = sorted({review_key(d.doc_id) for d in docs} & MC_CLEAN_TEST_REVIEWS)
    if test:
        raise InputError(
            f"--gold {gold_arg} holds {len(test)} of the 22 MC-CLEAN English test reviews "
            f"({', '.join(test[:3])}{', ...' if len(test) > 3 else ''}): test data is never fitted on"
        )
    digest = content_hash(gold)
    trained = _read_json(Path(model_dir) / "stats.json").get("gold") or []
    if any(isinstance(g, str) and g.endswith(f"sha256:{digest}") for g in trained):
        raise InputError(
            f"--gold {gold_arg} is the gold {shown(model_dir)} was trained on: calibrate on gold it never saw"
        )
    model = CRFAligner.load(model_dir, make_encoder(params.crf.encoder, cache), params.crf.merge)
    key = scoring_key(model_dir, model)
    rows, prf = score_gold(model, docs, rule)
    pairs = sum(len(d.pairs) for d in docs)
    what = (
        DESCRIPTION
        if gold.is_dir()
        else f"{len(docs)} gold documents, {pairs} pairs, of {shown(str(gold))} sha256:{digest}"
    )
    try:
        cal = Calibration.fit(
            key,
            what,
            params.crf.merge,
            rule,
            rows,
            {**prf, "gold_pairs": pairs, "documents": len(docs)},
            params.calibration,
        )
    except ValueError as exc:
        raise InputError(f"--gold {gold_arg}: {exc}") from None
    target = calibration_path(model_dir)
    write_json(target, cal.as_json())
    held = cal.heldout
    scored = sum(len(r) for r in rows)
    summary = {
        "model": f"{shown(model_dir)} (scoring key {key})",
        "gold": what,
        "pair_f1_on_gold": f"{prf['f1']:.3f} (P {prf['precision']:.3f}, R {prf['recall']:.3f}; "
        "documents the model never trained on)",
        "rows": f"{scored} predicted, {len(cal.rows)} kept by the filter ({describe_filter(rule)})",
        "kept_precision_on_gold": round(sum(c for _, _, c in cal.rows) / len(cal.rows), 4),
        "heldout_check": (
            f"estimated {held['estimated']:.3f}, measured {held['measured']:.3f} "
            f"({held['folds']}-fold by document, {held['rows']} kept rows)"
            if held.get("rows")
            else "none (too few documents)"
        ),
    }
    return target, summary


def corpus_scoring_key(params: Align, cache: str | None) -> str | None:
    """What decides the scores of the model `align corpus` runs (`alignment.calibration`), the
    key its calibration is found by; None without a model (the job then says so)."""
    if not (Path(params.model) / "model.pt").is_file():
        return None
    model = CRFAligner.load(params.model, make_encoder(params.crf.encoder, cache), params.crf.merge)
    return scoring_key(params.model, model)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}
