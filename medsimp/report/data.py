"""Data report of one builder folder: counts per config and split (stats.json), sentence
length and FKGL distributions of the complex and simple sides, the overlap-r histogram with
the filter threshold, alignment types (1-1, 1-N, N-1, N-M, deletions, insertions), the
deletion and elaboration ratios of MultiCochrane's Table 2, top UMLS semantic types (by name,
`resources/semantic_types.tsv`) and a few example pairs; the outliers a researcher checks before
training (sentences over `long_sentence` words, fragments without letters, one "sentence"
holding a sentence boundary, pairs whose sides differ `length_ratio`-fold in words) and the
pairs whose two sides are identical, each counted with a few examples; near copies, with a flag
when they are most of a config's pairs; the pairs the aligner scored lowest, first; the precision the
aligner's calibration expects of the kept English CRF rows, with its interval, or why there is none
(`alignment.calibration`); a per-config summary of
the text's shape first. MIMIC-derived builders (card flag or lineage) show no text unless asked:
their outliers and identical pairs are counted, never quoted.

A side's unit is one row's text (a sentence, or the sentences of a 1-N / N-1 alignment,
counted once per distinct id list); its length is tokens per sentence and its FKGL is
computed over its sentences (`pipelines.readability.scores`). Deletion ratio: complex
sentences of a document in no pair, over its complex sentences; elaboration ratio: simple
sentences in no pair (insertions) over its simple sentences (needs the sentence table for
pair-only builders; PLABA rows carry their deletions).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from alignment.overlap import describe_cost, drop_cost
from medsimp import resources
from medsimp.errors import InputError
from medsimp.lineage import has_mimic_shapes
from medsimp.params_schema import AnnotateReport
from medsimp.text.boundaries import internal_boundaries
from medsimp.text.copies import copy_kind, judged_pair
from medsimp.text.readability import scores, tokens

# kept rows' CRF scores -> (estimate or None, the sentence): alignment.calibration.estimate_line
Estimator = Callable[[Sequence[float]], tuple[dict[str, Any] | None, str]]

# A config's name becomes a file name (`<plots>/<name>.png`): a plain name only, never a path.
CONFIG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def plain_name(value: Any, folder: Path, what: str) -> str:
    """`value` from the card as a file name, refused (InputError) unless it is a plain one."""
    name = str(value) if isinstance(value, str | int) else ""
    if not CONFIG_NAME.fullmatch(name):
        raise InputError(
            f"{folder}: {what} {name[:40]!r} is not a plain name "
            "(letters, digits, '.', '_', '-'; at most 64) and it names a file"
        )
    return name


def config_name(cfg: Any, folder: Path) -> str:
    """The card config's `config_name` (it names `<plots>/<name>.png`), as `plain_name`."""
    return plain_name(cfg.get("config_name") if isinstance(cfg, dict) else None, folder, "config_name")


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
    for i, r in enumerate(rows):
        lang = r.get("language") or "en"
        if "complex_text" in cols:
            cid = _ids(r.get("complex_ids", r.get("complex_id")))
            out["complex"][cid] = (r["complex_text"], len(cid), "en")
            sid = _ids(r.get("simple_ids") or ())
            if r.get("simple_text"):
                out["simple"][sid] = (r["simple_text"], max(len(sid), 1), lang)
        elif "source" in cols:  # MedLane records, PLABA abstracts (`n_sentences`)
            key = r.get("record_id") or r.get("abstract_id") or i
            out["complex"][key] = (r["source"], max(int(r.get("n_sentences") or 1), 1), "en")
            if r.get("target"):
                out["simple"][key] = (r["target"], 1, "en")
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


@functools.lru_cache(maxsize=1)
def semantic_type_names() -> dict[str, str]:
    """UMLS Semantic Network TUI -> name (the 127 types of SRDEF), `resources/semantic_types.tsv`."""
    lines = resources.path("semantic_types.tsv").read_text(encoding="utf-8").splitlines()
    return dict(line.split("\t", 1) for line in lines[1:] if line)


def semtype_name(tui: str) -> str:
    return semantic_type_names().get(tui, "unknown type")


def semtypes(rows: list[dict], top: int) -> dict[str, list[dict[str, Any]]]:
    """The `top` most frequent semantic types per side: {tui, name, n}, by count then TUI."""
    out = {}
    for side, col in (("complex", "complex_concepts"), ("simple", "simple_concepts"), ("all", "concepts")):
        counts: Counter = Counter()
        for r in rows:
            for c in r.get(col) or []:
                counts.update(c.get("semtypes") or [])
        if counts:
            ranked = sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:top]
            out[side] = [{"tui": t, "name": semtype_name(t), "n": n} for t, n in ranked]
    return out


# --- what a researcher checks before training ---------------------------------------------------
# A "sentence" that holds a boundary: `medsimp.text.boundaries` (as scripts/check_real_data.py),
# so a sentence the authors wrote inside brackets is theirs, not the splitter's outlier.
EXAMPLE_CHARS = 300  # an example longer than this is cut (its word count is given)


def _hash(*texts: str) -> str:
    return hashlib.sha256("\0".join(texts).encode("utf-8")).hexdigest()


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1] + "\u2026"


def _quotable(*texts: str) -> bool:
    """A second line of defence: never quote text with a MIMIC de-identification placeholder."""
    return not any(has_mimic_shapes(t) for t in texts)


def pair_texts(rows: list[dict]) -> list[tuple[str, str]]:
    """(complex, simple) of the rows holding both sides (pair rows, MedLane's source/target)."""
    out = []
    for r in rows:
        c, s = (
            (r.get("complex_text"), r.get("simple_text"))
            if "complex_text" in r
            else (r.get("source"), r.get("target"))
        )
        if isinstance(c, str) and isinstance(s, str) and c.strip() and s.strip():
            out.append((c, s))
    return out


def _share(n: int, of: int) -> float | None:
    return round(n / of, 4) if of else None


def percent(share: float | None) -> str:
    """A share as shown: one decimal, but two significant digits below 0.1% so that a count of
    one in thousands does not read as "0.0%"."""
    if share is None:
        return "-"
    value = 100 * share
    return f"{value:.2g}%" if 0 < value < 0.1 else f"{value:.1f}%"


def identical_pairs(pairs: list[tuple[str, str]], k: int, show_text: bool) -> dict[str, Any] | None:
    """Pairs whose two sides are the same text (whitespace aside): count, share, examples."""
    if not pairs:
        return None
    same = sorted({(c, s) for c, s in pairs if c.split() == s.split()}, key=lambda p: _hash(*p))
    n = sum(c.split() == s.split() for c, s in pairs)
    quoted = [{"complex": _cut(c), "simple": _cut(s)} for c, s in same if _quotable(c, s)]
    return {
        "n": n,
        "of": len(pairs),
        "share": _share(n, len(pairs)),
        "examples": quoted[:k] if show_text else [],
    }


def near_copies(
    pairs: list[tuple[str, str]], overlap: float, k: int, show_text: bool
) -> dict[str, Any] | None:
    """Pairs whose simple side barely rewrites the complex one (`medsimp.text.copies.copy_kind`
    with `overlap` = filter.copy_overlap: identical pairs and near copies). `mostly`:
    more than half of the pairs are such copies, which a simplification model learns to copy."""
    if not pairs:
        return None
    hits = [(c, s) for c, s in pairs if copy_kind(c, s, overlap)]
    share = _share(len(hits), len(pairs))
    shown = sorted({p for p in hits if _quotable(*p)}, key=lambda p: _hash(*p))
    return {
        "n": len(hits),
        "of": len(pairs),
        "share": share,
        "overlap": overlap,
        "mostly": bool(share and share > 0.5),
        "examples": [{"complex": _cut(c), "simple": _cut(s)} for c, s in shown[:k]] if show_text else [],
    }


def lowest_scored(rows: list[dict], k: int, show_text: bool) -> dict[str, Any] | None:
    """The `k` pairs the aligner was least sure of (`crf_score`, lowest first; ties by a hash
    of the text): the pairs a researcher reads first. Text only when `show_text`."""
    scored = [
        (float(r["crf_score"]), c, s)
        for r in rows
        if isinstance(r.get("crf_score"), int | float) and not isinstance(r.get("crf_score"), bool)
        for c, s in pair_texts([r])
    ]
    if not scored:
        return None
    scored.sort(key=lambda t: (t[0], _hash(t[1], t[2])))
    return {
        "of": len(scored),
        "pairs": [
            {
                "score": round(score, 4),
                **({"complex": _cut(c), "simple": _cut(s)} if show_text and _quotable(c, s) else {}),
            }
            for score, c, s in scored[:k]
        ],
    }


def outliers(
    units: dict[str, list[tuple[str, int, int]]],
    pairs: list[tuple[str, str, int, int]],
    long_sentence: int,
    length_ratio: float,
    k: int,
    show_text: bool,
) -> list[dict[str, Any]]:
    """Outliers, every kind listed (0 included): {kind, side, label, n, of, share, max, examples}.
    `units`: per side (text, n_sentences, words); a unit of several sentences is a long one when
    its mean exceeds `long_sentence`. `pairs`: (complex, simple, their words). Examples: the
    most extreme first, then by a hash of the text; distinct texts; none unless `show_text`."""
    out: list[dict[str, Any]] = []

    def entry(kind: str, side: str, label: str, hits: list, of: int, top: float | None = None) -> None:
        """`hits`: (example, texts) per outlier, in the order examples are chosen."""
        quoted: list[dict[str, Any]] = []
        seen: set[tuple[str, ...]] = set()
        for example, texts in hits if show_text else ():
            if len(quoted) < k and texts not in seen and _quotable(*texts):
                quoted.append(example)
            seen.add(texts)
        n = len(hits)
        row = {"kind": kind, "side": side, "label": label, "n": n, "of": of, "share": _share(n, of)}
        out.append({**row, "max": top, "examples": quoted})

    for side, found in units.items():
        per = sorted(((t, w / n) for t, n, w in found), key=lambda x: (-x[1], _hash(x[0])))
        long = [(t, w) for t, w in per if w > long_sentence]
        hits: list[tuple[dict[str, Any], tuple[str, ...]]]
        hits = [({"text": _cut(t), "words": round(w, 1)}, (t,)) for t, w in long]
        label = f"sentences over {long_sentence} words"
        entry("long_sentence", side, label, hits, len(found), round(long[0][1], 1) if long else None)
        bare = sorted((t for t, _, _ in found if not any(ch.isalpha() for ch in t)), key=_hash)
        hits = [({"text": _cut(t)}, (t,)) for t in bare]
        entry("no_letters", side, "fragments without letters", hits, len(found))
        glued = sorted((t for t, n, _ in found if n == 1 and internal_boundaries(t)), key=_hash)
        hits = [({"text": _cut(t)}, (t,)) for t in glued]
        entry("internal_boundary", side, "sentences holding a sentence boundary", hits, len(found))
    if pairs:
        ratios = sorted(
            ((c, s, max(wc, ws) / max(min(wc, ws), 1)) for c, s, wc, ws in pairs),
            key=lambda x: (-x[2], _hash(x[0], x[1])),
        )
        far = [(c, s, r) for c, s, r in ratios if r >= length_ratio]
        hits = [({"complex": _cut(c), "simple": _cut(s), "ratio": round(r, 2)}, (c, s)) for c, s, r in far]
        label = f"pairs whose sides differ {length_ratio:g}-fold or more in words"
        entry("length_ratio", "pair", label, hits, len(pairs), round(far[0][2], 2) if far else None)
    return out


def clip_range(values: list[float], percentile: float, low_tail: bool) -> dict[str, Any] | None:
    """The histogram range: [min, max], with a tail beyond the `percentile` cut (and the
    low tail beyond 100 - `percentile` when `low_tail`) when it is longer than the kept range
    (it would take over half the axis), so a few extreme values do not squash the rest into a
    few bars. The range is rounded outwards to 2 decimals; `clipped` values lie outside it and
    are not drawn."""
    import numpy as np

    if not values:
        return None
    a = np.asarray(values, dtype=float)
    lo, hi = float(a.min()), float(a.max())
    cut_lo = float(np.percentile(a, 100 - percentile, method="higher")) if low_tail else lo
    cut_hi = float(np.percentile(a, percentile, method="lower"))  # a value, not pulled up by the tail
    span = max(cut_hi - cut_lo, 1e-9)
    top = math.ceil(cut_hi * 100) / 100 if hi - cut_hi > span else math.ceil(hi * 100) / 100
    bottom = math.floor(cut_lo * 100) / 100 if cut_lo - lo > span else math.floor(lo * 100) / 100
    clipped = int((a < bottom).sum() + (a > top).sum())  # the range is rounded outwards
    return {"range": [bottom, top], "clipped": clipped, "n": len(values)}


def examples(rows: list[dict], k: int) -> list[dict[str, str]]:
    """k rows chosen by a hash of their content (stable across runs)."""

    def key(r):
        return hashlib.sha256(repr(sorted((a, str(b)) for a, b in r.items())).encode()).hexdigest()

    out: list[dict[str, str]] = []
    for r in sorted(rows, key=key):
        if "complex_text" in r:
            e = {"complex": r["complex_text"], "simple": r.get("simple_text") or ""}
        elif "source" in r:
            e = {"complex": r["source"], "simple": r.get("target") or ""}
        else:
            e = {"complex": r.get("text", ""), "simple": ""}
        if len(out) < k and _quotable(e["complex"], e["simple"]):
            out.append(e)
    return out


def shape(rows: list[dict], sides: dict[str, dict]) -> dict[str, Any]:
    """The text's shape: documents, sentences and languages per side, pairs."""
    col = next((c for c in ("doi", "pmid", "doc_id") if rows and c in rows[0]), None)
    return {
        "documents": len({r.get(col) for r in rows}) if col else None,
        "pairs": len(pair_texts(rows))
        if rows and ("complex_text" in rows[0] or "source" in rows[0])
        else None,
        "sentences": {side: s["sentences"] for side, s in sides.items()},
        "languages": {side: s["languages"] for side, s in sides.items()},
    }


def _filter_cost(flagged: list[tuple[bool, Any]]) -> dict[str, Any] | None:
    """`alignment.overlap.drop_cost` of the config's (keep, CRF score), with its sentence."""
    if not flagged:
        return None
    cost = drop_cost(flagged)
    return {**cost, "text": describe_cost(cost, "has")}


def expected_row_precision(rows: list[dict], estimator: Estimator | None) -> dict[str, Any] | None:
    """The aligner's expected precision of the config's kept English CRF rows (`keep` true,
    `method` crf, with a `crf_score`: what a user publishes), with its interval and sentence,
    or only the sentence saying why there is none; None for a corpus without the aligner.
    `estimator` maps those scores to (estimate or None, sentence):
    `alignment.calibration.estimate_line` for the card's model."""
    if estimator is None:
        return None
    scores = sorted(
        float(r["crf_score"])
        for r in rows
        if r.get("method") == "crf"
        and r.get("keep") is True
        and isinstance(r.get("crf_score"), int | float)
        and not isinstance(r.get("crf_score"), bool)
    )
    est, text = estimator(scores)
    return {**(est or {}), "text": text}


def config_stats(
    rows: list[dict],
    sentences: list[dict] | None,
    threshold: float,
    syllable_languages: Iterable[str],
    top: int,
    checks: Any = None,
    show_text: bool = False,
    estimator: Estimator | None = None,
    copy_overlap: float = 0.9,
) -> dict[str, Any]:
    """The numbers of one config. `copy_overlap`: filter.copy_overlap (what a near copy is). `checks`: `annotate.report` (examples, long_sentence,
    length_ratio, clip_percentile; the schema's defaults when None); outlier and identical-pair
    examples quote text only when `show_text`; `estimator`: the aligner's calibration, for the
    expected precision of its kept rows (`expected_row_precision`; None: a corpus without it)."""
    checks = checks or AnnotateReport()
    sides: dict[str, dict[str, Any]] = {}
    scored: dict[str, list[tuple[str, int, int]]] = {}
    words: dict[str, int] = {}
    for side, units in side_units(rows).items():
        lengths, fkgl = [], []
        scored[side] = []
        for text, n, lang in units:
            sc = scores(text, lang, syllable_languages, n)
            lengths.append(sc["n_tokens"] / n)
            words[text] = sc["n_tokens"]
            scored[side].append((text, n, sc["n_tokens"]))
            if sc["fkgl"] is not None:
                fkgl.append(sc["fkgl"])
        sides[side] = {
            "units": len(units),
            "sentences": sum(n for _, n, _ in units),
            "languages": sorted({lang for _, _, lang in units}),
            "length": _summary(lengths),
            "fkgl": _summary(fkgl),
            "_lengths": lengths,
            "_fkgl": fkgl,
        }

    def _words(text: str) -> int:
        return words[text] if text in words else len(tokens(text))

    pairs = [(c, s, _words(c), _words(s)) for c, s in pair_texts(rows)]
    # copies are judged as the filter judges them (a bridged pair by its English pair)
    judged = [(c, s) for c, s in map(judged_pair, rows) if c.strip() and s.strip()]
    pct = checks.clip_percentile
    both = {k: sides["complex"][k] + sides["simple"][k] for k in ("_lengths", "_fkgl")}
    rs = [r["overlap_r"] for r in rows if r.get("overlap_r") is not None]
    flagged = [(bool(r["keep"]), r.get("crf_score")) for r in rows if r.get("keep") is not None]
    return {
        "rows": len(rows),
        "shape": shape(rows, sides),
        "sides": sides,
        "outliers": outliers(
            scored, pairs, checks.long_sentence, checks.length_ratio, checks.examples, show_text
        ),
        "identical": identical_pairs(judged, checks.examples, show_text),
        "copies": near_copies(judged, copy_overlap, checks.examples, show_text),
        "lowest": lowest_scored(rows, checks.examples, show_text),
        "precision": expected_row_precision(rows, estimator),
        "histograms": {
            "length": clip_range(both["_lengths"], pct, low_tail=False),
            "fkgl": clip_range(both["_fkgl"], pct, low_tail=True),
        },
        "overlap_r": {
            **_summary(rs),
            "threshold": threshold,
            "above": sum(r > threshold for r in rs),
            "_values": rs,
        }
        if rs
        else None,
        # the filter's own decisions (`keep`), with what the aligner's score says of the dropped
        "filter": _filter_cost(flagged),
        "alignment_types": dict(sorted(alignment_types(rows).items())),
        **unaligned(rows, sentences),
        "semtypes": semtypes(rows, top),
    }


def _text(value: Any) -> str:
    return str(value).replace("$", r"\$")  # text from data is text, never matplotlib math


def figure_png(name: str, st: dict, bins: int) -> bytes:
    """One PNG per config: lengths and FKGL (range clipped as `clip_range`, the clipped count in
    the axis label), overlap r (with the threshold), alignment types; below them the top
    semantic types by name when the config has concepts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    top = semtype_table(st.get("semtypes") or {})
    fig = plt.figure(figsize=(16, 3.2 + (0.25 * len(top) + 0.8 if top else 0)))
    grid = fig.add_gridspec(2 if top else 1, 4, height_ratios=[3.2, 0.25 * len(top) + 0.8] if top else None)
    axes = [fig.add_subplot(grid[0, i]) for i in range(4)]
    hist = st.get("histograms") or {}
    for ax, key, what, label in (
        (axes[0], "_lengths", "length", "tokens per sentence"),
        (axes[1], "_fkgl", "fkgl", "FKGL"),
    ):
        both = st["sides"]["complex"][key] + st["sides"]["simple"][key]
        clip = hist.get(what)
        span = tuple(clip["range"]) if clip else None
        edges: Any = np.histogram_bin_edges(both, bins=bins, range=span) if both else bins  # one set of bins
        for side, colour in (("complex", "#1f5fbf"), ("simple", "#d06000")):
            values = st["sides"][side][key]
            if values:
                ax.hist(values, bins=edges, alpha=0.6, color=colour, label=side)
        if clip and clip["clipped"]:
            label += f" ({clip['clipped']} outside {clip['range'][0]:g}..{clip['range'][1]:g} not shown)"
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
    axes[3].bar([_text(t) for t in types], list(types.values()), color="#7b3fb5")
    axes[3].set_xlabel("alignment type")
    if top:
        ax = fig.add_subplot(grid[1, :])
        y = np.arange(len(top))
        colours = {"complex": "#1f5fbf", "simple": "#d06000", "all": "#2e7d32"}
        sides = [side for side in colours if side in st["semtypes"]]
        width = 0.8 / len(sides)
        for i, side in enumerate(sides):
            offset = (i - (len(sides) - 1) / 2) * width
            ax.barh(
                y + offset, [row[side] or 0 for row in top], height=width, color=colours[side], label=side
            )
        ax.set_yticks(y, [_text(f"{row['name']} ({row['tui']})") for row in top], fontsize=8)
        ax.invert_yaxis()
        demo = str(st.get("vocabulary") or "").startswith("demo")
        ax.set_xlabel(
            "concept mentions (top semantic types)"
            + ("\nDEMO VOCABULARY, not UMLS: a smoke test, not the corpus's semantic types" if demo else "")
        )
        if demo:
            ax.set_title(_text("demo vocabulary (not UMLS)"), color="#b00020", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(_text(name))  # a name is text, never matplotlib math
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def semtype_table(semtypes: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per semantic type in any side's top list: {tui, name, complex, simple, all}, by
    total count then TUI (None for a side whose top list does not hold the type)."""
    rows: dict[str, dict[str, Any]] = {}
    for side, top in semtypes.items():
        for t in top:
            row = rows.setdefault(
                t["tui"], {"tui": t["tui"], "name": t["name"], "complex": None, "simple": None, "all": None}
            )
            row[side] = t["n"]
    return sorted(
        rows.values(), key=lambda r: (-sum(r[s] or 0 for s in ("complex", "simple", "all")), r["tui"])
    )


def public(obj):
    """The stats without the raw value lists (keys starting with `_`)."""
    if isinstance(obj, dict):
        return {k: public(v) for k, v in obj.items() if not str(k).startswith("_")}
    if isinstance(obj, list):
        return [public(v) for v in obj]
    return obj


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def issues(configs: dict[str, dict], limit: int = 10) -> list[dict[str, Any]]:
    """The largest findings over all configs (outliers and identical pairs with a count), by
    share then count: {config, kind, side, label, n, of, share}."""
    found = []
    for name, st in configs.items():
        for o in st.get("outliers") or []:
            if o["n"]:
                found.append(
                    {"config": name, **{k: o[k] for k in ("kind", "side", "label", "n", "of", "share")}}
                )
        same = st.get("identical")
        if same and same["n"]:
            label = "pairs whose two sides are identical"
            found.append({"config": name, "kind": "identical", "side": "pair", "label": label, **same})
            found[-1].pop("examples", None)
        copies = st.get("copies")
        if copies and copies["mostly"]:
            label = f"near copies (each side's words {copies['overlap']:.0%} in the other): most pairs"
            found.append(
                {"config": name, "kind": "copies", "side": "pair", "label": label}
                | {k: copies[k] for k in ("n", "of", "share")}
            )
    found.sort(key=lambda f: (-(f["share"] or 0), -f["n"], f["config"], f["kind"], f["side"]))
    return found[:limit]
