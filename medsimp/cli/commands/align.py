"""Sentence alignment: neural CRF (English complex -> simple) and Vecalign (cross-lingual).

`align files` (sentence-per-line files; prints Vecalign-style `[i, j]:[k]:score` lines, 0-based,
`[]` for an insertion or deletion; with --gold, strict and lax P/R/F1 as Vecalign's scorer):
    medsimp align files --method vecalign --src doc.de --tgt doc.fr --src-lang de --tgt-lang fr [--gold g.txt]
    medsimp align files --method crf --src abstract.txt --tgt pls.txt [--model DIR]
    medsimp align files --method vecalign --batch pairs.tsv   # src<TAB>tgt<TAB>out per line, models load once
`align corpus` (Beam; `--input` holds sentences/*.parquet from `medsimp cochrane`):
    medsimp align corpus --input out/cochrane --output out/align --metrics metrics/align.json
`align train`: the CRF on gold alignments (jsonl DocPairs, PLABA json, MC-CLEAN json, wiki-auto tsv),
then, with align.self_training.enabled, on the gold + the English reviews of --input as it labels them:
    medsimp align train --gold data/sample/align_gold.jsonl [--gold more.jsonl ...] [--input out/cochrane] --output out/models/crf_aligner
(no F1 on its own training documents: `align calibrate` measures one on held-out gold.)
`align calibrate`: the model's probabilities calibrated on gold it never trained on (a folder of
Devaraj et al.'s val.* files: the project's dev gold, `alignment.devgold`; or a gold file as
`align train` reads), written beside the model (`<model>.calibration.json`, `alignment.calibration`):
    medsimp align calibrate --gold ../shared/data/cochrane [--model out/models/crf_aligner]
For CRF the source is the complex side, the target the simple side. Knobs: params `align`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from alignment import aligners
from medsimp.cli.args import add_beam_arguments, global_options
from medsimp.inputs import read_lines

if TYPE_CHECKING:
    from medsimp.params_schema import Align

HELP = "align sentences (CRF / Vecalign): files, a corpus (Beam), or train the CRF"


# What `dvc metrics show` shows for this stage (the stage's full stats are its output's stats.json).
HEADLINE = ("documents", "gold_pairs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    files = sub.add_parser(
        "files", help="align sentence-per-line files (CRF or Vecalign)", parents=[global_options(2)]
    )
    files.add_argument(
        "--method",
        choices=aligners.names(),
        default="crf",
        help="aligner, alignment/aligners/<name>.py (default: crf)",
    )
    files.add_argument("--src", help="source sentences, one per line (complex side for crf; - = stdin)")
    files.add_argument("--tgt", help="target sentences, one per line (simple side for crf; - = stdin)")
    files.add_argument("--src-lang", default="en", help="language of --src (default: en)")
    files.add_argument("--tgt-lang", default="en", help="language of --tgt (default: en)")
    files.add_argument(
        "--gold", action="append", help="gold alignments (Vecalign format): print strict and lax P/R/F1"
    )
    files.add_argument("--batch", help="tsv of src path, tgt path, output path: align many pairs")
    files.add_argument("--model", help="CRF model directory (default: params align.model)")
    corpus = sub.add_parser(
        "corpus", help="align a sentence table (Beam job; the DVC `align` stage)", parents=[global_options(2)]
    )
    corpus.add_argument(
        "--input",
        help="stage output holding sentences/, or the object-store prefix it was published to "
        "(default: params align.input)",
    )
    corpus.add_argument(
        "--output",
        help="output dir, or an object-store prefix for public data (default: params align.output)",
    )
    corpus.add_argument("--model", help="CRF model directory (default: params align.model)")
    corpus.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(corpus)
    train = sub.add_parser(
        "train",
        help="train the CRF on gold document pairs (the DVC `align_train` stage)",
        parents=[global_options(2)],
    )
    train.add_argument(
        "--gold",
        action="append",
        help="gold document pairs; repeat for several sources, read in order "
        "(default: params align.gold, one path or a list)",
    )
    train.add_argument("--gold-format", default=None, help="auto, jsonl, plaba, mc_clean, wiki_auto")
    train.add_argument(
        "--input",
        help="sentence table whose English reviews self-training labels "
        "(default: params align.input; only with align.self_training.enabled)",
    )
    train.add_argument("--output", help="model dir (default: params align.model)")
    train.add_argument("--metrics", help="also write stats here (DVC metrics)")
    train.add_argument(
        "--retrain",
        action="store_true",
        help="retrain even when the model at --output may stay (align.self_training.retrain_after_new)",
    )
    calibrate = sub.add_parser(
        "calibrate",
        help="calibrate the CRF's probabilities on held-out gold; writes <model>.calibration.json",
        parents=[global_options(2)],
    )
    calibrate.add_argument(
        "--gold",
        required=True,
        help="gold the model never trained on: a folder of Devaraj et al.'s val.source/target/doi "
        "(the 10 hand-aligned dev reviews) or a gold file as align train reads",
    )
    calibrate.add_argument("--gold-format", default=None, help="auto, jsonl, plaba, mc_clean, wiki_auto")
    calibrate.add_argument("--model", help="CRF model directory (default: params align.model)")


def _file_mode(args, params: Align, cache: str | None) -> int:
    from alignment.files import batch_jobs
    from alignment.gold import read_blocks
    from alignment.score import format_block, vecalign_scores
    from medsimp.atomic import atomic_file

    if args.gold and len(args.gold) > 1:
        print("error: align files takes one --gold (several are for align train)", file=sys.stderr)
        return 2
    jobs = batch_jobs(args.batch) if args.batch else []  # checked before the model loads
    aligner = aligners.load(args.method, params, args.model, cache)
    try:  # the languages are the same for every pair of the run: check them once, up front
        aligner.check(args.src_lang, args.tgt_lang)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.batch:
        for src, tgt, out in jobs:
            blocks, scores = aligner.align(
                read_lines(src, "--batch"), read_lines(tgt, "--batch"), args.src_lang, args.tgt_lang
            )
            with atomic_file(out) as tmp:
                tmp.write_text(
                    "".join(format_block(b, s) + "\n" for b, s in zip(blocks, scores)), encoding="utf-8"
                )
        print(f"aligned {len(jobs)} document pairs", file=sys.stderr)
        return 0
    if not (args.src and args.tgt):
        print("error: align files needs --src and --tgt (or --batch)", file=sys.stderr)
        return 2
    blocks, scores = aligner.align(
        read_lines(args.src, "--src"), read_lines(args.tgt, "--tgt"), args.src_lang, args.tgt_lang
    )
    for b, s in zip(blocks, scores):
        print(format_block(b, s))
    if args.gold:
        res = vecalign_scores([read_blocks(args.gold[0])], [blocks])
        print(" ---------------------------------\n|             |  Strict |    Lax  |", file=sys.stderr)
        for name in ("precision", "recall", "f1"):
            print(
                f"| {name.capitalize():<11} |   {res[name + '_strict']:.3f} |   {res[name + '_lax']:.3f} |",
                file=sys.stderr,
            )
    return 0


def _train(args, params: Align, cache: str | None) -> int:
    from alignment.gold import gold_sources
    from alignment.stage import TrainRun, train
    from medsimp.atomic import check_output_target, hold
    from medsimp.cli.source_job import stage_input
    from medsimp.config import resolve_output, resolve_path, shown_path
    from medsimp.errors import InputError
    from medsimp.stats import finish_stage

    out = args.output or resolve_output(params.model, args.params_dir, "align.model")  # before any work
    check_output_target(out, "align train", force=args.force)  # before minutes of training
    if args.input and not params.self_training.enabled:
        raise InputError(
            "--input is the reviews self-training labels, and align.self_training.enabled is false"
        )
    table = (
        (args.input or resolve_path(params.input, args.params_dir)) if params.self_training.enabled else None
    )
    if table:  # an object-store table (s3://...) is reached with the params' Beam options, as the jobs do
        table = stage_input(args, {"--input": table})["--input"]
    run = TrainRun(
        gold=args.gold or [resolve_path(g, args.params_dir) for g in gold_sources(params.gold)],
        gold_format=args.gold_format or params.gold_format,
        out=out,
        table=table,
        retrain=args.retrain,
        cache=cache or None,
        shown=lambda path: shown_path(path, args.params_dir),
    )
    with hold(out):  # from here to the metrics: a second `align train` on `out` is refused now
        stats, summary = train(params, run)
        finish_stage("medsimp align train", stats, HEADLINE, args.metrics, summary=summary)
    return 0


def run(args: argparse.Namespace) -> int:
    from medsimp.config import cache_path

    params = args.params_data.align
    cache = cache_path(args.params_data, args.params_dir)
    mode = {"train": _train, "files": _file_mode, "corpus": _corpus, "calibrate": _calibrate}[args.action]
    return mode(args, params, cache)


def _corpus(args: argparse.Namespace, params: Align, cache: str | None) -> int:
    """The Beam job over a sentence table."""
    from medsimp.config import resolve_output, resolve_path

    out = args.output or resolve_output(params.output, args.params_dir, "align.output")  # before any work
    from alignment.stage import corpus_scoring_key
    from medsimp.cli.source_job import stage_input, stage_output
    from medsimp.provenance import used_aligner
    from pipelines.jobs import align as align_job

    named = {"--input": args.input or resolve_path(params.input, args.params_dir)}
    table = stage_input(args, named, args.beam_arg)["--input"]  # an s3:// table
    output = stage_output(args, out, named)  # public data only in a store
    params = params.model_copy(update={"model": args.model or resolve_path(params.model, args.params_dir)})
    used = {
        **used_aligner(params.model, args.params_dir),
        "scoring_key": corpus_scoring_key(params, cache or None),
        "merge": params.crf.merge,  # what this run merged by: the card reads it, not today's params
    }
    with output as tmp:
        align_job.run(
            table,
            str(tmp),
            params,
            args.params_data.beam,
            args.beam_arg,
            args.metrics,
            cache,
            extra={"aligner": used},
        )
    return 0


def _calibrate(args: argparse.Namespace, params: Align, cache: str | None) -> int:
    """Fit the model's calibration on held-out gold and write it beside the model."""
    from alignment.calibration import filter_rule
    from alignment.stage import calibrate
    from medsimp.config import resolve_path, shown_path
    from medsimp.stats import print_summary

    model_dir = args.model or resolve_path(params.model, args.params_dir)
    flt = args.params_data.filter  # the rule the kept rows pass, as the filter stage applies it
    target, summary = calibrate(
        params,
        filter_rule(flt.threshold, flt.comparison, flt.aligner_floor(), flt.drop_copies, flt.copy_overlap),
        model_dir,
        args.gold,
        args.gold_format,
        cache or None,
        lambda path: shown_path(path, args.params_dir),
    )
    print_summary("medsimp align calibrate", summary)
    print(f"wrote {target}", file=sys.stderr)
    return 0
