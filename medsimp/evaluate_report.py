"""Multi-system comparison for `medsimp evaluate --hyp A --hyp B`: paired bootstrap resampling
for BLEU and SARI differences, and a self-contained HTML report (inline SVG, no scripts).

Paired bootstrap (Koehn 2004, as sacrebleu's `--paired-bs`): `samples` resamplings of the
sentence indices with replacement (seeded); per resampling, the difference B - A of corpus
BLEU (from summed sufficient statistics) and of mean sentence SARI. The p-value is two-sided
on the mean-centred differences: (1 + #{|d_s - mean(d)| >= |d_obs|}) / (samples + 1), so two
identical systems get p = 1; the 95% interval is the 2.5 / 97.5 percentiles of d_s.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

HIGHER = (
    "bleu",
    "bleu_1",
    "bleu_2",
    "bleu_3",
    "bleu_4",
    "meteor",
    "rouge_1",
    "rouge_2",
    "rouge_l",
    "cider",
    "sari",
    "bertscore_f1",
    "hit",
    "cwr",
    "ascore",
)
LOWER = ("fkgl",)


def sentence_stats(hyps: Sequence[str], items) -> tuple[np.ndarray, np.ndarray | None]:
    """Per sentence: BLEU sufficient statistics (default mode tokens) and SARI (None without sources)."""
    from medsimp.training import metrics as M
    from medsimp.training.scoring import expand, tokenize

    h_tok = [tokenize(h) for h in hyps]
    r_tok = [[tokenize(expand(r)) for r in it.references] for it in items]
    bleu = np.array([M.bleu_stats(h, rs) for h, rs in zip(h_tok, r_tok)], dtype=float)
    if any(it.source is None for it in items):
        return bleu, None
    sari = np.array(
        [M.sari_sentence(tokenize(it.source), h, rs)["sari"] * 100 for it, h, rs in zip(items, h_tok, r_tok)]
    )
    return bleu, sari


def _bleu(stats: np.ndarray) -> float:
    from medsimp.training.metrics import bleu_from_stats

    return sum(bleu_from_stats(list(stats))) / 4


def paired_bootstrap(
    a: tuple[np.ndarray, np.ndarray | None],
    b: tuple[np.ndarray, np.ndarray | None],
    samples: int = 1000,
    seed: int = 12345,
) -> dict[str, dict[str, float]]:
    """{metric: {delta, p_value, ci_low, ci_high, wilcoxon_p}} for BLEU (mean of BLEU-1..4, 0-1) and
    SARI (0-100), B - A; `wilcoxon_p`: the two-sided Wilcoxon signed-rank test (PLABA's) on the
    per-sentence scores (sentence BLEU from each row's statistics)."""
    n = len(a[0])
    idx = np.random.default_rng(seed).integers(0, n, size=(samples, n))
    out = {}
    metrics: dict[str, tuple] = {"bleu": (a[0], b[0], _bleu)}
    if a[1] is not None and b[1] is not None:
        metrics["sari"] = (a[1], b[1], lambda x: float(x.mean()))
    for name, (xa, xb, fn) in metrics.items():
        observed = fn(xb.sum(axis=0) if name == "bleu" else xb) - fn(xa.sum(axis=0) if name == "bleu" else xa)
        if name == "bleu":
            diffs = np.array([fn(xb[i].sum(axis=0)) - fn(xa[i].sum(axis=0)) for i in idx])
        else:
            diffs = xb[idx].mean(axis=1) - xa[idx].mean(axis=1)
        extreme = int(np.sum(np.abs(diffs - diffs.mean()) >= abs(observed) - 1e-12))
        out[name] = {
            "delta": round(float(observed), 6),
            "p_value": round((extreme + 1) / (samples + 1), 6),
            "ci_low": round(float(np.percentile(diffs, 2.5)), 6),
            "ci_high": round(float(np.percentile(diffs, 97.5)), 6),
            "wilcoxon_p": wilcoxon_p(_per_sentence(xa, name), _per_sentence(xb, name)),
        }
    return out


def _per_sentence(x: np.ndarray, name: str) -> np.ndarray:
    return np.array([_bleu(row) for row in x]) if name == "bleu" else x


def wilcoxon_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired scores (scipy, zero differences dropped);
    1.0 when every pair is tied."""
    from scipy.stats import wilcoxon

    if np.all(a == b):
        return 1.0
    return round(float(wilcoxon(b, a).pvalue), 6)


def best(systems: dict[str, dict], metric: str) -> set[str]:
    """The systems with the best value of `metric` (higher or lower is better); none if neither."""
    values = {s: v for s, v in ((s, r.get(metric)) for s, r in systems.items()) if v is not None}
    if not values or metric not in HIGHER + LOWER:
        return set()
    target = max(values.values()) if metric in HIGHER else min(values.values())
    return {s for s, v in values.items() if v == target}


def _bars(title: str, values: dict[str, float]) -> str:
    """One horizontal SVG bar chart."""
    top = max([abs(v) for v in values.values()] + [1e-12])
    rows = []
    for i, (name, v) in enumerate(values.items()):
        width = 300 * abs(v) / top
        rows.append(
            f'<text x="0" y="{20 * i + 34}">{html.escape(name)}</text>'
            f'<rect x="120" y="{20 * i + 22}" width="{width:.1f}" height="14" fill="#4a7ab5"/>'
            f'<text x="{125 + width:.1f}" y="{20 * i + 34}">{v:g}</text>'
        )
    h = 20 * len(values) + 30
    return (
        f'<svg class="chart" width="520" height="{h}" role="img" aria-label="{html.escape(title)}">'
        f'<text x="0" y="14" font-weight="bold">{html.escape(title)}</text>{"".join(rows)}</svg>'
    )


def _bucket_plot(buckets: dict[str, list[dict]], key: str = "ascore") -> str:
    """Grouped bars of `key` per source-length bucket, one colour per system."""
    colours = ["#4a7ab5", "#d9822b", "#3c9d5d", "#b54a7a", "#7a4ab5", "#888888"]
    labels = sorted(
        {r["bucket"] for rows in buckets.values() for r in rows},
        key=lambda s: int(s.split("-")[0].rstrip("+")),
    )
    names = list(buckets)
    group = 20 * len(names) + 20
    parts = []
    for gi, label in enumerate(labels):
        x0 = 40 + gi * group
        parts.append(f'<text x="{x0}" y="220">{html.escape(label)}</text>')
        for si, name in enumerate(names):
            v = next((r.get(key) for r in buckets[name] if r["bucket"] == label), None) or 0.0
            parts.append(
                f'<rect x="{x0 + 20 * si}" y="{200 - 180 * v:.1f}" width="16" height="{180 * v:.1f}" '
                f'fill="{colours[si % len(colours)]}"><title>{html.escape(name)} {label}: {v:g}</title></rect>'
            )
    legend = "".join(
        f'<tspan fill="{colours[i % len(colours)]}">&#9632; {html.escape(n)} </tspan>'
        for i, n in enumerate(names)
    )
    width = 60 + group * len(labels)
    return (
        f'<svg class="chart buckets" width="{max(width, 300)}" height="250" role="img" '
        f'aria-label="{key} per source-length bucket"><text x="0" y="14">{key} (0-1) per source length '
        f'(tokens)</text><text x="0" y="245">{legend}</text>{"".join(parts)}</svg>'
    )


def render(
    systems: dict[str, dict],
    scales: dict[str, str],
    signature: dict[str, str],
    bootstrap: dict[str, dict],
    buckets: dict[str, list[dict]],
    sample: list[dict] | None,
) -> str:
    """The HTML report. `systems`: name -> flat scores; `sample`: rows {source, references,
    outputs: {name: text}} or None (text left out: evaluation text may be MIMIC-derived)."""
    e = html.escape
    metrics = [
        m
        for m in dict.fromkeys(k for r in systems.values() for k in r)
        if any(r.get(m) is not None for r in systems.values())
    ]
    head = "".join(f"<th>{e(m)}<br><small>{e(scales.get(m, ''))}</small></th>" for m in metrics)
    rows = []
    for name, r in systems.items():
        cells = []
        for m in metrics:
            v = r.get(m)
            mark = name in best(systems, m)
            cells.append(
                f'<td class="{"best" if mark else ""}">{"" if v is None else f"{v:g}"}{" ★" if mark else ""}</td>'
            )
        rows.append(f'<tr class="system"><th>{e(name)}</th>{"".join(cells)}</tr>')
    charts = "".join(
        _bars(f"{m} ({scales.get(m, '')})", {n: r[m] for n, r in systems.items() if r.get(m) is not None})
        for m in metrics
    )
    boot = "".join(
        f"<tr><td>{e(pair)}</td><td>{e(m)}</td><td>{v['delta']:g}</td><td>{v['p_value']:g}</td>"
        f"<td>[{v['ci_low']:g}, {v['ci_high']:g}]</td><td>{v['wilcoxon_p']:g}</td></tr>"
        for pair, res in bootstrap.items()
        for m, v in res.items()
    )
    sigs = "".join(f"<li><code>{e(n)}: {e(s)}</code></li>" for n, s in signature.items())
    if sample is None:
        sample_html = (
            "<p>Outputs are not shown: evaluation text may be MIMIC-derived. Pass "
            "<code>--report-text</code> to include a sample (the report must then not be shared).</p>"
        )
        banner = ""
    else:
        banner = (
            '<div class="banner">This report contains evaluation text that may be MIMIC-derived '
            "(PhysioNet credentialed data): do not share it.</div>"
        )
        names = list(systems)
        srows = "".join(
            "<tr><td>"
            + e(r["source"] or "")
            + "</td><td>"
            + "<br>".join(e(x) for x in r["references"])
            + "</td>"
            + "".join(f"<td>{e(r['outputs'][n])}</td>" for n in names)
            + "</tr>"
            for r in sample
        )
        sample_html = (
            f'<table class="sample"><tr><th>source</th><th>references</th>'
            f"{''.join(f'<th>{e(n)}</th>' for n in names)}</tr>{srows}</table>"
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>medsimp evaluate report</title>
<style>body{{font-family:sans-serif;margin:1em}}table{{border-collapse:collapse;margin:.5em 0}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}td.best{{font-weight:bold;background:#e6f2e6}}
.sample td{{text-align:left;vertical-align:top}}.banner{{background:#b00;color:#fff;padding:.5em;font-weight:bold}}
svg text{{font-size:12px}}</style></head><body>
{banner}<h1>medsimp evaluate: {len(systems)} systems</h1>
<h2>Scores</h2><table id="scores"><tr><th>system</th>{head}</tr>{"".join(rows)}</table>
<p>★ = best value in the column (higher is better; lower for fkgl; unmarked columns have no direction).</p>
<h2>Paired bootstrap (B - A)</h2><table id="bootstrap"><tr><th>pair</th><th>metric</th><th>delta</th>
<th>p-value</th><th>95% CI</th><th>Wilcoxon p</th></tr>{boot}</table>
<h2>Charts</h2>{charts}
<h2>Length buckets</h2>{_bucket_plot(buckets) if buckets else "<p>needs sources</p>"}
<h2>Sample outputs</h2>{sample_html}
<h2>Signatures</h2><ul>{sigs}</ul></body></html>
"""
