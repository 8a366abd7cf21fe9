"""Data report of a builder folder (docs/annotate.md): `<output>/index.html` (self-contained),
`report.md`, `report.json`, and one PNG per config in --plots (DVC plots):
    medsimp report builders/multicochrane --sentences out/cochrane/sentences --output out/report/multicochrane --plots plots/report/multicochrane
MIMIC-derived builders show no text unless --show-restricted (then under a do-not-share banner).
The builder and --sentences may be in an object store (read from a local copy), and so may the
report of a builder of public data (docs/refresh.md "Outputs in an object store").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HELP = (
    "data report of a builder: its shape, outliers, identical pairs, lengths, FKGL, overlap r, "
    "alignment types, semantic types"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "folder",
        help="builder folder, e.g. builders/multicochrane, or the object-store prefix it was published to",
    )
    parser.add_argument(
        "--sentences",
        help="sentence table of a pair builder (deletion and "
        "elaboration ratios), e.g. out/cochrane/sentences",
    )
    parser.add_argument(
        "--output",
        help="report folder (default: out/report/<builder>), or an object-store prefix for a builder of "
        "public data (s3://bucket/x; docs/refresh.md)",
    )
    parser.add_argument("--plots", help="folder for the PNG plots (DVC plots)")
    parser.add_argument(
        "--show-restricted",
        action="store_true",
        help="show example text of a MIMIC-derived builder (do-not-share banner)",
    )


def run(args: argparse.Namespace) -> int:
    from medsimp.atomic import is_url

    if any(is_url(value) for value in (args.folder, args.sentences, args.output) if value):
        return _with_store(args)
    return _report(args, args.folder, args.sentences, args.output)


def _with_store(args: argparse.Namespace) -> int:
    """The report of a builder folder (and sentence table) in an object store, read from a local
    copy (`objstore.download`), and/or into a store: written in a local scratch folder, then
    uploaded to a fresh run prefix and published (`objstore.publish`), for a builder of public
    data only (`objstore.check_public`, and the card's `mimic_derived`): one line, exit 2, before
    the store is written, otherwise."""
    import os
    import tempfile

    from medsimp.atomic import current_command, is_url
    from medsimp.cli.source_job import stage_input
    from medsimp.errors import UsageError
    from medsimp.report import data as report
    from pipelines.jobs import objstore

    with tempfile.TemporaryDirectory(prefix="medsimp-report-") as scratch:
        named = {
            flag: value for flag, value in (("FOLDER", args.folder), ("--sentences", args.sentences)) if value
        }
        urls = {flag: value for flag, value in named.items() if is_url(value)}
        stage_input(args, urls)  # the store reached with the params' Beam options; buckets checked
        local = {
            flag: objstore.download(url, os.path.join(scratch, str(n)), flag)
            for n, (flag, url) in enumerate(sorted(urls.items()))
        }
        folder, sentences = local.get("FOLDER", args.folder), local.get("--sentences", args.sentences)
        shown = args.folder if is_url(args.folder) else None
        if not args.output or not is_url(args.output):
            return _report(args, folder, sentences, args.output, shown)
        tags = objstore.check_public(args.output, named)  # before the store is written
        if (report.read_card(Path(folder)).get("medsimp") or {}).get("mimic_derived", True):
            raise UsageError(
                f"--output {args.output}: this output goes to local folders only: the builder {args.folder} "
                "is MIMIC-derived (its card); MIMIC-derived text never leaves the machine (docs/refresh.md)"
            )
        built = os.path.join(scratch, "report")
        with objstore.publish(args.output, current_command(), tags, force=args.force) as prefix:
            return _report(
                args,
                folder,
                sentences,
                built,
                shown,
                then=lambda: objstore.upload(built, prefix),
                shown_out=args.output,
            )


def _report(
    args: argparse.Namespace,
    folder_path: str,
    sentences_path: str | None,
    output: str | None,
    shown: str | None = None,
    then=None,
    shown_out: str | None = None,
) -> int:
    """The report of the local builder folder `folder_path` into the local folder `output`
    (default out/report/<builder>); `shown` names the folder in the report when it is a copy
    (its URL); `then()` runs once the folder is written, before the plots and the summary."""
    import jinja2
    import pyarrow.parquet as pq

    from alignment.calibration import estimate_line, filter_rule, find, model_folder, model_shown
    from medsimp import resources
    from medsimp.atomic import NOT_OURS, atomic_dir, atomic_file, check_file_target, write_json
    from medsimp.config import shown_path
    from medsimp.errors import InputError, UsageError
    from medsimp.lineage import is_restricted, read_lineage
    from medsimp.report import data as report
    from medsimp.report.markdown import markdown
    from medsimp.stats import print_summary

    start = time.perf_counter()
    folder = Path(folder_path)
    card = report.read_card(folder)
    meta = card.get("medsimp") or {}
    builder = str(meta.get("builder") or folder.name)
    try:
        stats = json.loads((folder / "stats.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputError(f"{folder}: no readable stats.json") from None
    lineage = read_lineage(folder)
    restricted = bool(meta.get("mimic_derived", True)) or is_restricted(lineage)
    rp = args.params_data.annotate.report
    # the filter the corpus went through, as the card records it; a card without it (built
    # before 2026-12-06) is read with today's params, and the report says so once
    recorded: dict = meta["filter.recorded"] if isinstance(meta.get("filter.recorded"), dict) else {}
    flt = args.params_data.filter
    threshold = float(recorded.get("threshold", flt.threshold))
    copy_overlap = float(recorded.get("copy_overlap", flt.copy_overlap))
    if meta.get("aligner.model") and not recorded:
        print(
            "warning: the card does not record the filter the corpus went through: overlap r and copies are "
            "described with today's params filter section (rebuild the corpus to record it)",
            file=sys.stderr,
        )
    syll = args.params_data.readability.syllable_languages
    sentences = None
    if sentences_path:
        try:
            sentences = pq.read_table(
                sentences_path, columns=["sentence_id", "doc_id", "side", "language"]
            ).to_pylist()
        except (OSError, ValueError, KeyError):
            raise InputError(f"{sentences_path}: not a sentence table") from None
    # the aligner's calibration beside the model the card names, found by what decides its
    # scores (alignment.calibration): the kept rows' expected precision, or why there is none
    estimator = None
    if meta.get("aligner.model"):
        found, why = find(
            model_folder(str(meta["aligner.model"]), args.params_dir),
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

    configs: dict[str, dict] = {}
    splits: dict[str, dict[str, int]] = {}
    images: dict[str, str] = {}
    pngs: dict[str, bytes] = {}
    for cfg in card.get("configs") or []:
        name = report.config_name(cfg, folder)
        rows = []
        splits[name] = {}
        for f in cfg.get("data_files") or []:
            try:
                table = pq.read_table(folder / f["path"])
            except (OSError, ValueError):
                raise InputError(f"{folder / f['path']}: cannot read") from None
            splits[name][f["split"]] = table.num_rows
            rows += table.to_pylist()
        show_text = args.show_restricted or not restricted
        st = report.config_stats(
            rows,
            sentences,
            threshold,
            syll,
            rp.top_semtypes,
            rp,
            show_text,
            estimator,
            copy_overlap,
        )
        st["examples"] = report.examples(rows, rp.examples) if show_text else []
        st["vocabulary"] = str(meta.get("umls.vocabulary") or "")  # a demo one is said on the chart
        pngs[name] = report.figure_png(f"{builder} / {name}", st, rp.bins)
        images[name] = report.png_data_uri(pngs[name])
        configs[name] = st
    split_names = sorted(
        {s for v in splits.values() for s in v},
        key=lambda s: (["train", "validation", "test"] + [s]).index(s),
    )
    counts = {k: v for k, v in stats.items() if not isinstance(v, (dict, list))}
    data = {
        "builder": builder,
        "folder": shown or shown_path(folder, args.params_dir),  # not as typed: the same from any folder
        "lineage": list(lineage) if lineage else None,
        "restricted": restricted,
        "show_text": args.show_restricted or not restricted,
        "counts": counts,
        "splits": splits,
        "split_names": split_names,
        "configs": report.public(configs),
        "issues": report.issues(configs),
    }
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.globals["percent"] = report.percent
    template = resources.path("report/report.html.j2")
    html = env.from_string(template.read_text(encoding="utf-8")).render(
        r={**data, "images": images},
        semtype_tables={c: report.semtype_table(st["semtypes"]) for c, st in configs.items()},
    )
    out = output or f"out/report/{report.plain_name(builder, folder, 'builder')}"
    plots = {name: Path(args.plots) / f"{name}.png" for name in pngs} if args.plots else {}
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
    seconds = time.perf_counter() - start
    print_summary(
        f"medsimp report {builder}",
        {"configs": len(configs), "html_bytes": len(html.encode("utf-8")), "seconds": round(seconds, 2)},
    )
    print(f"wrote {shown_out + '/index.html' if shown_out else Path(out) / 'index.html'}", file=sys.stderr)
    return 0
