"""PNG plots a person would look at: stacked preference votes and score distributions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from medsimp.humaneval.ingest import Answer


def _legend_outside(ax, **kwargs) -> None:
    """The legend right of the axes, where it cannot cover a bar."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kwargs)


def vote_bars(rows: list[dict[str, Any]], path: Path) -> None:
    """Stacked bars per system: most-preferred votes over least-preferred votes."""
    fig = vote_figure(rows)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)


def vote_figure(rows: list[dict[str, Any]]):
    """The figure `vote_bars` saves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = [r["system"] for r in rows]
    most = [r["most_votes"] for r in rows]
    least = [r["least_votes"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(systems, most, label="most preferred (Q5)", color="#4a8")
    ax.bar(systems, least, bottom=most, label="least preferred (Q6)", color="#c64")
    ax.set_ylabel("votes")
    ax.set_title("Layperson preference votes")
    _legend_outside(ax, fontsize=8)
    fig.tight_layout()
    return fig


def score_distributions(answers: list[Answer], form: str, systems: list[str], path: Path) -> list[dict]:
    """One panel per scale question of `form`: stacked share of each score per system.
    Returns the plotted counts (for DVC plots data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    questions = sorted(
        {a.question for a in answers if a.form == form and a.system and isinstance(a.value, int)}
    )
    data = []
    fig, axes = plt.subplots(
        1, max(1, len(questions)), figsize=(3.2 * max(1, len(questions)), 3.5), squeeze=False
    )
    for ax, q in zip(axes[0], questions):
        counts = {
            s: Counter(a.value for a in answers if a.form == form and a.question == q and a.system == s)
            for s in systems
        }
        scores = sorted({v for c in counts.values() for v in c})
        bottom = [0.0] * len(systems)
        for score in scores:
            share = [counts[s][score] / max(1, sum(counts[s].values())) for s in systems]
            ax.bar(systems, share, bottom=bottom, label=str(score))
            bottom = [b + x for b, x in zip(bottom, share)]
            data += [
                {"form": form, "question": q, "system": s, "score": score, "count": counts[s][score]}
                for s in systems
            ]
        ax.set_title(q)
        ax.tick_params(axis="x", rotation=45)
        _legend_outside(ax, title="score", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return data
