"""report.md: a builder's data report (medsimp.report.data) as Markdown tables."""

from __future__ import annotations

from medsimp.report.data import percent


def _cell(value) -> str:
    return "-" if value is None else str(value)


def _pct(share) -> str:
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


def markdown(r: dict) -> str:
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
            lines.append(f"Aligner (kept English CRF rows): {st['precision']['text']}.")
        if st["semtypes"] and str(st.get("vocabulary") or "").startswith("demo"):
            lines.append(f"Semantic types below come from a {st['vocabulary']}.")
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
