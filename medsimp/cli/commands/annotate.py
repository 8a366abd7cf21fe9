"""Alignment annotator (docs/annotate.md).

`page` writes a self-contained HTML page (`<output>/index.html`), `serve` serves it on
localhost and saves each annotator's export, `ingest` turns exports into gold and agreement:
    medsimp annotate page --pairs out/filter --sentences out/cochrane --language es --output out/annotate/page
    medsimp annotate page --pairs builders/multicochrane --config es --sentences out/cochrane --output DIR
    medsimp annotate page --gold data/sample/plaba.json --output DIR
    medsimp annotate page --src abstract.txt --tgt pls.txt --alignments blocks.txt --output DIR
    medsimp annotate serve --pairs out/filter --sentences out/cochrane --save-dir annotations/
    medsimp annotate ingest annotations/ --output out/annotate/gold
MIMIC-derived inputs (and inputs of unknown lineage) need --show-restricted, are shown under a
do-not-share banner and are served on loopback addresses only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medsimp.cli.args import global_options
from medsimp.cli.commands import annotate_ingest

HELP = "alignment annotator: HTML page / localhost server over aligned documents; ingest exports"
# Params sections this command reads paths from (its inputs are guarded against its --output).
PARAMS_SECTIONS = ("annotate", "align")


def _add_inputs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("documents (one of --pairs, --gold, --src/--tgt)")
    g.add_argument(
        "--pairs", help="align/filter output (pairs/*.parquet) or a builder folder (with --config)"
    )
    g.add_argument("--config", help="builder config to read, e.g. es")
    g.add_argument("--sentences", help="sentence table of --pairs (default: params align.input)")
    g.add_argument("--language", help="only documents whose simple side is in this language")
    g.add_argument("--gold", help="gold file: PLABA json, MC-CLEAN json, wiki-auto tsv, jsonl DocPairs")
    g.add_argument("--gold-format", default="auto", help="auto, plaba, mc_clean, wiki_auto, jsonl")
    g.add_argument("--src", help="complex sentences, one per line (- = stdin)")
    g.add_argument("--tgt", help="simple sentences, one per line (- = stdin)")
    g.add_argument("--alignments", help="Vecalign-format alignments of --src/--tgt")
    p.add_argument("--model", help="CRF model for the crf similarity (default: params align.model)")
    p.add_argument(
        "--show-restricted",
        action="store_true",
        help="show MIMIC-derived (or unknown-lineage) text, under a do-not-share banner",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    page = sub.add_parser(
        "page", help="write the annotator page (<output>/index.html)", parents=[global_options(2)]
    )
    _add_inputs(page)
    page.add_argument("--output", required=True, help="folder for index.html")
    serve = sub.add_parser(
        "serve", help="serve the page; POST /save stores exports in --save-dir", parents=[global_options(2)]
    )
    _add_inputs(serve)
    serve.add_argument("--host", help="address (default: params annotate.host, loopback)")
    serve.add_argument("--port", type=int, help="port (default: params annotate.port; 0 = any free)")
    serve.add_argument("--save-dir", required=True, help="folder for annotations-<annotator>.json exports")
    ing = sub.add_parser("ingest", help=annotate_ingest.HELP, parents=[global_options(2)])
    annotate_ingest.add_arguments(ing)
    ing.set_defaults(_module=annotate_ingest)  # its own module: the annotate_ingest stage's code


def run(args: argparse.Namespace) -> int:
    from medsimp.annotate.stage import Documents, serve, write_page

    names = ("pairs", "config", "sentences", "language", "gold", "gold_format", "src", "tgt", "alignments")
    inputs = Documents(
        **{name: getattr(args, name) for name in names},
        model=args.model,
        show_restricted=args.show_restricted,
    )
    if args.action == "page":
        index = write_page(inputs, args.output, args.params_data, args.params_dir)
        print(f"wrote {index}", file=sys.stderr)
        return 0
    serve(inputs, Path(args.save_dir), args.host, args.port, args.params_data, args.params_dir)
    return 0
