"""Data report of a builder folder (docs/annotate.md): `<output>/index.html` (self-contained),
`report.md`, `report.json`, and one PNG per config in --plots (DVC plots):
    medsimp report builders/multicochrane --sentences out/cochrane/sentences --output out/report/multicochrane --plots plots/report/multicochrane
MIMIC-derived builders show no text unless --show-restricted (then under a do-not-share banner).
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
    parser.add_argument("folder", help="builder folder, e.g. builders/multicochrane")
    parser.add_argument(
        "--sentences",
        help="sentence table of a pair builder (deletion and "
        "elaboration ratios), e.g. out/cochrane/sentences",
    )
    parser.add_argument("--output", help="report folder (default: out/report/<builder>)")
    parser.add_argument("--plots", help="folder for the PNG plots (DVC plots)")
    parser.add_argument(
        "--show-restricted",
        action="store_true",
        help="show example text of a MIMIC-derived builder (do-not-share banner)",
    )


def _cell(value) -> str:
    return "-" if value is None else str(value)


def _pct(share) -> str:
    from medsimp.report.data import percent

    return percent(share)


def _md_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _identical(same: dict | None) -> str:
    return "-" if same is None else f"{same['n']} ({_pct(same['share'])})"


def _shape_rows(r: dict) -> list[str]:
    """The first screen: one row per config with the text's shape and its outlier count."""
    lines = [
        "| config | rows | documents | pairs | sentences (complex / simple) | languages "
        "| tokens/sentence median (complex / simple) | FKGL median (complex / simple) "
        "| identical pairs | outliers |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c, st in r["configs"].items():
        sh, sd = st["shape"], st["sides"]
        same = st["identical"]
        lines.append(
            f"| {c} | {st['rows']} | {_cell(sh['documents'])} | {_cell(sh['pairs'])} "
            f"| {sh['sentences']['complex']} / {sh['sentences']['simple']} "
            f"| {', '.join(sh['languages']['complex']) or '-'} / {', '.join(sh['languages']['simple']) or '-'} "
            f"| {_cell(sd['complex']['length']['median'])} / {_cell(sd['simple']['length']['median'])} "
            f"| {_cell(sd['complex']['fkgl']['median'])} / {_cell(sd['simple']['fkgl']['median'])} "
            f"| {_identical(same)} "
            f"| {sum(o['n'] for o in st['outliers'])} |"
        )
    return lines


def _markdown(r: dict) -> str:
    lines = [f"# Data report: {r['builder']}", ""]
    if r["restricted"]:
        lines += ["**MIMIC-derived data (PhysioNet credentialed access): do not share.**", ""]
    lines += ["## At a glance", "", *_shape_rows(r), ""]
    if r["issues"]:
        lines += ["Top issues:", ""]
        lines += [
            f"- {i['config']}: {i['n']} {i['label']} ({i['side']}; {_pct(i['share'])} of {i['of']})"
            for i in r["issues"]
        ]
    else:
        lines.append("Top issues: none found.")
    lines += ["", "## Rows per config and split", ""]
    lines += ["| config | " + " | ".join(r["split_names"]) + " |", "|---|" + "---|" * len(r["split_names"])]
    lines += [
        f"| {c} | " + " | ".join(str(s.get(n, "")) for n in r["split_names"]) + " |"
        for c, s in r["splits"].items()
    ]
    for c, st in r["configs"].items():
        lines += [
            "",
            f"## {c}",
            "",
            "| side | units | tokens/sentence (mean, median) | FKGL (mean, median) |",
            "|---|---|---|---|",
        ]
        for side, s in st["sides"].items():
            lines.append(
                f"| {side} | {s['units']} | {s['length']['mean']}, {s['length']['median']} | "
                f"{s['fkgl']['mean']}, {s['fkgl']['median']} |"
            )
        for what, h in st["histograms"].items():
            if h and h["clipped"]:
                lines.append(
                    f"\nThe {what} histogram shows {h['range'][0]:g}..{h['range'][1]:g}: "
                    f"{h['clipped']} of {h['n']} values outside it are not drawn."
                )
        lines += ["", "| outlier | side | count | share | max | examples |", "|---|---|---|---|---|---|"]
        for o in st["outliers"]:
            shown = "; ".join(
                _md_text(e["text"]) if "text" in e else f"{_md_text(e['complex'])} => {_md_text(e['simple'])}"
                for e in o["examples"]
            )
            lines.append(
                f"| {o['label']} | {o['side']} | {o['n']} | {_pct(o['share'])} | {_cell(o['max'])} "
                f"| {shown or '-'} |"
            )
        same = st["identical"]
        if same is not None:
            lines.append(
                f"\nPairs whose two sides are identical: {same['n']} of {same['of']} ({_pct(same['share'])})."
            )
            lines += [f"- {_md_text(e['complex'])}" for e in same["examples"]]
        copies = st["copies"]
        if copies is not None:
            flag = "**Mostly copies:** " if copies["mostly"] else ""
            lines.append(
                f"\n{flag}Near copies (each side's words at least {_pct(copies['overlap'])} in the other): "
                f"{copies['n']} of {copies['of']} ({_pct(copies['share'])})."
            )
            lines += [f"- {_md_text(e['complex'])} => {_md_text(e['simple'])}" for e in copies["examples"]]
        lowest = st["lowest"]
        if lowest is not None:
            lines.append(
                f"\nLowest CRF probability first ({len(lowest['pairs'])} of {lowest['of']} scored pairs):"
            )
            lines += [
                f"1. {e['score']}"
                + (f": {_md_text(e['complex'])} => {_md_text(e['simple'])}" if "complex" in e else "")
                for e in lowest["pairs"]
            ]
        types = ", ".join(f"{t}: {n}" for t, n in st["alignment_types"].items()) or "-"
        ratios = {
            k: "-" if st[k] is None else st[k]
            for k in ("deletions", "insertions", "deletion_ratio", "elaboration_ratio")
        }
        lines += [
            "",
            (
                f"Alignment types: {types}; deletions {ratios['deletions']}, insertions "
                f"{ratios['insertions']}, deletion ratio {ratios['deletion_ratio']}, "
                f"elaboration ratio {ratios['elaboration_ratio']}."
            ),
        ]
        if st["overlap_r"]:
            o = st["overlap_r"]
            lines.append(f"Overlap r: mean {o['mean']}, {o['above']} of {o['n']} above {o['threshold']}.")
        if st.get("filter"):
            lines.append(f"Overlap filter decisions (`keep`, every split): {st['filter']['text']}.")
        if st.get("precision"):
            lines.append(f"Aligner (English CRF rows): {st['precision']['text']}.")
        for side, top in st["semtypes"].items():
            lines.append(
                f"Top semantic types ({side}): "
                + ", ".join(f"{t['name']} {t['tui']} ({t['n']})" for t in top)
                + "."
            )
        if r["show_text"]:
            lines += ["", "| complex | simple |", "|---|---|"]
            lines += [f"| {_md_text(e['complex'])} | {_md_text(e['simple'])} |" for e in st["examples"]]
    lines += ["", "## All counts (stats.json)", "", "| count | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in r["counts"].items()]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    import jinja2
    import pyarrow.parquet as pq

    from alignment.calibration import heldout
    from medsimp import resources
    from medsimp.atomic import NOT_OURS, atomic_dir, atomic_file, check_file_target, write_json
    from medsimp.config import shown_path
    from medsimp.errors import InputError, UsageError
    from medsimp.lineage import is_restricted, read_lineage
    from medsimp.report import data as report
    from medsimp.stats import print_summary

    start = time.perf_counter()
    folder = Path(args.folder)
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
    threshold = float(args.params_data.filter.threshold)
    syll = args.params_data.readability.syllable_languages
    sentences = None
    if args.sentences:
        try:
            sentences = pq.read_table(
                args.sentences, columns=["sentence_id", "doc_id", "side", "language"]
            ).to_pylist()
        except (OSError, ValueError, KeyError):
            raise InputError(f"{args.sentences}: not a sentence table") from None
    # the aligner's calibration, when the one the card names was measured (alignment.calibration)
    calibration = (heldout(str(meta.get("aligner.model") or "")) or {}).get("calibration")
    if calibration is not None and calibration.merge != args.params_data.align.crf.merge:
        calibration = None  # fitted on rows of another direction merge: no estimate
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
            rows, sentences, threshold, syll, rp.top_semtypes, rp, show_text, calibration
        )
        st["examples"] = report.examples(rows, rp.examples) if show_text else []
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
        "folder": shown_path(folder, args.params_dir),  # not as typed: the same from any folder
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
    out = args.output or f"out/report/{report.plain_name(builder, folder, 'builder')}"
    plots = {name: Path(args.plots) / f"{name}.png" for name in pngs} if args.plots else {}
    for name, target in plots.items():  # a PNG medsimp did not write: refused before any write
        if check_file_target(target, same_content_ok=True) and target.read_bytes() != pngs[name]:
            raise UsageError(f"{target} {NOT_OURS}")
    with atomic_dir(out, inputs=[folder], lineage=lineage or None) as tmp:
        (tmp / "index.html").write_text(html, encoding="utf-8")
        (tmp / "report.md").write_text(_markdown(data), encoding="utf-8")
        write_json(tmp / "report.json", data)
    for name, target in plots.items():
        with atomic_file(target, same_content_ok=True) as tmp:
            tmp.write_bytes(pngs[name])
    seconds = time.perf_counter() - start
    print_summary(
        f"medsimp report {builder}",
        {"configs": len(configs), "html_bytes": len(html.encode("utf-8")), "seconds": round(seconds, 2)},
    )
    print(f"wrote {Path(out) / 'index.html'}", file=sys.stderr)
    return 0
