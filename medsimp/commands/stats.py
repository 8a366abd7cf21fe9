"""Print corpus statistics of a linked table (MSD paper Table 2 style).

Sentences, vocabulary, concept vocabulary, tokens/concepts per sentence and mean
readability (FKGL, Gunning fog, Coleman-Liau, ARI) for the expert (complex) and layman
(simple) sides, and their ratio.
"""

from __future__ import annotations

HELP = "corpus statistics table (expert vs layman) of a linked table"


def add_arguments(parser) -> None:
    parser.add_argument("--input", required=True, help="out/linked/<source>")
    parser.add_argument("--language", help="only sentences in this language (ISO 639-1)")
    parser.add_argument("--json", action="store_true", help="print canonical JSON instead of a table")


def run(args) -> int:
    import sys

    from medsimp.outputs import canonical_json
    from medsimp.stats_table import corpus_stats, load_rows, print_table

    table = corpus_stats(load_rows(args.input, args.language))
    if args.json:
        sys.stdout.write(canonical_json(table))
    else:
        print_table(f"{args.input}" + (f" ({args.language})" if args.language else ""), table)
    return 0
