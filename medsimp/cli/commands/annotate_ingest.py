"""`medsimp annotate ingest`: annotators' exports -> majority gold (jsonl, Vecalign), labels and
agreement (docs/annotate.md). Its own module, so the annotate_ingest stage's code is what it
runs and not the annotator page:
    medsimp annotate ingest annotations/ --output out/annotate/gold
"""

from __future__ import annotations

import argparse
import typing
from pathlib import Path

if typing.TYPE_CHECKING:
    from medsimp.params_schema import Params


HELP = "exports -> majority gold (jsonl, Vecalign), labels, agreement"
# Params sections this command reads paths from (its inputs are guarded against its --output).
# It writes the gold that align.gold may name, so it does not read the align section.
PARAMS_SECTIONS = ("annotate",)
# What `dvc metrics show` shows for this stage: the counts every data stage shares, so the table
# stays narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs", nargs="*", help="export files or folders of them (default: params annotate.annotations)"
    )
    parser.add_argument("--output", help="gold folder (default: params annotate.gold)")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")


def run(args: argparse.Namespace) -> int:
    return _ingest(args, args.params_data)


def _ingest(args, params: Params) -> int:
    from alignment.gold import DocPair
    from alignment.score import format_block, pairs_to_blocks
    from medsimp.annotate import ingest
    from medsimp.atomic import atomic_dir, write_json, write_jsonl
    from medsimp.config import resolve_output
    from medsimp.errors import InputError
    from medsimp.humaneval.schema import ALIGNMENT_PER_PAIR
    from medsimp.stats import check_reconciles, finish_stage, output_stats

    ap = params.annotate
    out = args.output or resolve_output(ap.gold, args.params_dir, "annotate.gold")  # before any work
    share = float(ap.majority)
    roots = [Path(p) for p in (args.inputs or [ap.annotations])]
    files = []
    for root in roots:
        if not root.exists():
            raise InputError(f"{root}: no such file or folder")
        files += sorted(root.glob("*.json")) if root.is_dir() else [root]
    docs, work, lineage = ingest.read_exports(files)
    names = [q.qid for q in ALIGNMENT_PER_PAIR]
    golds = ingest.gold(docs, work, share)
    agree = ingest.agreement(docs, work, share, names)
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
        vec = tmp / "vecalign"
        vec.mkdir()
        index = []
        for n, g in enumerate(golds):
            stem = f"{n:05d}"
            (vec / f"{stem}.complex.txt").write_text(
                "".join(t + "\n" for t in g["complex"]), encoding="utf-8"
            )
            (vec / f"{stem}.simple.txt").write_text("".join(t + "\n" for t in g["simple"]), encoding="utf-8")
            blocks = pairs_to_blocks(g["pairs"], len(g["complex"]), len(g["simple"]))
            (vec / f"{stem}.align").write_text(
                "".join(format_block(b) + "\n" for b in blocks), encoding="utf-8"
            )
            index.append(f"{stem}\t{g['doc_id']}\n")
        (vec / "index.tsv").write_text("".join(index), encoding="utf-8")
        write_json(tmp / "agreement.json", agree)
        write_json(tmp / "stats.json", output_stats(stats))
    finish_stage("medsimp annotate ingest", stats, HEADLINE, args.metrics)
    return 0
