"""What a dataset card records of how its corpus was made (`medsimp build`, builders/README.md):
the code's and the inputs' content hashes, the upstream stages' params hashes (`UPSTREAM`), the
aligner, its calibration's expected kept-row precision and the filter as upstream recorded
them, the UMLS vocabulary; and the lineage of the inputs (`input_lineage`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medsimp import lineage
from medsimp.config import params_hash, resolve_path
from medsimp.corpora import builder_module
from medsimp.corpora.writer import code_hash
from medsimp.provenance import content_hash

if TYPE_CHECKING:
    from medsimp.params_schema import Params

# The params sections of the stages upstream of each builder (dvc.yaml), hashed on the card.
UPSTREAM = {
    "multicochrane": ("cochrane", "link", "align", "filter"),
    "medlane": ("notes",),
    "msd": ("msd", "link"),
    "plaba": ("plaba", "link"),
    "radiology": ("radiology",),
}


def card_provenance(
    name: str, params: Params, params_dir: str, cfg, located, aligner_scores: Sequence[float] = ()
) -> dict[str, str]:
    """What a card records of how the corpus was made: a content hash of the code
    (`medsimp.corpora.writer.code_hash`; the git revision is in the run record), a content hash
    of every input named in `build.<name>`, the params
    hash of every upstream stage, and for corpora from the aligner its model, its gold, its
    held-out score, the precision its calibration (`alignment.calibration.find`) expects of
    `aligner_scores` (the CRF scores of the corpus's kept automatic English rows) with its
    interval, or why there is none, and the filter threshold. Paths are as written in
    params; hashes are of content, so the same inputs give the same card from any folder."""
    from alignment.calibration import estimate_line, filter_rule, find, model_folder, model_shown

    out: dict[str, Any] = {"code_sha256": code_hash(builder_module(name))}
    for key, value in cfg:
        if isinstance(value, str) and value:
            out[f"input.{key}"] = f"{value} sha256:{content_hash(getattr(located, key))}"
    for stage in UPSTREAM.get(name, ()):
        out[f"params_hash.{stage}"] = params_hash(getattr(params, stage))
    if "link" in UPSTREAM.get(name, ()) and getattr(located, "linked", None):
        out["umls.vocabulary"] = vocabulary(_read_stats(str(located.linked)))
    if "align" in UPSTREAM.get(name, ()):
        from medsimp.corpora.multicochrane import filter_settings

        # the model `align corpus` actually used and its gold, as its stats.json records them
        used = _read_stats(resolve_path(params.align.output, params_dir)).get("aligner") or {}
        out["aligner.model"] = str(used.get("model") or f"{params.align.model} (not recorded by align)")
        gold = used.get("gold")
        out["aligner.gold"] = (
            ", ".join(gold) if isinstance(gold, list) and gold else "not recorded by align train"
        )
        out["aligner.self_training"] = str(used.get("self_training") or "not recorded by align")
        # the precision its calibration (beside the model, found by what decides the scores)
        # expects of the kept English rows, with its interval; else the one line saying why not
        key = str(used.get("scoring_key") or "")
        out["aligner.scoring_key"] = key or "not recorded by align"
        out["aligner.heldout"] = heldout_score(key)
        model_dir = model_folder(str(used.get("model") or ""), params_dir)
        # what upstream ran with, as it recorded it (never today's params): the merge `align
        # corpus` used (its stats.json) and the filter the pairs went through (the filter's)
        merge = str(used.get("merge") or "")
        out["aligner.merge"] = merge or "not recorded by align"
        flt, source = filter_settings(located, params.filter)
        rule = filter_rule(
            flt.threshold, flt.comparison, flt.aligner_floor(), flt.drop_copies, flt.copy_overlap
        )
        calibration, why = find(model_dir, key, model_shown(str(used.get("model") or "")))
        if calibration is not None and not merge:
            line = "not estimated: align's stats.json does not record the merge it used (rerun align corpus)"
        else:
            _, line = estimate_line(calibration, why, aligner_scores, merge, rule)
        out["aligner.expected_kept_precision"] = line
        out["filter.threshold"] = f"{flt.comparison} {flt.threshold}"
        if flt.aligner_floor() is not None:  # ours: the aligner's probability rescues pairs
            out["filter.rule"] = f"{flt.rule} (CRF probability >= {flt.aligner_floor()})"
        if flt.drop_copies != "none":
            out["filter.drop_copies"] = f"{flt.drop_copies} (copy_overlap {flt.copy_overlap})"
        out["filter.recorded"] = {  # for the data report (medsimp report), as the filter ran
            "threshold": float(flt.threshold),
            "comparison": flt.comparison,
            "aligner_min": flt.aligner_floor(),
            "drop_copies": flt.drop_copies,
            "copy_overlap": float(flt.copy_overlap),
            "from": source,
        }
    return out


def vocabulary(linked_stats: dict) -> str:
    """What the card says of the UMLS index the link stage used (its stats.json): a demo
    vocabulary (the embedded starter index, so semantic types are a smoke test) or a release."""
    terms = linked_stats.get("index_terms")
    if not isinstance(terms, int):
        return "not recorded by link"
    if linked_stats.get("index_demo"):
        return f"demo vocabulary ({terms} terms, not a UMLS release): concepts and semantic types are a smoke test"
    return f"UMLS index of {terms} terms"


def heldout_score(key: str) -> str:
    """The aligner's measured pair P/R/F1 on held-out real gold, for the exact scores measured
    (`alignment.calibration.heldout`: its scoring key in the packaged `aligner_heldout.json`);
    else how to measure it."""
    from alignment.calibration import heldout

    row = heldout(key) if key else None
    if row is None:
        return "not measured for this model (scripts/eval_alignment.py --only cochrane --model NAME=DIR)"
    return (
        f"pair F1 {row['f1']:.3f} (P {row['precision']:.3f}, R {row['recall']:.3f}) on {row['gold']}; "
        "human agreement 0.89 (docs/alignment.md)"
    )


def _read_stats(folder: str) -> dict:
    path = Path(folder) / "stats.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# Raw (non-Parquet) builder inputs of a public source, by builder and params key.
RAW_PUBLIC_INPUTS = {("multicochrane", "mc_human"): "cochrane"}


def input_lineage(cfg: dict, mimic_derived: bool, name: str = "") -> tuple[str, ...] | None:
    """Union of the lineage of every input path named in the builder's params: a Parquet
    input's own lineage; any other file or folder is MIMIC when the builder's own inputs are
    (`mimic_derived`), a declared public source (RAW_PUBLIC_INPUTS), else unknown. So a
    MIMIC table or file swapped in by `--set` keeps the output restricted."""
    found: list[tuple[str, ...] | None] = [(lineage.MIMIC,)] if mimic_derived else []
    for key, value in sorted(cfg.items()):
        if not isinstance(value, str) or not value or not Path(value).exists():
            continue
        path = Path(value)
        if path.suffix == ".parquet" or (path.is_dir() and any(path.rglob("*.parquet"))):
            found.append(lineage.read_lineage(path))
        elif (name, key) in RAW_PUBLIC_INPUTS:
            found.append((RAW_PUBLIC_INPUTS[name, key],))
        elif not mimic_derived:
            found.append(None)
    return lineage.union(*found)
