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

from alignment import aligners
from medsimp.cli.args import add_beam_arguments, global_options
from medsimp.cli.commands import align_calibrate, align_corpus, align_train

HELP = "align sentences (CRF / Vecalign): files, a corpus (Beam), or train the CRF"


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
    corpus = sub.add_parser("corpus", help=align_corpus.HELP, parents=[global_options(2)])
    align_corpus.add_arguments(corpus)
    add_beam_arguments(corpus)
    corpus.set_defaults(_module=align_corpus)  # its own module: the align stage's code
    train = sub.add_parser("train", help=align_train.HELP, parents=[global_options(2)])
    align_train.add_arguments(train)
    train.set_defaults(_module=align_train)  # its own module: the align_train stage's code
    calibrate = sub.add_parser("calibrate", help=align_calibrate.HELP, parents=[global_options(2)])
    align_calibrate.add_arguments(calibrate)
    calibrate.set_defaults(_module=align_calibrate)


def run(args: argparse.Namespace) -> int:
    """`align files`: the aligner over sentence-per-line files."""
    from alignment.files import FilePairs, align_files
    from medsimp.config import cache_path

    inputs = FilePairs(args.src, args.tgt, args.src_lang, args.tgt_lang, args.gold, args.batch)
    cache = cache_path(args.params_data, args.params_dir)
    align_files(inputs, args.method, args.params_data.align, args.model, cache)
    return 0
