"""Regenerate medsimp/resources/common_words.txt: the top-3000 English lemmas from wordfreq.

Deterministic for the pinned wordfreq and spacy-lookups-data versions:
    python scripts/make_common_words.py [--count 3000] [--output medsimp/resources/common_words.txt]
"""
from __future__ import annotations

import argparse
from importlib.metadata import version

from medsimp.pipelines.selection import common_lemmas


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--output", default="medsimp/resources/common_words.txt")
    args = parser.parse_args()
    header = (f"# top {args.count} English lemmas: wordfreq {version('wordfreq')} top_n_list('en'), "
              f"alphabetic words lemmatised with spacy-lookups-data {version('spacy-lookups-data')}"
              f" (scripts/make_common_words.py)\n")
    with open(args.output, "w", encoding="utf-8") as fh:
        fh.write(header + "".join(w + "\n" for w in common_lemmas(args.count)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
