"""`medsimp report` as one stage function: the data report of a builder folder
(`<output>/index.html`, `report.md`, `report.json`, one PNG per config in the plots folder). The
command (`medsimp.cli.commands.report`) parses its flags and calls `report`.

The builder folder and the sentence table may be in an object store (read from a local copy,
`pipelines.jobs.objstore.download`), and so may the report of a builder of public data: written
in a local scratch folder, then uploaded to a fresh run prefix and published
(`objstore.publish`; docs/refresh.md "Outputs in an object store").

Upstream facts are read from what upstream wrote: the filter the corpus went through from the
card (`filter.recorded`, which `medsimp build` took from the filter stage's stats.json) and the
merge the aligner used from the card (`aligner.merge`, from align's stats.json). A card without
them (built before 2026-12-06) is read with today's params, and the report says so once.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2
import pyarrow.parquet as pq

from alignment.calibration import estimate_line, filter_rule, find, model_folder, model_shown
from medsimp import resources
from medsimp.atomic import (
    NOT_OURS,
    atomic_dir,
    atomic_file,
    check_file_target,
    current_command,
    is_url,
    write_json,
)
from medsimp.config import shown_path
from medsimp.errors import InputError, UsageError
from medsimp.lineage import is_restricted, read_lineage
from medsimp.params_schema import AnnotateReport, Beam, Filter
from medsimp.report import data as report_data
from medsimp.report.markdown import markdown


@dataclass(frozen=True)
class Inputs:
    folder: str | Path  # the builder folder, or the object-store prefix it was published to
    sentences: str | None = None  # the sentence table of a pair builder
    show_restricted: bool = False  # show a MIMIC-derived builder's text (do-not-share banner)


@dataclass(frozen=True)
class Outputs:
    folder: str | None = None  # the report folder (None: out/report/<builder>), or a store prefix
    plots: str | None = None  # the folder for the PNG plots (DVC plots)
    force: bool = False  # write a store prefix another command wrote


@dataclass(frozen=True)
class Sections:
    """The params the report reads: `annotate.report`, `filter` (a card that does not record
    its filter only), `readability.syllable_languages` and `beam` (how an object store is
    reached, when a folder is in one)."""

    report: AnnotateReport
    filter: Filter
    syllable_languages: list[str]
    beam: Beam | None = None


def report(inputs: Inputs, outputs: Outputs, sections: Sections, base: str = ".") -> dict[str, Any]:
    """Write the report; `base`: the params file's folder (paths are shown relative to it).
    -> the summary (`builder`, `configs`, `html_bytes`, `seconds`, `index`: the page written)."""
    if any(is_url(str(value)) for value in (inputs.folder, inputs.sentences, outputs.folder) if value):
        return _with_store(inputs, outputs, sections, base)
    return _report(inputs, outputs, sections, base)


def _with_store(inputs: Inputs, outputs: Outputs, sections: Sections, base: str) -> dict[str, Any]:
    """The report of a builder folder (and sentence table) in an object store, read from a local
    copy (`objstore.download`), and/or into a store: written in a local scratch folder, then
    uploaded to a fresh run prefix and published (`objstore.publish`), for a builder of public
    data only (`objstore.check_public`, and the card's `mimic_derived`): one line, exit 2, before
    the store is written, otherwise."""
    from pipelines.jobs import objstore

    given = str(inputs.folder)
    with tempfile.TemporaryDirectory(prefix="medsimp-report-") as scratch:
        named = {
            flag: value for flag, value in (("FOLDER", given), ("--sentences", inputs.sentences)) if value
        }
        urls = {flag: value for flag, value in named.items() if is_url(value)}
        objstore.stage_input(sections.beam, (), urls)  # the store reached with the params' Beam options
        local = {
            flag: objstore.download(url, os.path.join(scratch, str(n)), flag)
            for n, (flag, url) in enumerate(sorted(urls.items()))
        }
        folder = Path(local.get("FOLDER", given))
        copy = replace(inputs, folder=folder, sentences=local.get("--sentences", inputs.sentences))
        shown = given if is_url(given) else None
        if not outputs.folder or not is_url(outputs.folder):
            return _report(copy, outputs, sections, base, shown)
        tags = objstore.check_public(outputs.folder, named)  # before the store is written
        if (report_data.read_card(folder).get("medsimp") or {}).get("mimic_derived", True):
            raise UsageError(
                f"--output {outputs.folder}: this output goes to local folders only: the builder {given} "
                "is MIMIC-derived (its card); MIMIC-derived text never leaves the machine (docs/refresh.md)"
            )
        built = os.path.join(scratch, "report")
        with objstore.publish(outputs.folder, current_command(), tags, force=outputs.force) as prefix:
            summary = _report(
                copy,
                replace(outputs, folder=built),
                sections,
                base,
                shown,
                lambda: objstore.upload(built, prefix),
            )
        return {**summary, "index": f"{outputs.folder.rstrip('/')}/index.html"}


def _report(
    inputs: Inputs,
    outputs: Outputs,
    sections: Sections,
    base: str,
    shown: str | None = None,
    then: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """The report of the local builder folder `inputs.folder` into the local folder
    `outputs.folder` (None: out/report/<builder>); `shown` names the folder in the report when it
    is a copy (its URL); `then()` runs once the folder is written, before the plots."""
    start = time.perf_counter()
    folder = Path(inputs.folder)
    card = report_data.read_card(folder)
    meta = card.get("medsimp") or {}
    builder = str(meta.get("builder") or folder.name)
    try:
        stats = json.loads((folder / "stats.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputError(f"{folder}: no readable stats.json") from None
    lineage = read_lineage(folder)
    restricted = bool(meta.get("mimic_derived", True)) or is_restricted(lineage)
    rp = sections.report
    # the filter the corpus went through, as the card records it; a card without it (built
    # before 2026-12-06) is read with today's params, and the report says so once
    recorded: dict = meta["filter.recorded"] if isinstance(meta.get("filter.recorded"), dict) else {}
    flt = sections.filter
    threshold = float(recorded.get("threshold", flt.threshold))
    copy_overlap = float(recorded.get("copy_overlap", flt.copy_overlap))
    if meta.get("aligner.model") and not recorded:
        print(
            "warning: the card does not record the filter the corpus went through: overlap r and copies are "
            "described with today's params filter section (rebuild the corpus to record it)",
            file=sys.stderr,
        )
    sentences = None
    if inputs.sentences:
        try:
            sentences = pq.read_table(
                inputs.sentences, columns=["sentence_id", "doc_id", "side", "language"]
            ).to_pylist()
        except (OSError, ValueError, KeyError):
            raise InputError(f"{inputs.sentences}: not a sentence table") from None
    estimator = _estimator(meta, recorded, flt, threshold, base)
    configs: dict[str, dict] = {}
    splits: dict[str, dict[str, int]] = {}
    images: dict[str, str] = {}
    pngs: dict[str, bytes] = {}
    show_text = inputs.show_restricted or not restricted
    for cfg in card.get("configs") or []:
        name = report_data.config_name(cfg, folder)
        rows = []
        splits[name] = {}
        for f in cfg.get("data_files") or []:
            try:
                table = pq.read_table(folder / f["path"])
            except (OSError, ValueError):
                raise InputError(f"{folder / f['path']}: cannot read") from None
            splits[name][f["split"]] = table.num_rows
            rows += table.to_pylist()
        st = report_data.config_stats(
            rows,
            sentences,
            threshold,
            sections.syllable_languages,
            rp.top_semtypes,
            rp,
            show_text,
            estimator,
            copy_overlap,
        )
        st["examples"] = report_data.examples(rows, rp.examples) if show_text else []
        st["vocabulary"] = str(meta.get("umls.vocabulary") or "")  # a demo one is said on the chart
        pngs[name] = report_data.figure_png(f"{builder} / {name}", st, rp.bins)
        images[name] = report_data.png_data_uri(pngs[name])
        configs[name] = st
    split_names = sorted(
        {s for v in splits.values() for s in v},
        key=lambda s: (["train", "validation", "test"] + [s]).index(s),
    )
    counts = {k: v for k, v in stats.items() if not isinstance(v, (dict, list))}
    data = {
        "builder": builder,
        "folder": shown or shown_path(folder, base),  # not as typed: the same from any folder
        "lineage": list(lineage) if lineage else None,
        "restricted": restricted,
        "show_text": show_text,
        "counts": counts,
        "splits": splits,
        "split_names": split_names,
        "configs": report_data.public(configs),
        "issues": report_data.issues(configs),
    }
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.globals["percent"] = report_data.percent
    template = resources.path("report/report.html.j2")
    html = env.from_string(template.read_text(encoding="utf-8")).render(
        r={**data, "images": images},
        semtype_tables={c: report_data.semtype_table(st["semtypes"]) for c, st in configs.items()},
    )
    out = outputs.folder or f"out/report/{report_data.plain_name(builder, folder, 'builder')}"
    plots = {name: Path(outputs.plots) / f"{name}.png" for name in pngs} if outputs.plots else {}
    for name, target in plots.items():  # a PNG medsimp did not write: refused before any write
        if check_file_target(target, same_content_ok=True) and target.read_bytes() != pngs[name]:
            raise UsageError(f"{target} {NOT_OURS}")
    with atomic_dir(out, inputs=[folder], lineage=lineage or None) as tmp:
        (tmp / "index.html").write_text(html, encoding="utf-8")
        (tmp / "report.md").write_text(markdown(data), encoding="utf-8")
        write_json(tmp / "report.json", data)
    if then is not None:
        then()
    for name, target in plots.items():
        with atomic_file(target, same_content_ok=True) as tmp:
            tmp.write_bytes(pngs[name])
    return {
        "builder": builder,
        "configs": len(configs),
        "html_bytes": len(html.encode("utf-8")),
        "seconds": round(time.perf_counter() - start, 2),
        "index": Path(out) / "index.html",
    }


def _estimator(meta: dict, recorded: dict, flt: Filter, threshold: float, base: str):
    """The aligner's calibration beside the model the card names, found by what decides its
    scores (alignment.calibration): the kept rows' expected precision, or why there is none;
    None for a corpus without the aligner."""
    if not meta.get("aligner.model"):
        return None
    found, why = find(
        model_folder(str(meta["aligner.model"]), base),
        str(meta.get("aligner.scoring_key") or "").removesuffix("not recorded by align"),
        model_shown(str(meta["aligner.model"])),
    )
    rule = filter_rule(
        threshold,
        str(recorded.get("comparison", flt.comparison)),
        recorded.get("aligner_min") if recorded else flt.aligner_floor(),
        str(recorded.get("drop_copies", "none")),  # a card from before the key: none dropped
        float(recorded.get("copy_overlap", flt.copy_overlap)),
    )
    merge = str(meta.get("aligner.merge") or "").removesuffix("not recorded by align")
    if not recorded:  # an older card: the filter the corpus went through is not known
        found, why = (
            None,
            "not estimated: the card does not record the filter the corpus went through (rebuild it)",
        )
    elif found is not None and not merge:
        found, why = (
            None,
            "not estimated: align's stats.json does not record the merge it used (rerun align corpus)",
        )

    def estimator(scores):
        return estimate_line(found, why, scores, merge, rule)

    return estimator
