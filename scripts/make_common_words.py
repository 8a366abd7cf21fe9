"""Regenerate medsimp/resources/common_words.txt: a stand-in for EF's top-3000 English word list
(the list MedLane's Algorithm 1 and CWR use), made of wordfreq's top-3000 alphabetic lemmas.

Deterministic for the pinned wordfreq and spacy-lookups-data versions:
    python scripts/make_common_words.py [--count 3000] [--output medsimp/resources/common_words.txt]
"""

from __future__ import annotations

import argparse
from importlib.metadata import version

from pipelines.text.selection import common_lemmas


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--output", default="medsimp/resources/common_words.txt")
    args = parser.parse_args()
    header = (
        f"# STAND-IN for EF's top-3000 English word list (Luo et al. 2022 use EF's list; set "
        f"notes.common_words to it). This list: top {args.count} alphabetic English lemmas, "
        f"wordfreq {version('wordfreq')} top_n_list('en') lemmatised with spacy-lookups-data "
        f"{version('spacy-lookups-data')}, no digits (scripts/make_common_words.py)\n"
    )
    with open(args.output, "w", encoding="utf-8") as fh:
        fh.write(header + "".join(w + "\n" for w in common_lemmas(args.count)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
