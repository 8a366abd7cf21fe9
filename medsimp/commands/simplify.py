"""Simplify radiology sentences with an LLM and the self-correction loop (four variants).

For every input sentence: Plain, Plain+self-correction, CoT and CoT+self-correction, with
the transcript of every round, rounds used, token counts and FKGL / Gunning fog / ARI.
Answers are cached by prompt+model+parameters under params `cache.dir`, so an
interrupted run resumes where it stopped. With `simplify.enabled: false` (the default)
and no `--backend` flag, the stage writes an empty output and a metrics file saying it
was skipped.

Outputs (in --output): simplifications.jsonl (one record per sentence, with transcripts),
variants.csv (one row per sentence and variant), dead_letter/part-00000.jsonl, stats.json.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

HELP = "LLM simplification with self-correction (Plain/CoT, +SC) of a sentence table"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=("openai", "local"),
        default=None,
        help="chat backend (default: params simplify.backend; giving it enables the run)",
    )
    parser.add_argument(
        "--input",
        default=None,
        help="sentence table: parquet dir/file, JSONL or CSV "
        "with sentence_id,text (default: params simplify.input)",
    )
    parser.add_argument("--output", default=None, help="output dir (default: params simplify.output)")
    parser.add_argument("--metrics", default=None, help="also write stats here (DVC metrics)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences (by id)")
    parser.add_argument(
        "--mimic-egress-dua",
        default=None,
        metavar="AGREEMENT",
        help="this run may send MIMIC-derived (or unknown-lineage) text to a "
        "non-loopback endpoint listed in simplify.egress.allowed_endpoints of the "
        "params file, under the named agreement "
        "(physionet-credentialed-health-data-1.5.0); see docs/selfcorrect.md",
    )


def _backend(kind: str, params: dict[str, Any], trust_env: bool = True):
    from medsimp.selfcorrect.backends import LocalChat, OpenAIChat

    if kind == "openai":
        o = params.get("openai") or {}
        return OpenAIChat(
            str(o.get("base_url") or ""),
            str(o.get("model") or ""),
            api_key_env=str(o.get("api_key_env", "OPENAI_API_KEY")),
            temperature=float(o.get("temperature", 0.8)),
            max_tokens=int(o.get("max_tokens", 512)),
            seed=o.get("seed", 0),
            timeout=float(o.get("timeout", 60)),
            max_retries=int(o.get("max_retries", 5)),
            backoff=float(o.get("backoff", 1.0)),
            max_backoff=float(o.get("max_backoff", 60)),
            requests_per_minute=float(o.get("requests_per_minute", 0)),
            trust_env=trust_env,
        )
    loc = params.get("local") or {}
    if not loc.get("path"):
        from medsimp.selfcorrect.backends import BackendError

        raise BackendError("the local backend needs simplify.local.path (a model directory)")
    return LocalChat(
        str(loc["path"]),
        temperature=float(loc.get("temperature", 0.8)),
        max_tokens=int(loc.get("max_tokens", 256)),
        seed=int(loc.get("seed", 0)),
    )


def _skip_reason(args, sp: dict[str, Any]) -> str:
    if args.backend is None and not sp.get("enabled", False):
        return (
            "simplify.enabled is false: set it (and simplify.openai.base_url/model or "
            "simplify.local.path) or pass --backend to run the LLM stage"
        )
    return ""


def run(args) -> int:
    from medsimp.config import section
    from medsimp.outputs import atomic_dir, write_json, write_metrics

    sp = section(args.params_data, "simplify")
    out_dir = args.output or sp.get("output", "out/simplify")
    reason = _skip_reason(args, sp)
    if reason:
        print(f"medsimp simplify: skipped - {reason}", file=sys.stderr)
        stats = {"skipped": True, "reason": reason, "read": 0, "kept": 0, "filtered": 0, "rejected": 0}
        with atomic_dir(out_dir) as tmp:
            write_json(tmp / "stats.json", stats)
        if args.metrics:
            write_metrics(args.metrics, stats, "simplify")
        return 0
    return _run(args, sp, out_dir)


def _run(args, sp: dict[str, Any], out_dir: str) -> int:
    from tqdm import tqdm

    from medsimp import lineage
    from medsimp.config import load_params, resolve_path, section
    from medsimp.errors import InputError, StageFailed
    from medsimp.outputs import (
        atomic_dir,
        check_reconciles,
        output_stats,
        print_summary,
        write_json,
        write_jsonl,
        write_metrics,
    )
    from medsimp.progress import interactive
    from medsimp.selfcorrect import egress
    from medsimp.selfcorrect.backends import BackendError
    from medsimp.selfcorrect.cache import CachedChat
    from medsimp.selfcorrect.prompts import load_prompts
    from medsimp.selfcorrect.runner import input_restricted, read_sentences, run_all, summary, variants_csv

    kind = args.backend or sp.get("backend", "openai")
    source = args.input or sp.get("input", "out/radiology/sentences")
    try:
        rows = read_sentences(source)
    except (OSError, ValueError) as exc:
        raise InputError(
            f"simplify input {source}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else 'unreadable'}"
        ) from None
    restricted, tags = input_restricted(source, rows)
    egress_record: dict[str, Any] = {
        "backend": kind,
        "restricted": restricted,
        "lineage": tags,
        "endpoint": None,
        "dua": None,
    }
    if kind == "openai":
        # Before any network call: where may this text go? The allow-list is read from the
        # params file itself; a --set of simplify.egress is refused.
        egress.check_overrides(getattr(args, "overrides", []) or [])
        file_params = load_params(getattr(args, "params", "params.yaml") or "params.yaml")
        base_url = str((sp.get("openai") or {}).get("base_url") or "")
        if base_url:
            egress_record.update(
                egress.decide(base_url, restricted, file_params, getattr(args, "mimic_egress_dua", None))
            )
    elif getattr(args, "mimic_egress_dua", None):
        raise egress.UsageError("--mimic-egress-dua only applies to --backend openai")
    try:
        backend = _backend(kind, sp, trust_env=not restricted)
    except BackendError as exc:
        print(f"medsimp simplify: {exc}", file=sys.stderr)
        return 2
    if egress_record["endpoint"]:
        print(
            f"medsimp simplify: endpoint {egress_record['endpoint']} "
            f"(restricted text: {'yes' if restricted else 'no'}"
            f"{', agreement: ' + egress_record['dua'] if egress_record['dua'] else ''})",
            file=sys.stderr,
        )
    prompts = load_prompts(resolve_path(sp["prompts"], args.params_dir) if sp.get("prompts") else None)
    limit = args.limit if args.limit is not None else int(sp.get("limit", 0) or 0)
    read = len(rows)
    usable = [(s, t) for s, t in rows if t.strip()]
    filtered = read - len(usable)
    if limit:
        usable = usable[:limit]
        filtered = read - len(usable)
    chat = CachedChat(backend, section(args.params_data, "cache").get("dir"))
    with tqdm(
        total=len(usable), desc="simplify", unit="sent", file=sys.stderr, disable=not interactive()
    ) as bar:
        records, failures = run_all(
            usable,
            chat,
            prompts,
            max_rounds=int(sp.get("max_rounds", 10)),
            memory=bool(sp.get("reviser_memory", True)),
            concurrency=int(sp.get("concurrency", 4)),
            progress=bar.update,
        )
    stats = {
        "skipped": False,
        "backend": kind,
        "prompt_version": prompts.version,
        "max_rounds_cap": int(sp.get("max_rounds", 10)),
        "reviser_memory": bool(sp.get("reviser_memory", True)),
        "read": read,
        "kept": len(records),
        "filtered": filtered,
        "rejected": len(failures),
        "cache_hits": chat.cache.hits,
        "cache_misses": chat.cache.misses,
        "model_calls": sum(r["calls"] for r in records),
        "variants": summary(records),
        "egress": egress_record,
    }
    check_reconciles(stats, "read", ["kept", "filtered", "rejected"])
    dead = [
        {"source": "simplify", "locator": f["sentence_id"], "reason": f["reason"], "detail": f["detail"]}
        for f in failures
    ]
    # The outputs (and dead letters) hold the input's text: they carry its lineage, and MIMIC
    # when placeholders made a public-lineage input restricted.
    out_tags = lineage.marker_tags(tags) + (
        [lineage.MIMIC] if restricted and not lineage.is_restricted(tags) else []
    )
    with atomic_dir(out_dir, lineage=out_tags) as tmp:
        write_jsonl(tmp / "simplifications.jsonl", records)
        (tmp / "variants.csv").write_text(variants_csv(records), encoding="utf-8")
        write_jsonl(tmp / "dead_letter" / "part-00000.jsonl", dead)
        write_json(tmp / "stats.json", output_stats(stats))
    if args.metrics:
        write_metrics(args.metrics, stats, "simplify")
    print_summary("simplify", {k: v for k, v in stats.items() if k != "variants"})
    if usable and not records:
        raise StageFailed(
            f"no sentence could be simplified ({len(failures)} failed; reasons in {out_dir}/dead_letter/)"
        )
    return 0
