"""Build a QuickUMLS index from MRCONSO.RRF + MRSTY.RRF with QuickUMLS's own installer.

One installation per UMLS language listed in params `umls.languages` that occurs in
MRCONSO (ENG, SPA, FRE, ...), plus `index.json` (fingerprint, term counts). The embedded
default is the demo starter vocabulary in data/sample/umls (NOT UMLS); point `umls.mrconso`
and `umls.mrsty` at a licensed UMLS release (META/) to get the full vocabulary.
"""

from __future__ import annotations

HELP = "build the QuickUMLS concept index (MRCONSO.RRF + MRSTY.RRF)"
# Params sections this command reads paths from (its inputs are guarded against its --output).
PARAMS_SECTIONS = ("umls",)


# The numbers `dvc metrics show` shows for this stage (its full stats are stats.json).
HEADLINE = ("terms",)


def add_arguments(parser) -> None:
    parser.add_argument("--mrconso", help="MRCONSO.RRF (default: params umls.mrconso)")
    parser.add_argument("--mrsty", help="MRSTY.RRF (default: params umls.mrsty)")
    parser.add_argument("--output", help="index directory (default: params umls.index)")
    parser.add_argument("--metrics", help="also write the index summary here (DVC metrics)")


def run(args) -> int:
    from medsimp.atomic import atomic_dir, write_json
    from medsimp.config import resolve_output, resolve_path
    from medsimp.stats import print_summary, write_metrics
    from pipelines.text.umls import build_index, demo_note

    params = args.params_data.umls
    output = args.output or resolve_output(params.index, args.params_dir, "umls.index")
    mrconso = args.mrconso or resolve_path(params.mrconso, args.params_dir)
    mrsty = args.mrsty or resolve_path(params.mrsty, args.params_dir)
    with atomic_dir(output) as tmp:
        manifest = build_index(
            mrconso,
            mrsty,
            tmp,
            list(params.languages),
            lowercase=params.lowercase,
            normalize_unicode=params.normalize_unicode,
        )
        summary = {
            "fingerprint": manifest["fingerprint"],
            "terms": {lat: v["terms"] for lat, v in manifest["languages"].items()},
            "skipped_languages": manifest["skipped_languages"],
        }
        write_json(tmp / "stats.json", summary)
        if args.metrics:
            write_metrics(args.metrics, summary, HEADLINE)
    print_summary("medsimp umls-index", summary["terms"], demo_note(manifest))
    return 0
