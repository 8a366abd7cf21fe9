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
    corpus.add_argument("--input", help="stage output holding sentences/ (default: params align.input)")
    corpus.add_argument("--output", help="output dir (default: params align.output)")
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
    from medsimp.atomic import check_output_target, hold
    from medsimp.config import resolve_output

    out = args.output or resolve_output(params.model, args.params_dir, "align.model")  # before any work
    check_output_target(out, "align train", force=args.force)  # before minutes of training
    with hold(out):  # from here to the swap: a second `align train` on `out` is refused now
        return _train_into(args, params, cache, out)


def _train_into(args, params: Align, cache: str | None, out: str) -> int:
    from alignment.calibration import scoring_key
    from alignment.crf import CRFAligner
    from alignment.encoders import make_encoder
    from alignment.gold import gold_sources, read_golds
    from alignment.selftrain import keep_pinned, pool_digest, self_train
    from medsimp.atomic import atomic_dir, write_json
    from medsimp.config import resolve_path, shown_path
    from medsimp.errors import InputError
    from medsimp.provenance import content_hash
    from medsimp.stats import finish_stage, output_stats

    gold = args.gold or [resolve_path(g, args.params_dir) for g in gold_sources(params.gold)]
    docs = read_golds(gold, args.gold_format or params.gold_format)
    if not docs:
        raise InputError(f"no gold documents in {', '.join(map(str, gold)) or 'align.gold (empty list)'}")
    if args.input and not params.self_training.enabled:
        raise InputError(
            "--input is the reviews self-training labels, and align.self_training.enabled is false"
        )
    previous = _previous_self_training(out) if params.self_training.enabled and not args.retrain else {}
    watch = previous.get("pool_ids") if isinstance(previous.get("pool_ids"), list) else []
    pool = _pool(args, params, docs, watch) if params.self_training.enabled else None  # before any work
    enc = make_encoder(params.crf.encoder, cache or None)
    gold_hashes = [content_hash(g) for g in gold]
    self_stats: dict[str, object] = {"enabled": False}
    if pool is None:
        model = CRFAligner.train(docs, enc, params.crf)
    else:
        recipe = _recipe(gold_hashes, params, enc)
        why = (
            keep_pinned(previous, recipe, pool, params.self_training.retrain_after_new) if previous else None
        )
        if why:  # issue 55: the old reviews' pairs stay as they are
            return _kept(args, out, previous, pool, why)
        model, info = self_train(docs, pool.documents, enc, params.crf, params.self_training)
        self_stats = {
            "enabled": True,
            "input": shown_path(args.input or resolve_path(params.input, args.params_dir), args.params_dir),
            "min_posterior": params.self_training.min_posterior,
            "max_documents": params.self_training.max_documents,
            **pool.stats(),
            **info,
            "recipe": recipe,  # what the model is a function of, beside its pool (keep_pinned)
            "pool_ids": [d.doc_id for d in pool.documents],
            "pool_digest": pool_digest(pool.documents),
        }
    stats = {
        "documents": len(docs),
        "gold": [f"{shown_path(g, args.params_dir)} sha256:{h}" for g, h in zip(gold, gold_hashes)],
        "gold_pairs": sum(len(d.pairs) for d in docs),
        "self_training": self_stats,
        "encoder": enc.name,
        "cache_hits": enc.hits,
        "cache_misses": enc.misses,
    }
    with atomic_dir(out) as tmp:
        model.save(tmp)
        # what decides its scores (alignment.calibration): its calibration is found by it
        stats["scoring_key"] = scoring_key(tmp, model)
        write_json(tmp / "stats.json", output_stats(stats))
    summary = {
        **stats,
        "self_training": _self_training_line(self_stats),  # stats.json keeps the counts
        # an F1 on its own training documents says little: none here (issue 53)
        "f1": "none on its training documents (align calibrate measures it on held-out gold)",
    }
    finish_stage("medsimp align train", stats, HEADLINE, args.metrics, summary=summary)
    return 0


def _recipe(gold_hashes: list[str], params: Align, enc) -> str:
    """What a self-trained model is a function of, besides its pool: the gold's content, params
    align.crf, the self-training knobs that shape it, the encoder and the training code."""
    from medsimp.doccache import code_version, content_key

    knobs = params.self_training
    return content_key(
        "align-train",
        sorted(gold_hashes),
        params.crf.model_dump(mode="json"),
        {"min_posterior": knobs.min_posterior, "max_documents": knobs.max_documents},
        enc.name,
        enc.fingerprint("en"),
        code_version("alignment.crf", "alignment.selftrain", "alignment.features", "alignment.gold"),
    )


def _previous_self_training(out: str) -> dict:
    """The `self_training` record of the model `align train` wrote at `out` before, or {}: a
    folder that is not align train's (no marker naming it, a link) is never read."""
    import json
    from pathlib import Path

    from medsimp.markers import marker_of

    folder = Path(out)
    if (
        folder.is_symlink()
        or not folder.is_dir()
        or (marker_of(folder) or {}).get("command") != "align train"
    ):
        return {}
    try:
        info = json.loads((folder / "stats.json").read_text(encoding="utf-8")).get("self_training")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, RecursionError):
        return {}
    return info if isinstance(info, dict) else {}


def _kept(args, out: str, previous: dict, pool, why: str) -> int:
    """`align train` when the model at `out` stays: nothing is written there; the metrics file
    and the summary say so."""
    import json
    from pathlib import Path

    from medsimp.config import shown_path
    from medsimp.stats import finish_stage

    stats = json.loads((Path(out) / "stats.json").read_text(encoding="utf-8"))
    stats["kept"] = why
    summary = {
        "model": f"{shown_path(out, args.params_dir)} kept ({why})",
        "self_training": _self_training_line(previous),
        "pool_now": f"{pool.eligible} usable reviews (pool_eligible), {previous.get('pool_eligible')} when trained",
    }
    finish_stage("medsimp align train", stats, HEADLINE, args.metrics, summary=summary)
    return 0


def _self_training_line(info: dict) -> str:
    """The summary's one line for `align train`'s self-training counts."""
    if not info.get("enabled"):
        return "off"
    skipped = ", ".join(
        f"{key.removeprefix('pool_skipped_').replace('_', ' ')} {n}"
        for key, n in info.items()
        if key.startswith("pool_skipped_") and n
    )
    return (
        f"{info['pool_used']} of {info['pool_read']} reviews labelled, {info['pseudo_pairs']} pairs kept"
        + (f"; left out: {skipped}" if skipped else "")
    )


def _pool(args, params: Align, gold, watch=()):
    """The English reviews of the sentence table (`--input`, params align.input) that
    self-training labels (params align.self_training), or one line saying how to get one."""
    from alignment.selftrain import choose_pool
    from medsimp.config import resolve_path, shown_path
    from medsimp.errors import InputError
    from pipelines.jobs.align import english_documents, sentence_files
    from pipelines.jobs.beam_io import use_store

    table = args.input or resolve_path(params.input, args.params_dir)
    # an object-store table (s3://...) is reached with the params' Beam options, as the jobs do
    use_store(args.params_data.beam, (), {"--input": table})
    try:
        sentence_files(table)
    except FileNotFoundError:
        raise InputError(
            f"align.self_training reads the reviews to label from {shown_path(table, args.params_dir)}, "
            "which holds no sentence table: run `medsimp cochrane` first, pass --input DIR, or set "
            "align.self_training.enabled=false"
        ) from None
    try:
        return choose_pool(english_documents(table), gold, params.self_training.max_documents, watch)
    except ValueError as exc:  # a document id twice: the pool would depend on the table's order
        raise InputError(f"{shown_path(table, args.params_dir)}: {exc}") from None


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
    from medsimp.atomic import atomic_dir
    from medsimp.provenance import used_aligner
    from pipelines.jobs import align as align_job
    from pipelines.jobs.beam_io import use_store

    params = params.model_copy(update={"model": args.model or resolve_path(params.model, args.params_dir)})
    used = {
        **used_aligner(params.model, args.params_dir),
        "scoring_key": _scoring_key(params, cache),
        "merge": params.crf.merge,  # what this run merged by: the card reads it, not today's params
    }
    table = args.input or resolve_path(params.input, args.params_dir)
    use_store(args.params_data.beam, args.beam_arg, {"--input": table})  # an s3:// table
    with atomic_dir(out) as tmp:
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
    from pathlib import Path

    from alignment.calibration import (
        Calibration,
        calibration_path,
        describe_filter,
        filter_rule,
        score_gold,
        scoring_key,
    )
    from alignment.crf import CRFAligner
    from alignment.devgold import DESCRIPTION, FILES, dev_gold, is_dev_folder
    from alignment.encoders import make_encoder
    from alignment.gold import read_golds
    from medsimp.atomic import write_json
    from medsimp.config import resolve_path, shown_path
    from medsimp.errors import InputError
    from medsimp.provenance import content_hash
    from medsimp.reviews import MC_CLEAN_TEST_REVIEWS, review_key
    from medsimp.stats import print_summary

    model_dir = args.model or resolve_path(params.model, args.params_dir)
    gold = Path(args.gold)
    shown = shown_path(gold, args.params_dir)
    if not gold.exists():
        raise InputError(f"--gold {args.gold}: no such file or folder")
    if gold.is_dir() and not is_dev_folder(gold):
        raise InputError(
            f"--gold {args.gold}: a folder without Devaraj et al.'s {', '.join(FILES)}; "
            "give that folder (the dev gold) or a gold file as align train reads"
        )
    try:
        docs = dev_gold(gold) if gold.is_dir() else read_golds([gold], args.gold_format or "auto")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            f"--gold {args.gold}: not gold alignments ({type(exc).__name__}: {exc})"[:300]
        ) from None
    if not docs or not any(d.pairs for d in docs):
        raise InputError(f"--gold {args.gold}: no gold document with an aligned pair")
    test = sorted({review_key(d.doc_id) for d in docs} & MC_CLEAN_TEST_REVIEWS)
    if test:
        raise InputError(
            f"--gold {args.gold} holds {len(test)} of the 22 MC-CLEAN English test reviews "
            f"({', '.join(test[:3])}{', ...' if len(test) > 3 else ''}): test data is never fitted on"
        )
    digest = content_hash(gold)
    trained = _read_json(Path(model_dir) / "stats.json").get("gold") or []
    if any(isinstance(g, str) and g.endswith(f"sha256:{digest}") for g in trained):
        raise InputError(
            f"--gold {args.gold} is the gold {shown_path(model_dir, args.params_dir)} was trained on: "
            "calibrate on gold it never saw"
        )
    model = CRFAligner.load(model_dir, make_encoder(params.crf.encoder, cache or None), params.crf.merge)
    key = scoring_key(model_dir, model)
    flt = args.params_data.filter
    rule = filter_rule(flt.threshold, flt.comparison, flt.aligner_floor(), flt.drop_copies, flt.copy_overlap)
    rows, prf = score_gold(model, docs, rule)
    pairs = sum(len(d.pairs) for d in docs)
    what = (
        DESCRIPTION
        if gold.is_dir()
        else f"{len(docs)} gold documents, {pairs} pairs, of {shown} sha256:{digest}"
    )
    try:
        cal = Calibration.fit(
            key,
            what,
            params.crf.merge,
            rule,
            rows,
            {**prf, "gold_pairs": pairs, "documents": len(docs)},
            params.calibration,
        )
    except ValueError as exc:
        raise InputError(f"--gold {args.gold}: {exc}") from None
    target = calibration_path(model_dir)
    write_json(target, cal.as_json())
    held = cal.heldout
    scored = sum(len(r) for r in rows)
    print_summary(
        "medsimp align calibrate",
        {
            "model": f"{shown_path(model_dir, args.params_dir)} (scoring key {key})",
            "gold": what,
            "pair_f1_on_gold": f"{prf['f1']:.3f} (P {prf['precision']:.3f}, R {prf['recall']:.3f}; "
            "documents the model never trained on)",
            "rows": f"{scored} predicted, {len(cal.rows)} kept by the filter ({describe_filter(rule)})",
            "kept_precision_on_gold": round(sum(c for _, _, c in cal.rows) / len(cal.rows), 4),
            "heldout_check": (
                f"estimated {held['estimated']:.3f}, measured {held['measured']:.3f} "
                f"({held['folds']}-fold by document, {held['rows']} kept rows)"
                if held.get("rows")
                else "none (too few documents)"
            ),
        },
    )
    print(f"wrote {target}", file=sys.stderr)
    return 0


def _read_json(path) -> dict:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _scoring_key(params: Align, cache: str | None) -> str | None:
    """What decides the scores of the model `align corpus` runs (`alignment.calibration`), the
    key its calibration is found by; None without a model (the job then says so)."""
    from pathlib import Path

    from alignment.calibration import scoring_key
    from alignment.crf import CRFAligner
    from alignment.encoders import make_encoder

    if not (Path(params.model) / "model.pt").is_file():
        return None
    model = CRFAligner.load(params.model, make_encoder(params.crf.encoder, cache or None), params.crf.merge)
    return scoring_key(params.model, model)
