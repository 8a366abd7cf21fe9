"""Attach UMLS concepts (QuickUMLS) and readability to every sentence of a sentence table.

--input is a job output (out/<source>, holding sentences/) or a sentence table directory.
Writes OUTPUT/part-*.parquet (sentence_id, concepts, readability, ...),
OUTPUT/documents/ (readability per document side), OUTPUT/dead_letter, OUTPUT/stats.json.
Languages without an index get no concepts (counted as sentences_without_index).
"""

from __future__ import annotations

HELP = "UMLS concept linking + readability per sentence and document side"
# Params sections this command reads paths from (its inputs are guarded against its --output).
PARAMS_SECTIONS = ("link", "umls")


def add_arguments(parser) -> None:
    from medsimp.cli.args import add_beam_arguments

    parser.add_argument("--input", required=True, help="out/<source> or a sentence table directory")
    parser.add_argument("--output", required=True, help="output directory (out/linked/<source>)")
    parser.add_argument("--index", help="QuickUMLS index directory (default: params umls.index)")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


def run(args) -> int:
    from medsimp.atomic import atomic_dir
    from medsimp.config import cache_path, resolve_path
    from pipelines.jobs import link
    from pipelines.jobs.store import use_store
    from pipelines.text.umls import installation, read_manifest

    cache_root = cache_path(args.params_data, args.params_dir)
    umls = args.params_data.umls
    index = args.index or resolve_path(umls.index, args.params_dir)
    # the index's QuickUMLS store, rebuilt from params umls.mrconso/mrsty if the cache lost it
    installation(
        read_manifest(index),
        (resolve_path(umls.mrconso, args.params_dir), resolve_path(umls.mrsty, args.params_dir)),
    )
    use_store(args.params_data.beam, args.beam_arg, {"--input": args.input})  # an s3:// table
    with atomic_dir(args.output) as tmp:
        link.run(
            args.input,
            str(tmp),
            index,
            args.params_data.link,
            args.params_data.readability,
            cache_root,
            args.params_data.link.num_shards,
            args.params_data.beam,
            args.beam_arg,
            args.metrics,
        )
    return 0
