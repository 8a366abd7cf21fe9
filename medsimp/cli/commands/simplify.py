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

HELP = "LLM simplification with self-correction (Plain/CoT, +SC) of a sentence table"


# What `dvc metrics show` shows for this stage: the counts every data stage shares, so the table
# stays narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")


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


def run(args) -> int:
    from medsimp.config import cache_path, resolve_output
    from medsimp.errors import StageFailed
    from medsimp.selfcorrect import stage
    from medsimp.stats import finish_stage, write_metrics

    sp = args.params_data.simplify
    out_dir = args.output or resolve_output(sp.output, args.params_dir, "simplify.output")
    reason = stage.skip_reason(args.backend, sp)
    if reason:
        stats = stage.write_skipped(out_dir, reason)
        if args.metrics:
            write_metrics(args.metrics, stats, HEADLINE)
        return 0
    outcome = stage.simplify(
        sp,
        out_dir,
        kind=args.backend or sp.backend,
        source=args.input or sp.input,
        limit=args.limit if args.limit is not None else sp.limit,
        cache_dir=cache_path(args.params_data, args.params_dir),
        params_dir=args.params_dir,
        params_file=getattr(args, "params", "params.yaml") or "params.yaml",
        params_named=bool(getattr(args, "params_named", False)),
        overrides=getattr(args, "overrides", []) or [],
        dua=getattr(args, "mimic_egress_dua", None),
    )
    shown = {k: v for k, v in outcome.stats.items() if k != "variants"}
    finish_stage("simplify", outcome.stats, HEADLINE, args.metrics, summary=shown, notes=outcome.notes)
    if outcome.failure:
        raise StageFailed(outcome.failure)
    return 0
