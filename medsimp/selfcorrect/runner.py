"""Run the four variants (Plain, Plain+SC, CoT, CoT+SC) over a sentence table.

Sentences run concurrently on a thread pool (the work is waiting on the model); every
model answer is cached as soon as it arrives, so rerunning after a crash only pays for
what is missing. Outputs are sorted by sentence id and deterministic given the cache.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from medsimp import lineage
from medsimp.csvcells import cell_escape, cell_unescape
from medsimp.selfcorrect.backends import BackendError
from medsimp.selfcorrect.cache import CachedChat
from medsimp.selfcorrect.loop import self_correct
from medsimp.selfcorrect.prompts import PromptSet

VARIANTS = ("plain", "plain_sc", "cot", "cot_sc")
CSV_COLUMNS = (
    "sentence_id",
    "variant",
    "source",
    "output",
    "rounds_used",
    "revisions",
    "stop_reason",
    "prompt_tokens",
    "completion_tokens",
    "fkgl",
    "gunning_fog",
    "ari",
)


def readability(text: str) -> dict[str, float]:
    """FKGL, Gunning fog and ARI from the toolkit's readability module; zeros for empty text."""
    from medsimp.text.readability import text_scores

    found = text_scores(text) if text.strip() else {}
    return {k: float(found.get(k) or 0.0) for k in ("fkgl", "gunning_fog", "ari")}


def simplify_one(
    sentence_id: str, text: str, chat: CachedChat, prompts: PromptSet, max_rounds: int, memory: bool = True
) -> dict[str, Any]:
    """The record of one sentence: four variants, transcripts, tokens, readability."""
    record: dict[str, Any] = {
        "sentence_id": sentence_id,
        "source": text,
        "source_readability": readability(text),
        "variants": {},
        "transcripts": {},
        "calls": 0,
        "prompt_version": prompts.version,
        "prompt_fingerprint": prompts.fingerprint,
    }
    for mode in ("plain", "cot"):
        res = self_correct(text, mode, chat, prompts, max_rounds, memory)
        first = dict(res["first"], rounds_used=0, revisions=0, stop_reason="")
        for name, variant in ((mode, first), (f"{mode}_sc", res["corrected"])):
            record["variants"][name] = dict(variant, readability=readability(variant["text"]))
        record["transcripts"][mode] = res["transcript"]
        record["calls"] += res["calls"]
    return record


def run_all(
    rows: Iterable[tuple[str, str]],
    chat: CachedChat,
    prompts: PromptSet,
    *,
    max_rounds: int,
    concurrency: int,
    memory: bool = True,
    progress: Callable[[], None] | None = None,
) -> tuple[list[dict], list[dict]]:
    """(records, failures) for (sentence_id, text) rows; failures carry a reason, no text."""
    rows = list(rows)

    def work(row: tuple[str, str]) -> tuple[str, dict | None, str]:
        sid, text = row
        try:
            return sid, simplify_one(sid, text, chat, prompts, max_rounds, memory), ""
        except BackendError as exc:
            return sid, None, str(exc)
        finally:
            if progress:
                progress()

    records, failures = [], []
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for sid, record, error in pool.map(work, rows):
            if record is None:
                failures.append({"sentence_id": sid, "reason": "backend_error", "detail": error})
            else:
                records.append(record)
    records.sort(key=lambda r: r["sentence_id"])
    failures.sort(key=lambda r: r["sentence_id"])
    return records, failures


def variants_csv(records: list[dict]) -> str:
    """One row per (sentence, variant): the flat table humaneval and metrics read."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for rec in records:
        for name in VARIANTS:
            v = rec["variants"][name]
            row = {
                "sentence_id": rec["sentence_id"],
                "variant": name,
                "source": rec["source"],
                "output": v["text"],
                "rounds_used": v["rounds_used"],
                "revisions": v["revisions"],
                "stop_reason": v["stop_reason"],
                "prompt_tokens": v["prompt_tokens"],
                "completion_tokens": v["completion_tokens"],
                **v["readability"],
            }
            writer.writerow({key: cell_escape(value) for key, value in row.items()})
    return buf.getvalue()


def summary(records: list[dict]) -> dict[str, Any]:
    """Means per variant (readability, rounds, tokens) for stats/metrics."""
    out: dict[str, Any] = {}
    for name in VARIANTS:
        vs = [r["variants"][name] for r in records]
        if not vs:
            continue
        n = len(vs)
        out[name] = {
            "mean_fkgl": round(sum(v["readability"]["fkgl"] for v in vs) / n, 4),
            "mean_gunning_fog": round(sum(v["readability"]["gunning_fog"] for v in vs) / n, 4),
            "mean_ari": round(sum(v["readability"]["ari"] for v in vs) / n, 4),
            "mean_rounds_used": round(sum(v["rounds_used"] for v in vs) / n, 4),
            "max_rounds_used": max(v["rounds_used"] for v in vs),
            "stopped_at_cap": sum(1 for v in vs if v["stop_reason"] == "max_rounds"),
            "unreadable_verdicts": sum(v.get("unreadable_verdicts", 0) for v in vs),
            "prompt_tokens": sum(v["prompt_tokens"] for v in vs),
            "completion_tokens": sum(v["completion_tokens"] for v in vs),
        }
    return out


def unreadable_notes(records: list[dict]) -> list[str]:
    """One line per reason a Processor reply was unreadable (neither Yes/No nor `VERDICT:`),
    with counts over every corrected variant; never the replies, which may quote the input
    (they stay in simplifications.jsonl's transcripts)."""
    corrected = [r["variants"][name] for r in records for name in ("plain_sc", "cot_sc")]
    beside_yes = sum(v.get("unreadable_beside_yes", 0) for v in corrected)
    stopped = sum(1 for v in corrected if v["stop_reason"] == "unparseable_verdict")
    notes = []
    if beside_yes:
        notes.append(f"{beside_yes} unreadable Processor repl(ies) beside a Yes: revised, as in the paper")
    if stopped:
        notes.append(
            f"{stopped} loop(s) stopped at an unreadable Processor reply with no Yes (unparseable_verdict)"
        )
    return notes


def read_sentences(path: str | Path) -> list[tuple[str, str]]:
    """(sentence_id, text) from parquet (file or dir of part-*.parquet), JSONL or CSV."""
    import pandas as pd

    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.parquet")) or sorted(path.glob("*.jsonl"))
        if not files:
            raise FileNotFoundError(f"{path}: no *.parquet or *.jsonl files")
    else:
        files = [path]
    frames = []
    for f in files:
        if f.suffix == ".parquet":
            frames.append(pd.read_parquet(f, columns=["sentence_id", "text"]))
        elif f.suffix == ".jsonl":
            frames.append(pd.read_json(f, lines=True, dtype=False))
        elif f.suffix == ".csv":
            frames.append(pd.read_csv(f, dtype=str, keep_default_na=False).map(cell_unescape))
        else:
            raise ValueError(f"{f}: expected .parquet, .jsonl or .csv")
    rows: list[tuple[str, str]] = []
    for frame in frames:
        if frame.empty:
            continue
        missing = {"sentence_id", "text"} - set(frame.columns)
        if missing:
            raise ValueError(f"{path}: missing columns {sorted(missing)}")
        rows += [(str(s), str(t)) for s, t in zip(frame["sentence_id"], frame["text"])]
    return sorted(rows)


def input_restricted(path: str | Path, rows: list[tuple[str, str]]) -> tuple[bool, list[str] | None]:
    """(restricted?, lineage tags or None) of a sentence input.

    Parquet inputs carry lineage in their schema metadata (`medsimp.lineage`); JSONL and CSV
    only in the marker of the output folder holding them, else they are unknown and count as
    restricted. Text with MIMIC de-identification placeholders is restricted whatever its
    lineage says.
    """
    tags = lineage.read_lineage(path)
    restricted = lineage.is_restricted(tags) or any(lineage.has_mimic_shapes(t) for _, t in rows)
    return restricted, (list(tags) if tags is not None else None)
