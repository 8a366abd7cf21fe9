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
    import sys

    from medsimp.atomic import canonical_json
    from medsimp.corpora.stats import corpus_stats, language_rows, languages, load_rows, print_table
    from medsimp.errors import InputError

    rows = load_rows(args.input)
    langs = [args.language] if args.language else languages(rows)
    if args.language and args.language not in languages(rows):
        raise InputError(
            f"{args.input} has no layman sentences in {args.language!r} (it has {', '.join(languages(rows))})"
        )
    tables = {lang: corpus_stats(language_rows(rows, lang)) for lang in langs}
    if args.json:  # one language: its table; several: one table per language, never pooled
        sys.stdout.write(canonical_json(tables[langs[0]] if len(langs) == 1 else tables))
    else:
        for lang, table in tables.items():
            print_table(f"{args.input} ({lang})", table)
    return 0
