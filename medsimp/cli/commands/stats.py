"""Print corpus statistics of a linked table (MSD paper Table 2 style).

Sentences, vocabulary, concept vocabulary, tokens/concepts per sentence and mean
readability (FKGL, Gunning fog, Coleman-Liau, ARI) for the expert (complex) and layman
(simple) sides, and their ratio.
"""

from __future__ import annotations

HELP = "corpus statistics table (expert vs layman) of a linked table"


def add_arguments(parser) -> None:
    parser.add_argument("--input", required=True, help="out/linked/<source>")
    parser.add_argument(
        "--language",
        help="layman sentences in this language (ISO 639-1) against their expert sentences; "
        "without it, a table with several languages is reported per language",
    )
    parser.add_argument("--json", action="store_true", help="print canonical JSON instead of a table")


def run(args) -> int:
    from medsimp.corpora.stats import show

    show(args.input, args.language, args.json)
    return 0
