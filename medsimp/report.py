"""Data report of one builder folder: counts per config and split (stats.json), sentence
length and FKGL distributions of the complex and simple sides, the overlap-r histogram with
the filter threshold, alignment types (1-1, 1-N, N-1, N-M, deletions, insertions), the
deletion and elaboration ratios of MultiCochrane's Table 2, top UMLS semantic types and a few
example pairs. MIMIC-derived builders (card flag or lineage) show no text unless asked.

A side's unit is one row's text (a sentence, or the sentences of a 1-N / N-1 alignment,
counted once per distinct id list); its length is tokens per sentence and its FKGL is
computed over its sentences (`pipelines.readability.scores`). Deletion ratio: complex
sentences of a document in no pair, over its complex sentences; elaboration ratio: simple
sentences in no pair (insertions) over its simple sentences (needs the sentence table for
pair-only builders; PLABA rows carry their deletions).
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from medsimp.errors import InputError


def read_card(folder: Path) -> dict:
    path = folder / "README.md"
    if not path.is_file():
        raise InputError(f"{folder}: not a builder folder (no README.md card)")
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n") or "\n---\n" not in text[4:]:
        raise InputError(f"{path}: the card has no YAML header")
    try:
        return yaml.safe_load(text[4:].split("\n---\n", 1)[0]) or {}
    except yaml.YAMLError:
        raise InputError(f"{path}: the card's YAML header does not parse") from None


def _ids(value) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def side_units(rows: list[dict]) -> dict[str, list[tuple[str, int, str]]]:
    """complex/simple units (text, n_sentences, language) of a config's rows, each once."""
    if not rows:
        return {"complex": [], "simple": []}
    cols = set(rows[0])
    out: dict[str, dict[Any, tuple[str, int, str]]] = {"complex": {}, "simple": {}}
    for r in rows:
        lang = r.get("language") or "en"
        if "complex_text" in cols:
            cid = _ids(r.get("complex_ids", r.get("complex_id")))
            out["complex"][cid] = (r["complex_text"], len(cid), "en")
            sid = _ids(r.get("simple_ids") or ())
            if r.get("simple_text"):
                out["simple"][sid] = (r["simple_text"], max(len(sid), 1), lang)
        elif "source" in cols:
            out["complex"][r.get("record_id")] = (r["source"], 1, "en")
            if r.get("target"):
                out["simple"][r.get("record_id")] = (r["target"], 1, "en")
        elif "text" in cols:
            side = "simple" if r.get("audience") == "consumer" else "complex"
            out[side][r.get("sentence_id")] = (r["text"], 1, lang)
    return {side: [units[k] for k in sorted(units, key=str)] for side, units in out.items()}


def _summary(values: list[float]) -> dict[str, Any]:
    import numpy as np

    if not values:
        return {"n": 0, "mean": None, "median": None, "p10": None, "p90": None}
    a = np.asarray(values, dtype=float)
    return {
        "n": len(values),
        "mean": round(float(a.mean()), 2),
        "median": round(float(np.median(a)), 2),
        "p10": round(float(np.percentile(a, 10)), 2),
        "p90": round(float(np.percentile(a, 90)), 2),
    }


def alignment_types(rows: list[dict]) -> Counter:
    """1-1 / 1-N / N-1 / N-M of aligned-pair rows (`pair_id`); PLABA's own `alignment` labels
    (1-0 = deletion). Other builders (MSD groups, sentences) have no alignments."""
    types: Counter = Counter()
    for r in rows:
        if r.get("alignment"):
            types["deletion" if r["alignment"] == "1-0" else r["alignment"]] += 1
        elif "pair_id" in r and r.get("complex_ids") and r.get("simple_ids"):
            nc, ns = len(r["complex_ids"]), len(r["simple_ids"])
            types[f"{'1' if nc == 1 else 'N'}-{'1' if ns == 1 else ('N' if nc == 1 else 'M')}"] += 1
    return types


def unaligned(rows: list[dict], sentences: list[dict] | None) -> dict[str, Any]:
    """Deletions and insertions, and their ratios (None when the totals are unknown)."""
    if rows and "alignment" in rows[0]:  # PLABA: one row per abstract sentence
        complex_ids = {r["complex_id"] for r in rows}
        deleted = {r["complex_id"] for r in rows if r["alignment"] == "1-0"}
        return {
            "deletions": len(deleted),
            "insertions": 0,
            "deletion_ratio": round(len(deleted) / len(complex_ids), 4) if complex_ids else None,
            "elaboration_ratio": 0.0 if complex_ids else None,
        }
    if sentences is None or not rows or "doi" not in rows[0]:
        return {"deletions": None, "insertions": None, "deletion_ratio": None, "elaboration_ratio": None}
    docs = {(r["doi"], r["language"]) for r in rows}
    aligned = {i for r in rows for i in (*r["complex_ids"], *r["simple_ids"])}
    total = {"complex": 0, "simple": 0}
    missing = {"complex": 0, "simple": 0}
    langs = defaultdict(set)
    for doi, lang in docs:
        langs[doi].add(lang)
    for s in sentences:
        if s["doc_id"] not in langs:
            continue
        if s["side"] == "complex":
            n_docs = len(langs[s["doc_id"]])  # the abstract counts once per language pair
            total["complex"] += n_docs
            missing["complex"] += n_docs if s["sentence_id"] not in aligned else 0
        elif s["language"] in langs[s["doc_id"]]:
            total["simple"] += 1
            missing["simple"] += s["sentence_id"] not in aligned
    ratio = {k: round(missing[k] / total[k], 4) if total[k] else None for k in total}
    return {
        "deletions": missing["complex"],
        "insertions": missing["simple"],
        "deletion_ratio": ratio["complex"],
        "elaboration_ratio": ratio["simple"],
    }


def semtypes(rows: list[dict], top: int) -> dict[str, list[list]]:
    out = {}
    for side, col in (("complex", "complex_concepts"), ("simple", "simple_concepts"), ("all", "concepts")):
        counts: Counter = Counter()
        for r in rows:
            for c in r.get(col) or []:
                counts.update(c.get("semtypes") or [])
        if counts:
            out[side] = [[t, n] for t, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:top]]
    return out


def examples(rows: list[dict], k: int) -> list[dict[str, str]]:
    """k rows chosen by a hash of their content (stable across runs)."""

    def key(r):
        return hashlib.sha256(repr(sorted((a, str(b)) for a, b in r.items())).encode()).hexdigest()

    out = []
    for r in sorted(rows, key=key)[:k]:
        if "complex_text" in r:
            out.append({"complex": r["complex_text"], "simple": r.get("simple_text") or ""})
        elif "source" in r:
            out.append({"complex": r["source"], "simple": r.get("target") or ""})
        else:
            out.append({"complex": r.get("text", ""), "simple": ""})
    return out


def config_stats(
    rows: list[dict],
    sentences: list[dict] | None,
    threshold: float,
    syllable_languages: Iterable[str],
    top: int,
) -> dict[str, Any]:
    from medsimp.pipelines.readability import scores

    sides = {}
    for side, units in side_units(rows).items():
        lengths, fkgl = [], []
        for text, n, lang in units:
            sc = scores(text, lang, syllable_languages, n)
            lengths.append(sc["n_tokens"] / n)
            if sc["fkgl"] is not None:
                fkgl.append(sc["fkgl"])
        sides[side] = {
            "units": len(units),
            "length": _summary(lengths),
            "fkgl": _summary(fkgl),
            "_lengths": lengths,
            "_fkgl": fkgl,
        }
    rs = [r["overlap_r"] for r in rows if r.get("overlap_r") is not None]
    return {
        "rows": len(rows),
        "sides": sides,
        "overlap_r": {
            **_summary(rs),
            "threshold": threshold,
            "above": sum(r > threshold for r in rs),
            "_values": rs,
        }
        if rs
        else None,
        "alignment_types": dict(sorted(alignment_types(rows).items())),
        **unaligned(rows, sentences),
        "semtypes": semtypes(rows, top),
    }


def figure_png(name: str, st: dict, bins: int) -> bytes:
    """One PNG per config: lengths, FKGL, overlap r (with the threshold), alignment types."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.2))
    for ax, key, label in ((axes[0], "_lengths", "tokens per sentence"), (axes[1], "_fkgl", "FKGL")):
        both = st["sides"]["complex"][key] + st["sides"]["simple"][key]
        edges = np.histogram_bin_edges(both, bins=bins) if both else bins  # one set of bins
        for side, colour in (("complex", "#1f5fbf"), ("simple", "#d06000")):
            values = st["sides"][side][key]
            if values:
                ax.hist(values, bins=edges, alpha=0.6, color=colour, label=side)
        ax.set_xlabel(label)
        ax.legend(fontsize=8)
    ov = st["overlap_r"]
    if ov:
        axes[2].hist(ov["_values"], bins=bins, range=(0, 1), color="#2e7d32")
        axes[2].axvline(
            ov["threshold"], color="#b00020", linestyle="--", label=f"threshold {ov['threshold']}"
        )
        axes[2].legend(fontsize=8)
    axes[2].set_xlabel("overlap r")
    types = st["alignment_types"]
    axes[3].bar(list(types), list(types.values()), color="#7b3fb5")
    axes[3].set_xlabel("alignment type")
    fig.suptitle(name)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def public(obj):
    """The stats without the raw value lists (keys starting with `_`)."""
    if isinstance(obj, dict):
        return {k: public(v) for k, v in obj.items() if not str(k).startswith("_")}
    if isinstance(obj, list):
        return [public(v) for v in obj]
    return obj


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
