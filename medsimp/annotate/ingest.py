"""From annotators' exports to gold and agreement.

Only documents an annotator marked done count. A pair is aligned in an annotator's work unless
it was rejected (proposals left as they were count as confirmed). Gold holds a pair when more
than `majority` of the document's annotators aligned it; each label of a gold pair is the
lower median of the annotators' values. Agreement, as MultiCochrane reports it: each
annotator's pair F1 against the majority vote of the other annotators (same rule), macro
averaged; plus Krippendorff's alpha (nominal) over every (complex, simple) cell of documents
with two or more annotators, and alpha (interval) per label over gold pairs.

`ingest` is the `annotate ingest` stage: exports -> `gold.jsonl`, `labels.jsonl`, `vecalign/`
(Vecalign files and their index), `agreement.json` and `stats.json` in one output folder.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alignment.gold import DocPair
from alignment.score import format_block, pair_prf, pairs_to_blocks
from medsimp.atomic import atomic_dir, write_json, write_jsonl
from medsimp.errors import InputError
from medsimp.humaneval.schema import ALIGNMENT_PER_PAIR
from medsimp.lineage import union
from medsimp.params_schema import Annotate
from medsimp.stats import check_reconciles, output_stats

FORMAT = "medsimp-annotations"


@dataclass(frozen=True)
class Work:
    """One annotator's finished document."""

    annotator: str
    pairs: frozenset[tuple[int, int]]
    labels: dict[tuple[int, int], dict[str, int]]


def read_exports(paths: list[Path]) -> tuple[dict[str, dict], dict[str, list[Work]], list | None]:
    """Documents (texts) by id, each document's finished work, and the union of the lineages
    (None when any export's lineage is unknown)."""
    docs: dict[str, dict] = {}
    work: dict[str, list[Work]] = defaultdict(list)
    seen: set[str] = set()
    lineages = []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            raise InputError(f"{path}: not a JSON file") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputError(f"{path}: not a medsimp annotation export (format {FORMAT!r})")
        who = str(data.get("annotator") or "")
        if not who or who in seen:
            raise InputError(f"{path}: annotator {who!r} is missing or appears in two files")
        seen.add(who)
        lineages.append(data.get("lineage"))
        for n, d in enumerate(data.get("documents") or []):
            where = f"{path}: document {n}"
            try:
                doc_id, complex_, simple = str(d["doc_id"]), list(d["complex"]), list(d["simple"])
                rows = [
                    (
                        _index(a["c"], where),
                        _index(a["s"], where),
                        str(a["state"]),
                        _labels(a.get("labels"), where),
                    )
                    for a in d.get("alignments") or []
                ]
            except (KeyError, TypeError, ValueError, AttributeError):
                raise InputError(f"{where}: missing doc_id/complex/simple/alignments fields") from None
            known = docs.setdefault(
                doc_id,
                {
                    "doc_id": doc_id,
                    "language": d.get("language", "en"),
                    "complex": complex_,
                    "simple": simple,
                },
            )
            if (known["complex"], known["simple"]) != (complex_, simple):
                raise InputError(f"{where}: document {doc_id!r} has other sentences than in another export")
            bad = [r for r in rows if not (0 <= r[0] < len(complex_) and 0 <= r[1] < len(simple))]
            if bad:
                raise InputError(f"{where}: alignment {list(bad[0][:2])} out of range")
            if d.get("done"):
                live = [r for r in rows if r[2] != "rejected"]
                work[doc_id].append(
                    Work(
                        who,
                        frozenset((c, s) for c, s, _, _ in live),
                        {(c, s): dict(lab) for c, s, _, lab in live},
                    )
                )
    lineage = union(*lineages) if all(x is not None for x in lineages) else None
    return docs, work, (list(lineage) if lineage is not None else None)


def _index(value: object, where: str) -> int:
    """A sentence index: a JSON integer, nothing else (1.5, true and "2" are not indexes)."""
    if type(value) is not int:
        raise InputError(f"{where}: sentence index {json.dumps(value)[:40]} is not a whole number")
    return value


def _labels(value: object, where: str) -> dict[str, int]:
    """An alignment's labels: names to JSON integers (a NaN, a list or 2.5 is refused)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{where}: labels must be an object of name -> whole number")
    for k, v in value.items():
        if type(v) is not int:
            raise InputError(f"{where}: label {str(k)[:40]!r} = {json.dumps(v)[:40]} is not a whole number")
    return {str(k): v for k, v in value.items()}


def majority(sets: list[frozenset], share: float) -> set:
    """Items in more than `share` of `sets`."""
    counts: dict = defaultdict(int)
    for s in sets:
        for x in s:
            counts[x] += 1
    return {x for x, n in counts.items() if n > share * len(sets)}


def _lower_median(values: list[int]) -> int:
    values = sorted(values)
    return values[(len(values) - 1) // 2]


def gold(docs: dict[str, dict], work: dict[str, list[Work]], share: float) -> list[dict]:
    """Majority-vote documents `{doc_id, complex, simple, pairs, labels, annotators}`, by id."""
    out = []
    for doc_id in sorted(work):
        ws = work[doc_id]
        pairs = sorted(majority([w.pairs for w in ws], share))
        labels = {}
        for p in pairs:
            votes: dict[str, list[int]] = defaultdict(list)
            for w in ws:
                for k, v in w.labels.get(p, {}).items():
                    votes[k].append(v)
            labels[p] = {k: _lower_median(v) for k, v in sorted(votes.items())}
        out.append(
            {**docs[doc_id], "pairs": pairs, "labels": labels, "annotators": sorted(w.annotator for w in ws)}
        )
    return out


def alpha(rows: list[tuple[str, str, object]], interval: bool = False) -> float | None:
    """Krippendorff's alpha over (annotator, unit, value) rows, units with >= 2 values only
    (nominal; `interval` for numeric labels); None without such units or with no variation."""
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import binary_distance, interval_distance

    per_unit: dict[str, int] = defaultdict(int)
    for _, unit, _ in rows:
        per_unit[unit] += 1
    kept = sorted((r for r in rows if per_unit[r[1]] >= 2), key=lambda r: (r[1], r[0]))
    if not kept or len({r[2] for r in kept}) < 2:
        return None
    task = AnnotationTask(data=kept, distance=interval_distance if interval else binary_distance)
    return float(task.alpha())


def agreement(
    docs: dict[str, dict], work: dict[str, list[Work]], share: float, label_names: list[str]
) -> dict:
    """F1 of each annotator against the majority of the others (macro average), and alphas."""
    per: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    cells: list[tuple[str, str, object]] = []
    label_rows: dict[str, list] = defaultdict(list)
    for doc_id in sorted(work):
        ws = work[doc_id]
        if len(ws) < 2:
            continue
        for w in ws:
            others = majority([o.pairs for o in ws if o is not w], share)
            per[w.annotator][0].append(others)
            per[w.annotator][1].append(set(w.pairs))
        n_c, n_s = len(docs[doc_id]["complex"]), len(docs[doc_id]["simple"])
        for w in ws:
            cells += [
                (w.annotator, f"{doc_id}|{c}|{s}", int((c, s) in w.pairs))
                for c in range(n_c)
                for s in range(n_s)
            ]
        for p in majority([w.pairs for w in ws], share):
            for w in ws:
                for k, v in w.labels.get(p, {}).items():
                    label_rows[k].append((w.annotator, f"{doc_id}|{p[0]}|{p[1]}", v))
    f1 = {a: round(pair_prf(ref, mine)["f1"], 6) for a, (ref, mine) in sorted(per.items())}
    return {
        "f1_vs_majority_of_others": f1,
        "f1_macro": round(sum(f1.values()) / len(f1), 6) if f1 else None,
        "alpha_alignment": _round(alpha(cells)),
        "alpha_labels": {k: _round(alpha(label_rows.get(k, []), interval=True)) for k in label_names},
        "documents_with_2plus_annotators": sum(len(ws) >= 2 for ws in work.values()),
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def ingest(roots: list[Path], out: str, params: Annotate) -> dict[str, Any]:
    """Read the exports in `roots` (files, or folders of `*.json`), write the majority gold
    (share params `annotate.majority`) and the agreement into the folder `out`. -> the stats."""
    share = float(params.majority)
    files = []
    for root in roots:
        if not root.exists():
            raise InputError(f"{root}: no such file or folder")
        files += sorted(root.glob("*.json")) if root.is_dir() else [root]
    docs, work, lineage = read_exports(files)
    names = [q.qid for q in ALIGNMENT_PER_PAIR]
    golds = gold(docs, work, share)
    agree = agreement(docs, work, share, names)
    stats = {
        "files": len(files),
        "read": len(docs),
        "kept": len(golds),
        "filtered": len(docs) - len(golds),
        "rejected": 0,
        "gold_pairs": sum(len(g["pairs"]) for g in golds),
        "annotators": len({w.annotator for ws in work.values() for w in ws}),
        **{k: v for k, v in agree.items() if not isinstance(v, dict)},
    }
    check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
    with atomic_dir(out, inputs=roots, lineage=lineage) as tmp:
        write_jsonl(
            tmp / "gold.jsonl",
            [DocPair(g["doc_id"], g["complex"], g["simple"], frozenset(g["pairs"])).to_json() for g in golds],
        )
        write_jsonl(
            tmp / "labels.jsonl",
            [
                {"doc_id": g["doc_id"], "c": c, "s": s, "labels": lab}
                for g in golds
                for (c, s), lab in g["labels"].items()
            ],
        )
        _write_vecalign(tmp / "vecalign", golds)
        write_json(tmp / "agreement.json", agree)
        write_json(tmp / "stats.json", output_stats(stats))
    return stats


def _write_vecalign(vec: Path, golds: list[dict]) -> None:
    """Each gold document as Vecalign files (`<n>.complex.txt`, `<n>.simple.txt`, `<n>.align`)
    and `index.tsv` (file stem -> document id)."""
    vec.mkdir()
    index = []
    for n, g in enumerate(golds):
        stem = f"{n:05d}"
        (vec / f"{stem}.complex.txt").write_text("".join(t + "\n" for t in g["complex"]), encoding="utf-8")
        (vec / f"{stem}.simple.txt").write_text("".join(t + "\n" for t in g["simple"]), encoding="utf-8")
        blocks = pairs_to_blocks(g["pairs"], len(g["complex"]), len(g["simple"]))
        (vec / f"{stem}.align").write_text("".join(format_block(b) + "\n" for b in blocks), encoding="utf-8")
        index.append(f"{stem}\t{g['doc_id']}\n")
    (vec / "index.tsv").write_text("".join(index), encoding="utf-8")
