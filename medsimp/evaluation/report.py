"""The self-contained HTML report of `medsimp evaluate files --hyp A --hyp B --report FILE`: a jinja2
template (`medsimp/resources/report/evaluate.html.j2`, inline SVG, no scripts) filled here. The
paired bootstrap is `medsimp.metrics.significance`.
"""

from __future__ import annotations

import json
import os
import sys

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from medsimp import resources
from medsimp.atomic import is_stdout, write_json, write_text
from medsimp.evaluation.scorer import SCALES
from medsimp.metrics import direction, metric_of
from medsimp.metrics.significance import format_p


def best(systems: dict[str, dict], metric: str) -> set[str]:
    """The systems with the best value of `metric` (higher or lower is better); none if neither."""
    values = {s: v for s, v in ((s, r.get(metric)) for s, r in systems.items()) if v is not None}
    way = direction(metric)
    if not values or way is None:
        return set()
    target = max(values.values()) if way == "higher" else min(values.values())
    return {s for s, v in values.items() if v == target}


COLOURS = ["#4a7ab5", "#d9822b", "#3c9d5d", "#b54a7a", "#7a4ab5", "#888888"]


def _chart(title: str, values: dict[str, float]) -> dict:
    """One horizontal bar chart: bar widths scaled to the largest |value| (300 px)."""
    top = max([abs(v) for v in values.values()] + [1e-12])
    return {
        "title": title,
        "bars": [{"name": n, "width": 300 * abs(v) / top, "label": f"{v:g}"} for n, v in values.items()],
    }


def _bucket_plot(buckets: dict[str, list[dict]], key: str = "ascore") -> dict:
    """Grouped bars of `key` per source-length bucket, one colour per system."""
    labels = sorted(
        {r["bucket"] for rows in buckets.values() for r in rows},
        key=lambda s: int(s.split("-")[0].rstrip("+")),
    )
    names = list(buckets)
    group = 20 * len(names) + 20
    groups = []
    for gi, label in enumerate(labels):
        x0 = 40 + gi * group
        bars = []
        for si, name in enumerate(names):
            v = next((r.get(key) for r in buckets[name] if r["bucket"] == label), None) or 0.0
            bars.append(
                {
                    "x": x0 + 20 * si,
                    "value": v,
                    "label": f"{v:g}",
                    "name": name,
                    "colour": COLOURS[si % len(COLOURS)],
                }
            )
        groups.append({"x": x0, "label": label, "bars": bars})
    return {
        "key": key,
        "width": max(60 + group * len(labels), 300),
        "legend": [{"name": n, "colour": COLOURS[i % len(COLOURS)]} for i, n in enumerate(names)],
        "groups": groups,
    }


def render(
    systems: dict[str, dict],
    scales: dict[str, str],
    signature: dict[str, str],
    bootstrap: dict[str, dict],
    buckets: dict[str, list[dict]],
    sample: list[dict] | None,
) -> str:
    """The HTML report (`medsimp/resources/report/evaluate.html.j2`, autoescaped). `systems`: name
    -> flat scores; `sample`: rows {source, references, outputs: {name: text}} or None (text left
    out: evaluation text may be MIMIC-derived)."""
    import jinja2

    metrics = [
        m
        for m in dict.fromkeys(k for r in systems.values() for k in r)
        if any(r.get(m) is not None for r in systems.values())
    ]
    rows = [
        {
            "name": name,
            "cells": [
                {"value": "" if r.get(m) is None else f"{r[m]:g}", "best": name in best(systems, m)}
                for m in metrics
            ],
        }
        for name, r in systems.items()
    ]
    charts = [
        _chart(f"{m} ({scales.get(m, '')})", {n: r[m] for n, r in systems.items() if r.get(m) is not None})
        for m in metrics
    ]
    boot = [
        {
            "pair": pair,
            "metric": m,
            "delta": f"{v['delta']:g}",
            "p": format_p(v["p_value"]),
            "ci_low": f"{v['ci_low']:g}",
            "ci_high": f"{v['ci_high']:g}",
            "wilcoxon": format_p(v["wilcoxon_p"]),
        }
        for pair, res in bootstrap.items()
        for m, v in res.items()
    ]
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.from_string(resources.path("report/evaluate.html.j2").read_text(encoding="utf-8"))
    return template.render(
        systems=systems,
        metrics=metrics,
        scales=scales,
        rows=rows,
        boot=boot,
        charts=charts,
        buckets=_bucket_plot(buckets) if buckets else None,
        sample=sample,
        names=list(systems),
        signature=signature,
    )


def _console(file):
    """A rich console as wide as the terminal: `COLUMNS` when set, else the terminal's width
    (80 when not a terminal)."""
    width = None
    if os.environ.get("COLUMNS", "").isdigit():
        width = int(os.environ["COLUMNS"])
    elif not file.isatty():
        width = 80
    return Console(file=file, width=width, highlight=False, soft_wrap=False)


def print_table(title: str, systems: dict[str, dict], file, flagged: set[str] | None = None) -> None:
    """One row per reported value (named with its scale), one column per system in the order
    given; cells never wrap (the metric name folds when the terminal is narrow). A value of a
    `flagged` metric (computed across languages on request) is labelled `[cross-lingual]`."""
    keys = list(dict.fromkeys(k for scores in systems.values() for k in scores))
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), show_edge=False)
    table.add_column("metric (scale)", overflow="fold", ratio=1)
    for name in systems:
        table.add_column(name, justify="right", no_wrap=True, overflow="ellipsis")
    for key in keys:
        label = f"{key} ({SCALES[key]})" if key in SCALES else key
        metric = metric_of(key)
        if flagged and metric is not None and metric.name in flagged:
            label += " [cross-lingual]"
        table.add_row(escape(label), *(_cell(scores.get(key)) for scores in systems.values()))
    _console(file).print(table)


def print_bootstrap(bootstrap: dict, file) -> None:
    """The paired bootstrap per pair and metric (p-values below 0.001 as `< 0.001`)."""
    table = Table(
        title="paired bootstrap (B - A)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        show_edge=False,
    )
    for col in ("pair", "metric", "delta", "p", "95% CI", "Wilcoxon p"):
        table.add_column(col, justify="left" if col in ("pair", "metric") else "right", overflow="fold")
    for pair, res in bootstrap.items():
        for m, v in res.items():
            table.add_row(
                pair,
                m,
                f"{v['delta']:g}",
                format_p(v["p_value"]),
                f"[{v['ci_low']:g}, {v['ci_high']:g}]",
                format_p(v["wilcoxon_p"]),
            )
    _console(file).print(table)


def print_results(title: str, scored, bootstrap: dict, not_tested: dict, scorer, file) -> None:
    """`evaluate files`' console: the table (`title`, the language tag when set), the paired
    bootstrap, then on stderr the notes (metrics left out of the bootstrap, signatures, measures
    not computed, cross-lingual values)."""
    if scorer.lang_tag:
        title = f"{title[:-1]}, {scorer.lang_tag})"
    systems = {n: {**r.scores, **r.extra.get("measures", {})} for n, r in scored.results.items()}
    print_table(title, systems, file, set(scorer.flagged))
    if bootstrap:
        print_bootstrap(bootstrap, file)
    for pair, skipped in not_tested.items():
        for metric, why in skipped.items():
            print(f"note: {metric} not in the paired bootstrap ({pair}): {why}", file=sys.stderr)
    for name, r in scored.results.items():
        print(f"signature{'' if len(scored.results) == 1 else ' ' + name}: {r.signature}", file=sys.stderr)
    by_reason: dict[str, list[str]] = {}  # one note per reason (nine measures need sources)
    for measure, why in scorer.unavailable.items():
        by_reason.setdefault(why, []).append(measure)
    for why, names in by_reason.items():
        print(f"note: {', '.join(names)} not computed (null): {why}", file=sys.stderr)
    for measure, why in scorer.flagged.items():
        print(f"note: {measure} (cross-lingual): {why}", file=sys.stderr)


def write_out(path: str, content: str | dict) -> None:
    """Text, or a dict as JSON, to `path` atomically, or to standard output for `-`."""
    if is_stdout(path):
        text = content if isinstance(content, str) else json.dumps(content, indent=2, sort_keys=True) + "\n"
        sys.stdout.write(text)
        sys.stdout.flush()
    elif isinstance(content, str):
        write_text(path, content)
    else:
        write_json(path, content)


def _cell(value) -> str:
    return "null" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def write_report(
    path: str, results: dict, bootstrap: dict, items, hyp_lists: dict, with_text: bool = False
) -> None:
    """The self-contained HTML report at `path`; output text only `with_text` (--report-text: the
    outputs may be MIMIC-derived)."""
    sample = None
    if with_text:
        sample = [
            {
                "source": it.source,
                "references": it.references,
                "outputs": {n: h[i] for n, h in hyp_lists.items()},
            }
            for i, it in enumerate(items[:20])
        ]
    systems = {n: {**r.scores, **r.extra.get("measures", {})} for n, r in results.items()}
    buckets = {n: r.extra["length_buckets"] for n, r in results.items() if "length_buckets" in r.extra}
    write_text(
        path,
        render(systems, SCALES, {n: r.signature for n, r in results.items()}, bootstrap, buckets, sample),
    )
