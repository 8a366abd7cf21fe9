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
import typing
from pathlib import Path

from medsimp.cli.args import global_options
from medsimp.cli.commands import annotate_ingest

if typing.TYPE_CHECKING:
    from medsimp.params_schema import Params

HELP = "alignment annotator: HTML page / localhost server over aligned documents; ingest exports"
# Params sections this command reads paths from (its inputs are guarded against its --output).
PARAMS_SECTIONS = ("annotate", "align")


def _inputs(p: argparse.ArgumentParser) -> None:
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
    _inputs(page)
    page.add_argument("--output", required=True, help="folder for index.html")
    serve = sub.add_parser(
        "serve", help="serve the page; POST /save stores exports in --save-dir", parents=[global_options(2)]
    )
    _inputs(serve)
    serve.add_argument("--host", help="address (default: params annotate.host, loopback)")
    serve.add_argument("--port", type=int, help="port (default: params annotate.port; 0 = any free)")
    serve.add_argument("--save-dir", required=True, help="folder for annotations-<annotator>.json exports")
    ing = sub.add_parser("ingest", help=annotate_ingest.HELP, parents=[global_options(2)])
    annotate_ingest.add_arguments(ing)
    ing.set_defaults(_module=annotate_ingest)  # its own module: the annotate_ingest stage's code


def _documents(args, params: Params) -> tuple[list[dict], list[str] | None, str]:
    from medsimp.annotate import documents
    from medsimp.config import resolve_path
    from medsimp.errors import UsageError
    from medsimp.lineage import read_lineage, union

    given = [x for x in (args.pairs, args.gold, args.src or args.tgt) if x]
    if len(given) != 1 or (args.src or args.tgt) and not (args.src and args.tgt):
        raise UsageError("give exactly one of --pairs, --gold, or --src with --tgt")
    if args.pairs:
        sentences = args.sentences or resolve_path(params.align.input, args.params_dir)
        folder = documents.pair_folder(Path(args.pairs), args.config)
        docs, counts = documents.from_pairs(args.pairs, sentences, config=args.config, language=args.language)
        if counts["unmatched_pairs"]:
            print(
                f"note: {counts['unmatched_pairs']} pairs name sentences that are not in "
                f"{sentences} (left out)",
                file=sys.stderr,
            )
        lineage = union(read_lineage(folder), read_lineage(Path(sentences)))
        title = f"{Path(args.pairs).name}{'/' + args.config if args.config else ''}"
    elif args.gold:
        rejects: list[dict] = []
        docs, lineage = documents.from_gold(args.gold, args.gold_format, rejects)
        for r in rejects:
            print(f"note: left out {r['locator']} ({r['reason'].rsplit(': ', 1)[-1]})", file=sys.stderr)
        title = Path(args.gold).name
    else:
        docs, lineage = (
            documents.from_vecalign(args.src, args.tgt, args.alignments, args.language or "en"),
            None,
        )
        title = f"{Path(args.src).name if args.src != '-' else 'stdin'} / {Path(args.tgt).name if args.tgt != '-' else 'stdin'}"
    return docs, (list(lineage) if lineage is not None else None), title


def _page(args, params: Params, serve_host: str | None = None) -> tuple[str, dict]:
    """The page and its data; `serve_host`: checked for the data's lineage before any scoring."""
    from medsimp.annotate.page import check_bind, page_data, render
    from medsimp.annotate.similarity import Scorer
    from medsimp.config import cache_path, resolve_path
    from medsimp.errors import InputError, Refused
    from medsimp.lineage import is_restricted

    docs, lineage, title = _documents(args, params)
    restricted = is_restricted(lineage)
    if restricted and not args.show_restricted:
        raise Refused(
            "the input is MIMIC-derived or of unknown lineage: its text is shown only "
            "with --show-restricted (and never shared)"
        )
    if serve_host is not None:
        check_bind(serve_host, 0, restricted)
    if not docs:
        raise InputError("no documents to annotate")
    try:
        model = args.model or resolve_path(params.align.model, args.params_dir)
        scorer = Scorer(
            params.annotate.similarities, params.align, cache_path(params, args.params_dir), model
        )
        docs = [scorer.add(d) for d in docs]
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(str(exc).splitlines()[0]) from None
    save_url = "/save" if serve_host is not None else None
    return render(docs, title, lineage, save_url), page_data(docs, title, lineage, save_url)


def run(args: argparse.Namespace) -> int:
    from medsimp.atomic import atomic_dir

    params = args.params_data
    if args.action == "page":
        html, data = _page(args, params)
        known = data["lineage"]  # None: unknown lineage, which a marker without lineage means too
        with atomic_dir(args.output, lineage=tuple(known) if known is not None else None) as tmp:
            (tmp / "index.html").write_text(html, encoding="utf-8")
        print(f"wrote {Path(args.output) / 'index.html'}", file=sys.stderr)
        return 0
    from medsimp.annotate.page import check_bind, make_server, prepare_save_dir

    host = str(args.host or params.annotate.host)
    port = params.annotate.port if args.port is None else args.port
    check_bind(host, port, restricted=False)  # bad flags fail before the page is built
    prepare_save_dir(Path(args.save_dir), create=False)
    html, data = _page(args, params, serve_host=host)
    server = make_server(html, host, port, Path(args.save_dir), data=data)
    print(
        f"serving {server.url} (Ctrl+C stops; the token in the address is this session's key: "
        "share it only with the annotators)",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
