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

    parser.add_argument(
        "--input",
        required=True,
        help="out/<source> or a sentence table directory (or the object-store prefix a stage published to)",
    )
    parser.add_argument(
        "--output",
        required=True,
        help="output directory (out/linked/<source>), or an object-store prefix for public data "
        "(s3://bucket/x; docs/refresh.md)",
    )
    parser.add_argument("--index", help="QuickUMLS index directory (default: params umls.index)")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


def run(args) -> int:
    from medsimp.cli.source_job import stage_input, stage_output
    from medsimp.config import cache_path, resolve_path
    from pipelines.jobs import link
    from pipelines.text.umls import installation, read_manifest

    cache_root = cache_path(args.params_data, args.params_dir)
    umls = args.params_data.umls
    index = args.index or resolve_path(umls.index, args.params_dir)
    table = stage_input(args, {"--input": args.input}, args.beam_arg)["--input"]  # an s3:// table
    output = stage_output(args, args.output, {"--input": args.input})  # public data only in a store
    # the index's QuickUMLS store, rebuilt from params umls.mrconso/mrsty if the cache lost it
    installation(
        read_manifest(index),
        (resolve_path(umls.mrconso, args.params_dir), resolve_path(umls.mrsty, args.params_dir)),
    )
    with output as tmp:
        link.run(
            table,
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
