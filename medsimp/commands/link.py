"""Attach UMLS concepts (QuickUMLS) and readability to every sentence of a sentence table.

--input is a job output (out/<source>, holding sentences/) or a sentence table directory.
Writes OUTPUT/part-*.parquet (sentence_id, concepts, readability, ...),
OUTPUT/documents/ (readability per document side), OUTPUT/dead_letter, OUTPUT/stats.json.
Languages without an index get no concepts (counted as sentences_without_index).
"""

from __future__ import annotations

from medsimp.cli_args import warm_beam_workers

HELP = "UMLS concept linking + readability per sentence and document side"


def add_arguments(parser) -> None:
    from medsimp.cli_args import add_beam_arguments

    parser.add_argument("--input", required=True, help="out/<source> or a sentence table directory")
    parser.add_argument("--output", required=True, help="output directory (out/linked/<source>)")
    parser.add_argument("--index", help="QuickUMLS index directory (default: params umls.index)")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


@warm_beam_workers
def run(args) -> int:
    from medsimp.config import resolve_path, section
    from medsimp.outputs import atomic_dir
    from medsimp.params_schema import default
    from medsimp.pipelines import link

    params = section(args.params_data, "link")
    matcher = {
        k: params[k]
        for k in (
            "overlapping_criteria",
            "threshold",
            "similarity_name",
            "window",
            "min_match_length",
            "accepted_semtypes",
            "reject_negation_flips",
        )
        if k in params
    }
    cache_root = section(args.params_data, "cache").get("dir")
    index = args.index or resolve_path(
        section(args.params_data, "umls").get("index") or default("umls.index"), args.params_dir
    )
    with atomic_dir(args.output) as tmp:
        link.run(
            args.input,
            str(tmp),
            index,
            matcher,
            section(args.params_data, "readability"),
            cache_root,
            int(params.get("num_shards", 1)),
            section(args.params_data, "beam"),
            args.beam_arg,
            args.metrics,
        )
    return 0
