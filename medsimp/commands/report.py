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

HELP = "data report of a builder: counts, lengths, FKGL, overlap r, alignment types, semantic types"


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


def _markdown(r: dict) -> str:
    lines = [f"# Data report: {r['builder']}", ""]
    if r["restricted"]:
        lines += ["**MIMIC-derived data (PhysioNet credentialed access): do not share.**", ""]
    lines += ["| count | value |", "|---|---|", *[f"| {k} | {v} |" for k, v in r["counts"].items()], ""]
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
        for side, top in st["semtypes"].items():
            lines.append(f"Top semantic types ({side}): " + ", ".join(f"{t} ({n})" for t, n in top) + ".")
        if r["show_text"]:
            lines += ["", "| complex | simple |", "|---|---|"]
            lines += [
                "| "
                + e["complex"].replace("|", "\\|").replace("\n", " ")
                + " | "
                + e["simple"].replace("|", "\\|").replace("\n", " ")
                + " |"
                for e in st["examples"]
            ]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    import jinja2
    import pyarrow.parquet as pq

    from medsimp import report, resources
    from medsimp.config import section
    from medsimp.errors import InputError
    from medsimp.lineage import is_restricted, read_lineage
    from medsimp.outputs import atomic_dir, print_summary, write_json
    from medsimp.params_schema import default

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
    ap = section(args.params_data, "annotate").get("report", {})
    rp = {k: ap.get(k, default(f"annotate.report.{k}")) for k in ("examples", "bins", "top_semtypes")}
    fp = section(args.params_data, "filter")
    threshold = float(fp.get("threshold", default("filter.threshold")))
    syll = section(args.params_data, "readability").get(
        "syllable_languages", default("readability.syllable_languages")
    )
    sentences = None
    if args.sentences:
        try:
            sentences = pq.read_table(
                args.sentences, columns=["sentence_id", "doc_id", "side", "language"]
            ).to_pylist()
        except (OSError, ValueError, KeyError):
            raise InputError(f"{args.sentences}: not a sentence table") from None
    configs: dict[str, dict] = {}
    splits: dict[str, dict[str, int]] = {}
    images: dict[str, str] = {}
    pngs: dict[str, bytes] = {}
    for cfg in card.get("configs") or []:
        name = str(cfg["config_name"])
        rows = []
        splits[name] = {}
        for f in cfg.get("data_files") or []:
            try:
                table = pq.read_table(folder / f["path"])
            except (OSError, ValueError):
                raise InputError(f"{folder / f['path']}: cannot read") from None
            splits[name][f["split"]] = table.num_rows
            rows += table.to_pylist()
        st = report.config_stats(rows, sentences, threshold, syll, int(rp["top_semtypes"]))
        st["examples"] = (
            report.examples(rows, int(rp["examples"])) if (args.show_restricted or not restricted) else []
        )
        pngs[name] = report.figure_png(f"{builder} / {name}", st, int(rp["bins"]))
        images[name] = report.png_data_uri(pngs[name])
        configs[name] = st
    split_names = sorted(
        {s for v in splits.values() for s in v},
        key=lambda s: (["train", "validation", "test"] + [s]).index(s),
    )
    counts = {k: v for k, v in stats.items() if not isinstance(v, (dict, list))}
    data = {
        "builder": builder,
        "folder": str(folder),
        "lineage": list(lineage) if lineage else None,
        "restricted": restricted,
        "show_text": args.show_restricted or not restricted,
        "counts": counts,
        "splits": splits,
        "split_names": split_names,
        "configs": report.public(configs),
    }
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = resources.path("report/report.html.j2")
    html = env.from_string(template.read_text(encoding="utf-8")).render(r={**data, "images": images})
    out = args.output or f"out/report/{builder}"
    with atomic_dir(out, inputs=[folder], lineage=lineage or None) as tmp:
        (tmp / "index.html").write_text(html, encoding="utf-8")
        (tmp / "report.md").write_text(_markdown(data), encoding="utf-8")
        write_json(tmp / "report.json", data)
    if args.plots:
        plots = Path(args.plots)
        plots.mkdir(parents=True, exist_ok=True)
        for name, png in pngs.items():
            (plots / f"{name}.png").write_bytes(png)
    seconds = time.perf_counter() - start
    print_summary(
        f"medsimp report {builder}",
        {"configs": len(configs), "html_bytes": len(html.encode("utf-8")), "seconds": round(seconds, 2)},
    )
    print(f"wrote {Path(out) / 'index.html'}", file=sys.stderr)
    return 0
