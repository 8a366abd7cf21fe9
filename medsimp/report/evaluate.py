"""The self-contained HTML report of `medsimp evaluate files --hyp A --hyp B --report FILE`: a jinja2
template (`medsimp/resources/report/evaluate.html.j2`, inline SVG, no scripts) filled here. The
paired bootstrap is `medsimp.metrics.significance`.
"""

from __future__ import annotations

from medsimp.metrics import direction
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

    from medsimp import resources

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
