"""Score sentences with MedLane's Algorithm 1 (one sentence per input line) and print one JSON
line per sentence: {"text", "n", "abb", "unc", "ratio", "keep"}. Use it to tune lexicons.

Lexicons: --abbreviations takes JSON/TSV (abbreviation -> expansions), a MedLane pickle or a
plain list; --common-words a plain list or JSON list. Defaults and thresholds come from the
params `notes:` section.
"""

from __future__ import annotations

import argparse
import os

HELP = "score sentences with MedLane's Algorithm 1 (n, abb, unc, ratio, keep) as JSON lines"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", default="-", help="sentences, one per line (- = stdin)")
    parser.add_argument("--abbreviations", help="abbreviation lexicon (default: params notes.abbreviations)")
    parser.add_argument("--common-words", help="common-word list (default: params notes.common_words)")
    parser.add_argument(
        "--case-insensitive",
        action="store_true",
        help="match abbreviations ignoring case (default: params notes.case_sensitive)",
    )


def run(args: argparse.Namespace) -> int:

    from pipelines.text.notes import score_lines

    update: dict = {}
    if args.abbreviations:  # flags are relative to the current folder, params to theirs
        update["abbreviations"] = os.path.abspath(args.abbreviations)
    if args.common_words:
        update["common_words"] = os.path.abspath(args.common_words)
    if args.case_insensitive:
        update["case_sensitive"] = False
    score_lines(args.params_data.notes.model_copy(update=update), args.params_dir, args.file)
    return 0
