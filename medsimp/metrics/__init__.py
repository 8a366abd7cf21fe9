"""Simplification metrics: one module per family, one interface (`base.Metric`).

Every module of this package that defines a `Metric` subclass registers it on import;
`metrics()` imports them all and returns the registry in table order. Adding a metric is
adding (or editing) one module. `scoring` prepares the inputs and loops over the selected
metrics; docs/metrics.md describes each metric and its signature label.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Sequence

from medsimp.metrics.base import (
    REGISTRY,
    Inputs,
    MedlaneInputs,
    Metric,
    MetricUnavailable,
    NotComputable,
    ScoringOptions,
)

__all__ = [
    "Inputs",
    "MedlaneInputs",
    "Metric",
    "MetricUnavailable",
    "NotComputable",
    "ScoringOptions",
    "metrics",
    "names",
    "selection",
]

_NOT_FAMILIES = {"base", "scoring"}


@functools.cache
def metrics() -> dict[str, Metric]:
    """Every registered metric (name -> instance), in table order."""
    for info in pkgutil.iter_modules(__path__):
        if info.name not in _NOT_FAMILIES:
            importlib.import_module(f"{__name__}.{info.name}")
    return {name: cls() for name, cls in sorted(REGISTRY.items(), key=lambda kv: (kv[1].order, kv[0]))}


def names() -> tuple[str, ...]:
    """The selectable metric names, in table order."""
    return tuple(metrics())


def selection(select: Sequence[str] | None, language: str = "en", measures: bool = False) -> frozenset[str]:
    """The metrics to compute: `select` (None = all listed for the output `language`: a
    language's own readability formula only for it; the measures only by name) with what each
    one `requires` (AScore brings in MedLane's BLEU, HIT and CWR); `measures`: every measure
    too. An unknown name raises ValueError."""
    registry = metrics()
    listed = {
        n for n, m in registry.items() if not m.measure and (m.languages is None or language in m.languages)
    }
    chosen = set(listed if select is None else select)
    if measures:
        chosen |= {n for n, m in registry.items() if m.measure}
    unknown = sorted(chosen - set(registry))
    if unknown:
        raise ValueError(f"unknown metric(s) {', '.join(unknown)}; choose from {', '.join(registry)}")
    for name in list(chosen):
        chosen |= set(registry[name].requires)
    return frozenset(chosen)


def scales() -> dict[str, str]:
    """The declared scale of every reported key."""
    return {key: m.scale for m in metrics().values() for key in m.keys}


def direction(key: str) -> str | None:
    """ "higher", "lower" or None for a reported key."""
    for m in metrics().values():
        if key in m.keys:
            return m.direction
    return None


def metric_of(key: str) -> Metric | None:
    """The metric that reports `key` (bleu_2 -> medlane_bleu, sari_add -> sari)."""
    for m in metrics().values():
        if key in m.keys:
            return m
    return None
