"""Check Algorithm 1 and the shipped lexicons on MedLane's public sample (real MIMIC-derived
sentences the MedLane authors selected with their lexicons).

    python scripts/check_notes_selection.py --data ../shared/data

Reports (counts only, never text): how many MedLane source sentences our selection keeps
(MedLane's text is lower-cased, so abbreviations match case-insensitively), why the rest
fail, and how many abbreviation types annotated in the references (``abbr[full form]``)
our abbreviation dictionary holds, and whether the job's tokenizer (NLTK's rules on stdlib
`re`) tokenises every sentence exactly as stock NLTK does. Skips cleanly when the data folder is absent.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data")
    args = parser.parse_args()
    path = Path(args.data) / "medlane" / "test-sample.txt"
    if not path.exists():
        print(f"skip: {path} not found")
        return 0
    from medsimp import resources
    from pipelines.text.selection import Selector, load_abbreviations, load_common_words

    abbreviations = load_abbreviations(resources.path("abbreviations.json"))
    common = load_common_words(resources.path("common_words.txt"))
    selector = Selector(abbreviations, common, case_sensitive=False)
    lines = path.read_text(encoding="utf-8").split("\n")
    sources = [lines[i] for i in range(0, len(lines), 6) if lines[i].strip()]
    annotated = {
        m.group(1).lower()
        for ln in lines
        if ln[:2] in ("1 ", "2 ", "3 ", "4 ")
        for m in re.finditer(r"(\S+)\[[^\]]*\]", ln)
    }
    why = Counter()
    for s in sources:
        f = selector.features(s)
        why["kept" if f.keep else "n<10" if f.n < 10 else "ratio<0.1" if f.ratio < 0.1 else "ratio>0.5"] += 1
    from nltk.tokenize import NLTKWordTokenizer

    from medsimp.text.words import word_tokenizer

    stock = NLTKWordTokenizer()
    differ = sum(word_tokenizer().tokenize(s) != stock.tokenize(s) for s in sources)
    lower = {a.lower() for a in abbreviations}
    covered = sum(a in lower for a in annotated)
    print(f"MedLane test sample: {len(sources)} source sentences")
    print(
        "  Algorithm 1 (case-insensitive, shipped lexicons): "
        + ", ".join(f"{k}={v}" for k, v in sorted(why.items()))
    )
    print(
        f"  annotated abbreviation types: {len(annotated)}; in medsimp/resources/abbreviations.json: "
        f"{covered} ({covered / max(len(annotated), 1):.0%})"
    )
    print(f"  sentences tokenised differently by the job's tokenizer and stock NLTK: {differ}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
