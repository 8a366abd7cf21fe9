"""Data report of a builder folder (docs/annotate.md): `<output>/index.html` (self-contained),
`report.md`, `report.json`, and one PNG per config in --plots (DVC plots):
    medsimp report builders/multicochrane --sentences out/cochrane/sentences --output out/report/multicochrane --plots plots/report/multicochrane
MIMIC-derived builders show no text unless --show-restricted (then under a do-not-share banner).
The builder and --sentences may be in an object store (read from a local copy), and so may the
report of a builder of public data (docs/refresh.md "Outputs in an object store").
"""

from __future__ import annotations

import argparse
import sys

HELP = (
    "data report of a builder: its shape, outliers, identical pairs, lengths, FKGL, overlap r, "
    "alignment types, semantic types"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "folder",
        help="builder folder, e.g. builders/multicochrane, or the object-store prefix it was published to",
    )
    parser.add_argument(
        "--sentences",
        help="sentence table of a pair builder (deletion and "
        "elaboration ratios), e.g. out/cochrane/sentences",
    )
    parser.add_argument(
        "--output",
        help="report folder (default: out/report/<builder>), or an object-store prefix for a builder of "
        "public data (s3://bucket/x; docs/refresh.md)",
    )
    parser.add_argument("--plots", help="folder for the PNG plots (DVC plots)")
    parser.add_argument(
        "--show-restricted",
        action="store_true",
        help="show example text of a MIMIC-derived builder (do-not-share banner)",
    )


def run(args: argparse.Namespace) -> int:
    from medsimp.report.stage import Inputs, Outputs, Sections, report
    from medsimp.stats import print_summary

    params = args.params_data
    summary = report(
        Inputs(args.folder, args.sentences, args.show_restricted),  # a str: an s3:// prefix stays whole
        Outputs(args.output, args.plots, args.force),
        Sections(params.annotate.report, params.filter, params.readability.syllable_languages, params.beam),
        args.params_dir,
    )
    index = summary.pop("index")
    print_summary(f"medsimp report {summary.pop('builder')}", summary)
    print(f"wrote {index}", file=sys.stderr)
    return 0
