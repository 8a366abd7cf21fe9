"""Items from system outputs, and the Latin-square assignment of systems to laypeople."""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any

from medsimp.csvcells import cell_unescape, csv_errors


def load_items(path: str | Path, systems: list[str] | None = None) -> tuple[list[dict], list[str]]:
    """Items {item_id, source, outputs{system: text}} from a CSV with
    `sentence_id|item_id, variant|system, source, output` (e.g. simplify's variants.csv)."""
    items: dict[str, dict[str, Any]] = {}
    with open(path, newline="", encoding="utf-8") as fh, csv_errors(path):
        reader = csv.DictReader(fh)
        cols = set(reader.fieldnames or ())
        id_col = "item_id" if "item_id" in cols else "sentence_id"
        sys_col = "system" if "system" in cols else "variant"
        missing = {id_col, sys_col, "source", "output"} - cols
        if missing:
            raise ValueError(f"{path}: missing columns {sorted(missing)}")
        for line, raw in enumerate(reader, start=2):
            row = {k: cell_unescape(v) for k, v in raw.items()}
            item = items.setdefault(
                row[id_col], {"item_id": row[id_col], "source": row["source"], "outputs": {}}
            )
            if row[sys_col] in item["outputs"]:
                raise ValueError(
                    f"{path}:{line}: duplicate output for item {row[id_col]!r}, system {row[sys_col]!r}"
                )
            item["outputs"][row[sys_col]] = row["output"]
    found = sorted({s for it in items.values() for s in it["outputs"]})
    systems = list(systems) if systems else found
    for it in items.values():
        lacking = [s for s in systems if s not in it["outputs"]]
        if lacking:
            raise ValueError(f"{path}: item {it['item_id']!r} has no output for {lacking}")
        it["outputs"] = {s: it["outputs"][s] for s in systems}
    return [items[k] for k in sorted(items)], systems


def latin_square(item_ids: list[str], systems: list[str], n_raters: int) -> dict[str, dict[str, str]]:
    """Rater r sees item i with system (i + r) mod k: over k raters every item meets every
    system once, and each rater sees each system equally often (when k divides the items)."""
    k = len(systems)
    return {
        rater_name(r): {iid: systems[(i + r) % k] for i, iid in enumerate(item_ids)} for r in range(n_raters)
    }


def rater_name(index: int) -> str:
    return f"L{index + 1:02d}"


def build_manifest(items: list[dict], systems: list[str], n_laypeople: int, seed: int) -> dict:
    """Everything the forms and the ingest need; preference options are shown under neutral
    letters in a per-item shuffled order (seeded, so forms are reproducible)."""
    rng = random.Random(seed)
    order = {it["item_id"]: rng.sample(systems, len(systems)) for it in items}
    return {
        "version": 1,
        "systems": systems,
        "items": items,
        "preference_order": order,
        "layperson_assignment": latin_square([it["item_id"] for it in items], systems, n_laypeople),
    }
