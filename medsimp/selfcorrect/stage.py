"""The simplify stage, from a sentence table to its output folder: read the table, decide where
its text may go (egress), open the chat backend behind the answer cache, run the four variants
(`runner.run_all`), and write simplifications.jsonl, variants.csv, dead letters and stats.json
with the input's lineage. `medsimp simplify` parses the flags, calls `simplify` (or
`write_skipped`) and prints the epilogue (docs/selfcorrect.md).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medsimp import lineage
from medsimp.atomic import atomic_dir, write_json, write_jsonl
from medsimp.config import load_params, resolve_path
from medsimp.errors import InputError, UsageError
from medsimp.params_schema import Simplify
from medsimp.progress import interactive
from medsimp.selfcorrect import egress
from medsimp.selfcorrect.backends import BackendError, ChatBackend, LocalChat, OpenAIChat
from medsimp.selfcorrect.cache import CachedChat
from medsimp.selfcorrect.prompts import PROMPT_SETS, PromptSet, load_prompts
from medsimp.selfcorrect.runner import (
    input_restricted,
    read_sentences,
    run_all,
    summary,
    unreadable_notes,
    variants_csv,
)
from medsimp.stats import check_reconciles, output_stats


@dataclass(frozen=True)
class Outcome:
    """What a run produced: its stats (reconciled), why the stage failed ("" if it did not:
    it fails when there was text to simplify and no sentence could be), and the warnings to
    print once each (`runner.unreadable_notes`)."""

    stats: dict[str, Any]
    failure: str = ""
    notes: tuple[str, ...] = ()


def skip_reason(backend_flag: str | None, sp: Simplify) -> str:
    """Why the stage does not run ("" when it does): disabled in params and no `--backend`."""
    if backend_flag is None and not sp.enabled:
        return (
            "simplify.enabled is false: set it (and simplify.openai.base_url/model or "
            "simplify.local.path) or pass --backend to run the LLM stage"
        )
    return ""


def write_skipped(out_dir: str, reason: str) -> dict[str, Any]:
    """Say the stage was skipped and write an output holding only its stats; return them."""
    print(f"medsimp simplify: skipped - {reason}", file=sys.stderr)
    stats = {"skipped": True, "reason": reason, "read": 0, "kept": 0, "filtered": 0, "rejected": 0}
    with atomic_dir(out_dir) as tmp:
        write_json(tmp / "stats.json", stats)
    return stats


def make_backend(kind: str, params: Simplify, trust_env: bool = True) -> ChatBackend:
    """The chat backend `kind` ("openai" or "local") configured from params `simplify`."""
    if kind == "openai":
        o = params.openai
        return OpenAIChat(
            o.base_url,
            o.model,
            api_key_env=o.api_key_env,
            temperature=float(o.temperature),
            max_tokens=o.max_tokens,
            seed=o.seed,
            timeout=float(o.timeout),
            max_retries=o.max_retries,
            backoff=float(o.backoff),
            max_backoff=float(o.max_backoff),
            requests_per_minute=float(o.requests_per_minute),
            trust_env=trust_env,
        )
    loc = params.local
    if not loc.path:
        raise BackendError("the local backend needs simplify.local.path (a model directory)")
    return LocalChat(
        loc.path,
        temperature=float(loc.temperature),
        max_tokens=loc.max_tokens,
        seed=loc.seed,
    )


def simplify(
    sp: Simplify,
    out_dir: str,
    *,
    kind: str,
    source: str,
    limit: int | None,
    cache_dir: str | None,
    params_dir: str | Path,
    params_file: str,
    overrides: list[str],
    dua: str | None,
    params_named: bool = False,
) -> Outcome:
    """Run the stage on the sentence table `source` with backend `kind` into `out_dir`.

    `limit` keeps the first N usable sentences (by id); `cache_dir` holds the answers;
    `params_file`, `overrides` and `dua` decide egress (the allow-list is read from the params
    file itself, never from a `--set`; `params_named`: the file was named by --params or
    MEDSIMP_PARAMS, so it is read as named, not by the implicit ./params.yaml rule); `params_dir`
    resolves a prompt file named in params.
    """
    rows = _read(source)
    restricted, tags = input_restricted(source, rows)
    egress_record = _egress(kind, sp, restricted, tags, params_file, overrides, dua, params_named)
    try:
        backend = make_backend(kind, sp, trust_env=not restricted)
    except BackendError as exc:
        raise UsageError(str(exc)) from None
    if egress_record["endpoint"]:
        print(
            f"medsimp simplify: endpoint {egress_record['endpoint']} "
            f"(restricted text: {'yes' if restricted else 'no'}"
            f"{', agreement: ' + egress_record['dua'] if egress_record['dua'] else ''})",
            file=sys.stderr,
        )
    named = sp.prompts  # a set name (yang2024, yang2024-paraphrase, v1) or a file
    prompts = load_prompts(named if named in PROMPT_SETS or not named else resolve_path(named, params_dir))
    usable = [(s, t) for s, t in rows if t.strip()]
    if limit:
        usable = usable[:limit]
    chat = CachedChat(backend, cache_dir)
    records, failures = _run(usable, chat, prompts, sp)
    stats = {
        "skipped": False,
        "backend": kind,
        "prompt_version": prompts.version,
        "max_rounds_cap": sp.max_rounds,
        "reviser_memory": sp.reviser_memory,
        "read": len(rows),
        "kept": len(records),
        "filtered": len(rows) - len(usable),
        "rejected": len(failures),
        "cache_hits": chat.cache.hits,
        "cache_misses": chat.cache.misses,
        "model_calls": sum(r["calls"] for r in records),
        "variants": summary(records),
        "egress": egress_record,
    }
    check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
    _write(out_dir, records, failures, stats, tags, restricted)
    failure = (
        f"no sentence could be simplified ({len(failures)} failed; reasons in {out_dir}/dead_letter/)"
        if usable and not records
        else ""
    )
    return Outcome(stats, failure, tuple(unreadable_notes(records)))


def _read(source: str) -> list[tuple[str, str]]:
    """(sentence_id, text) rows of `source`; InputError (a one-line reason) when unreadable."""
    try:
        return read_sentences(source)
    except (OSError, ValueError) as exc:
        raise InputError(
            f"simplify input {source}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else 'unreadable'}"
        ) from None


def _egress(
    kind: str,
    sp: Simplify,
    restricted: bool,
    tags: list[str] | None,
    params_file: str,
    overrides: list[str],
    dua: str | None,
    params_named: bool = False,
) -> dict[str, Any]:
    """Where the text may go, decided before any network call; the record kept in stats."""
    record: dict[str, Any] = {
        "backend": kind,
        "restricted": restricted,
        "lineage": tags,
        "endpoint": None,
        "dua": None,
    }
    if kind == "openai":
        # The allow-list is read from the params file itself; a --set of simplify.egress is refused.
        egress.check_overrides(overrides)
        file_params = load_params(params_file, required=params_named)
        base_url = sp.openai.base_url
        if base_url:
            record.update(egress.decide(base_url, restricted, file_params.raw, dua))
    elif dua:
        raise UsageError("--mimic-egress-dua only applies to --backend openai")
    return record


def _run(
    usable: list[tuple[str, str]], chat: CachedChat, prompts: PromptSet, sp: Simplify
) -> tuple[list[dict], list[dict]]:
    """(records, failures) of the four variants over `usable`, with a progress bar on a terminal."""
    from tqdm import tqdm

    with tqdm(
        total=len(usable), desc="simplify", unit="sent", file=sys.stderr, disable=not interactive()
    ) as bar:
        return run_all(
            usable,
            chat,
            prompts,
            max_rounds=sp.max_rounds,
            memory=sp.reviser_memory,
            concurrency=sp.concurrency,
            progress=bar.update,
        )


def _write(
    out_dir: str,
    records: list[dict],
    failures: list[dict],
    stats: dict[str, Any],
    tags: list[str] | None,
    restricted: bool,
) -> None:
    """The output folder. It holds the input's text, so it carries the input's lineage, and
    MIMIC when placeholders made a public-lineage input restricted."""
    dead = [
        {"source": "simplify", "locator": f["sentence_id"], "reason": f["reason"], "detail": f["detail"]}
        for f in failures
    ]
    out_tags = lineage.marker_tags(tags) + (
        [lineage.MIMIC] if restricted and not lineage.is_restricted(tags) else []
    )
    with atomic_dir(out_dir, lineage=out_tags) as tmp:
        write_jsonl(tmp / "simplifications.jsonl", records)
        (tmp / "variants.csv").write_text(variants_csv(records), encoding="utf-8")
        write_jsonl(tmp / "dead_letter" / "part-00000.jsonl", dead)
        write_json(tmp / "stats.json", output_stats(stats))
