"""`medsimp annotate page` and `annotate serve` as stage functions: the documents to annotate
(one of a pair table, a gold file, or sentence files with their alignments), scored by the
similarities of params `annotate`, as the annotator page; `write_page` writes it, `serve` serves
it on localhost. The command (`medsimp.cli.commands.annotate`) parses its flags, builds
`Documents` and calls one of them. (`annotate ingest` is `medsimp.annotate.ingest.ingest`.)"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from medsimp.annotate import documents
from medsimp.annotate.page import check_bind, make_server, page_data, prepare_save_dir, render
from medsimp.annotate.similarity import Scorer
from medsimp.atomic import atomic_dir
from medsimp.config import cache_path, resolve_path
from medsimp.errors import InputError, Refused, UsageError
from medsimp.lineage import is_restricted, read_lineage, union
from medsimp.params_schema import Params


@dataclass(frozen=True)
class Documents:
    """What to annotate (one of `pairs`, `gold`, or `src` with `tgt`) and how to show it."""

    pairs: str | None = None  # align/filter output or a builder folder (with `config`)
    config: str | None = None
    sentences: str | None = None  # the sentence table of `pairs` (None: params align.input)
    language: str | None = None  # only documents whose simple side is in this language
    gold: str | None = None
    gold_format: str = "auto"
    src: str | None = None
    tgt: str | None = None
    alignments: str | None = None  # Vecalign-format alignments of src/tgt
    model: str | None = None  # the CRF model of the crf similarity (None: params align.model)
    show_restricted: bool = False


def read_documents(inputs: Documents, params: Params, base: str) -> tuple[list[dict], list[str] | None, str]:
    """(documents, their lineage or None when unknown, the page's title)."""
    given = [x for x in (inputs.pairs, inputs.gold, inputs.src or inputs.tgt) if x]
    if len(given) != 1 or (inputs.src or inputs.tgt) and not (inputs.src and inputs.tgt):
        raise UsageError("give exactly one of --pairs, --gold, or --src with --tgt")
    if inputs.pairs:
        sentences = inputs.sentences or resolve_path(params.align.input, base)
        folder = documents.pair_folder(Path(inputs.pairs), inputs.config)
        docs, counts = documents.from_pairs(
            inputs.pairs, sentences, config=inputs.config, language=inputs.language
        )
        if counts["unmatched_pairs"]:
            print(
                f"note: {counts['unmatched_pairs']} pairs name sentences that are not in "
                f"{sentences} (left out)",
                file=sys.stderr,
            )
        lineage = union(read_lineage(folder), read_lineage(Path(sentences)))
        title = f"{Path(inputs.pairs).name}{'/' + inputs.config if inputs.config else ''}"
    elif inputs.gold:
        rejects: list[dict] = []
        docs, lineage = documents.from_gold(inputs.gold, inputs.gold_format, rejects)
        for r in rejects:
            print(f"note: left out {r['locator']} ({r['reason'].rsplit(': ', 1)[-1]})", file=sys.stderr)
        title = Path(inputs.gold).name
    else:
        assert inputs.src is not None and inputs.tgt is not None  # checked above
        docs, lineage = (
            documents.from_vecalign(inputs.src, inputs.tgt, inputs.alignments, inputs.language or "en"),
            None,
        )
        title = f"{Path(inputs.src).name if inputs.src != '-' else 'stdin'} / {Path(inputs.tgt).name if inputs.tgt != '-' else 'stdin'}"
    return docs, (list(lineage) if lineage is not None else None), title


def page(inputs: Documents, params: Params, base: str, serve_host: str | None = None) -> tuple[str, dict]:
    """The page and its data; `serve_host`: checked for the data's lineage before any scoring."""
    docs, lineage, title = read_documents(inputs, params, base)
    restricted = is_restricted(lineage)
    if restricted and not inputs.show_restricted:
        raise Refused(
            "the input is MIMIC-derived or of unknown lineage: its text is shown only "
            "with --show-restricted (and never shared)"
        )
    if serve_host is not None:
        check_bind(serve_host, 0, restricted)
    if not docs:
        raise InputError("no documents to annotate")
    try:
        model = inputs.model or resolve_path(params.align.model, base)
        scorer = Scorer(params.annotate.similarities, params.align, cache_path(params, base), model)
        docs = [scorer.add(d) for d in docs]
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(str(exc).splitlines()[0]) from None
    save_url = "/save" if serve_host is not None else None
    return render(docs, title, lineage, save_url), page_data(docs, title, lineage, save_url)


def write_page(inputs: Documents, out: str, params: Params, base: str) -> Path:
    """Write the page to `<out>/index.html` (the folder carries the documents' lineage). -> the page."""
    html, data = page(inputs, params, base)
    known = data["lineage"]  # None: unknown lineage, which a marker without lineage means too
    with atomic_dir(out, lineage=tuple(known) if known is not None else None) as tmp:
        (tmp / "index.html").write_text(html, encoding="utf-8")
    return Path(out) / "index.html"


def serve(
    inputs: Documents, save_dir: Path, host: str | None, port: int | None, params: Params, base: str
) -> None:
    """Serve the page on `host:port` (None: params annotate.host / annotate.port) until
    interrupted; each annotator's export is saved in `save_dir`."""
    host = str(host or params.annotate.host)
    port = params.annotate.port if port is None else port
    check_bind(host, port, restricted=False)  # bad flags fail before the page is built
    prepare_save_dir(save_dir, create=False)
    html, data = page(inputs, params, base, serve_host=host)
    server = make_server(html, host, port, save_dir, data=data)
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
