"""Documents to annotate: complex and simple sentences in order, with the current alignments.

Sources: an `align`/`filter` output folder (pairs/*.parquet) or a multicochrane builder config
(both joined to the sentence table for the full documents), a gold file (PLABA, MC-CLEAN,
wiki-auto, jsonl DocPairs), or a Vecalign-format pair of sentence files with its alignments.
Each document is a plain dict the page renders:
`{doc_id, language, complex: [str], simple: [str], alignments: [{c, s, method, scores, keep}]}`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from medsimp.errors import InputError
from medsimp.inputs import read_lines
from medsimp.lineage import read_lineage


def _parquet_rows(folder: Path, columns: list[str] | None = None) -> list[dict]:
    import pyarrow.parquet as pq

    files = sorted(folder.glob("*.parquet"))
    if not files:
        raise InputError(f"{folder}: no parquet files")
    rows: list[dict] = []
    for f in files:
        try:
            table = pq.read_table(f, columns=columns)
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"{f}: cannot read as the expected table ({type(exc).__name__})") from None
        rows.extend(table.to_pylist())
    return rows


def pair_folder(path: Path, config: str | None) -> Path:
    """The folder holding the pair parquet files of an align/filter output or a builder config."""
    if config:
        folder = path / config
    elif (path / "pairs").is_dir():
        folder = path / "pairs"
    else:
        folder = path
    if not folder.is_dir():
        raise InputError(
            f"{folder}: no such folder" + ("" if config else " (a builder folder needs --config)")
        )
    return folder


def _alignment(row: dict, cidx: list[int], sidx: list[int]) -> dict[str, Any]:
    scores = {
        k: round(float(row[k]), 4)
        for k in ("crf_score", "vecalign_score", "overlap_r")
        if row.get(k) is not None
    }
    return {
        "c": cidx,
        "s": sidx,
        "method": str(row.get("method") or ""),
        "scores": scores,
        "keep": row.get("keep"),
    }


def from_pairs(
    pairs_dir: str | Path,
    sentences_dir: str | Path,
    *,
    config: str | None = None,
    language: str | None = None,
) -> tuple[list[dict], dict[str, int]]:
    """Documents of an aligned-pairs table joined to its sentence table; counts of pairs used and
    of pairs whose sentences are not in the table (e.g. MC-CLEAN gold rows)."""
    rows = _parquet_rows(pair_folder(Path(pairs_dir), config))
    sent_dir = Path(sentences_dir)
    sent_dir = sent_dir / "sentences" if (sent_dir / "sentences").is_dir() else sent_dir
    sentences = _parquet_rows(
        sent_dir, ["sentence_id", "doc_id", "side", "language", "sentence_index", "text"]
    )
    by_side: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for s in sentences:
        by_side[(s["doc_id"], s["side"], s["language"])].append(s)
    position: dict[str, int] = {}
    for group in by_side.values():
        group.sort(key=lambda s: s["sentence_index"])
        position.update({s["sentence_id"]: n for n, s in enumerate(group)})
    docs: dict[tuple[str, str], dict] = {}
    counts = {"pairs": 0, "unmatched_pairs": 0}
    for row in sorted(rows, key=lambda r: str(r.get("pair_id"))):
        lang = row["language"]
        if language and lang != language:
            continue
        ids = [*row["complex_ids"], *row["simple_ids"]]
        if not all(i in position for i in ids):
            counts["unmatched_pairs"] += 1
            continue
        key = (row["doi"], lang)
        if key not in docs:
            docs[key] = {
                "doc_id": f"{row['doi']}:{lang}",
                "language": lang,
                "complex": [s["text"] for s in by_side[(row["doi"], "complex", "en")]],
                "simple": [s["text"] for s in by_side[(row["doi"], "simple", lang)]],
                "alignments": [],
            }
        docs[key]["alignments"].append(
            _alignment(
                row, [position[i] for i in row["complex_ids"]], [position[i] for i in row["simple_ids"]]
            )
        )
        counts["pairs"] += 1
    return [docs[k] for k in sorted(docs)], counts


def _from_docpairs(docs, method: str, language: str = "en") -> list[dict]:
    from alignment.score import pairs_to_blocks

    out = []
    for d in docs:
        blocks = pairs_to_blocks(d.pairs, len(d.complex), len(d.simple))
        out.append(
            {
                "doc_id": d.doc_id,
                "language": language,
                "complex": list(d.complex),
                "simple": list(d.simple),
                "alignments": [
                    {"c": list(c), "s": list(s), "method": method, "scores": {}, "keep": None}
                    for c, s in blocks
                    if c and s
                ],
            }
        )
    return out


def gold_format(path: Path, fmt: str) -> str:
    """The gold format `read_gold` would read `path` as."""
    if fmt != "auto":
        return fmt
    if path.suffix in (".tsv", ".jsonl"):
        return {".tsv": "wiki_auto", ".jsonl": "jsonl"}[path.suffix]
    head = json.loads(path.read_text(encoding="utf-8"))
    first = next(iter(head.values())) if isinstance(head, dict) and head else None
    return "plaba" if isinstance(first, dict) and "question" in first else "mc_clean"


def from_gold(
    path: str | Path, fmt: str = "auto", rejects: list[dict] | None = None
) -> tuple[list[dict], tuple[str, ...] | None]:
    """Documents of a gold file and its lineage: the one recorded in the marker of the medsimp
    output holding it, else None (unknown, so restricted). The format never implies a lineage:
    any JSON file can be read as MC-CLEAN. Malformed PLABA abstracts go to `rejects`
    ({locator, reason}) and are left out."""
    from alignment.gold import GoldFormatError, read_gold, read_plaba

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        fmt = gold_format(path, fmt)
        docs = (
            read_plaba(path, rejects if rejects is not None else [])
            if fmt == "plaba"
            else read_gold(path, fmt)
        )
    except (GoldFormatError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise InputError(f"{path}: not a {fmt} gold file ({exc})") from None
    return _from_docpairs(docs, "gold"), read_lineage(path)


def from_vecalign(
    src: str | Path, tgt: str | Path, alignments: str | Path | None, language: str = "en"
) -> list[dict]:
    """One document from sentence-per-line files and an optional Vecalign-format alignment file."""
    from alignment.gold import DocPair, GoldFormatError, read_blocks
    from alignment.score import blocks_to_pairs

    complex_, simple = read_lines(str(src), "--src"), read_lines(str(tgt), "--tgt")
    pairs: set[tuple[int, int]] = set()
    if alignments:
        try:
            pairs = blocks_to_pairs(read_blocks(alignments))
        except GoldFormatError as exc:
            raise InputError(str(exc)) from None
        bad = [p for p in pairs if not (0 <= p[0] < len(complex_) and 0 <= p[1] < len(simple))]
        if bad:
            raise InputError(f"{alignments}: alignment {list(bad[0])} out of range")
    doc = DocPair("stdin" if str(src) == "-" else Path(src).stem, complex_, simple, frozenset(pairs))
    return _from_docpairs([doc], "vecalign", language)
