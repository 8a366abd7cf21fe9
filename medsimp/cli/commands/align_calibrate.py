"""`medsimp align calibrate`: the CRF's probabilities calibrated on held-out gold, written beside
the model (`<model>.calibration.json`), by `alignment.stage.calibrate`."""

from __future__ import annotations

import argparse
import sys

HELP = "calibrate the CRF's probabilities on held-out gold; writes <model>.calibration.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gold",
        required=True,
        help="gold the model never trained on: a folder of Devaraj et al.'s val.source/target/doi "
        "(the 10 hand-aligned dev reviews) or a gold file as align train reads",
    )
    parser.add_argument("--gold-format", default=None, help="auto, jsonl, plaba, mc_clean, wiki_auto")
    parser.add_argument("--model", help="CRF model directory (default: params align.model)")


def run(args: argparse.Namespace) -> int:
    """Fit the model's calibration on held-out gold and write it beside the model."""
    from alignment.calibration import filter_rule
    from alignment.stage import calibrate
    from medsimp.config import cache_path, resolve_path, shown_path
    from medsimp.stats import print_summary

    params = args.params_data.align
    model_dir = args.model or resolve_path(params.model, args.params_dir)
    flt = args.params_data.filter  # the rule the kept rows pass, as the filter stage applies it
    target, summary = calibrate(
        params,
        filter_rule(flt.threshold, flt.comparison, flt.aligner_floor(), flt.drop_copies, flt.copy_overlap),
        model_dir,
        args.gold,
        args.gold_format,
        cache_path(args.params_data, args.params_dir) or None,
        lambda path: shown_path(path, args.params_dir),
    )
    print_summary("medsimp align calibrate", summary)
    print(f"wrote {target}", file=sys.stderr)
    return 0
