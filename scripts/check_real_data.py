"""Parse the real Devaraj Cochrane validation files and the PLABA dev file; print counts.

Also reports how many MultiCochrane gold sentences the sentence splitter keeps whole.

    python scripts/check_real_data.py --data ../shared/data

Uses the same core parsers as `medsimp cochrane` / `medsimp plaba`; exits 0 and says so
when the data folder is absent. Exit status 1 when any record is rejected.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from medsimp.pipelines.cochrane_formats import FormatError, join_reviews, read_devaraj  # noqa: E402
from medsimp.pipelines.plaba import document_sentence_rows, gold_pairs, iter_documents  # noqa: E402
from medsimp.pipelines.sentence_rows import document_rows  # noqa: E402

# A sentence that ends inside a statistic: an open bracket, or "95% CI 0." / "RR 2." left dangling.
_BROKEN = re.compile(r"(\([^)]*$)|(\b(?:CI|RR|OR|MD|SMD|HR)\s+-?\d+\.$)")


def check_cochrane(folder: str) -> Counter:
    counts: Counter = Counter()
    by_doi: dict[str, list] = {}
    for prefix in sorted({os.path.join(folder, n.rsplit(".", 1)[0]) for n in os.listdir(folder)
                          if n.endswith(".source")}):
        for _, rec in read_devaraj(prefix):
            counts["read"] += 1
            if isinstance(rec, FormatError):
                counts[f"rejected.{rec.reason}"] += 1
                counts["rejected"] += 1
            else:
                by_doi.setdefault(rec.doi, []).append(rec)
    for doi, recs in sorted(by_doi.items()):
        review, filtered, orphans = join_reviews(doi, recs)
        counts["filtered"] += len(filtered)
        counts["rejected"] += len(orphans)
        if review is None:
            continue
        counts["reviews"] += 1
        counts["kept"] += len(recs) - len(filtered) - len(orphans)
        for side, rec, sections in [("complex", review.abstract, review.abstract.abstract),
                                    ("simple", review.pls["en"], review.pls["en"].pls)]:
            rows = document_rows("cochrane", doi, side, "en", [(s.heading, s.text) for s in sections],
                                 rec.locator)
            counts[f"sentences.{side}"] += len(rows)
            counts["sentences_ending_inside_statistic"] += sum(bool(_BROKEN.search(r["text"])) for r in rows)
    return counts


def check_plaba(path: str) -> Counter:
    counts: Counter = Counter()
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    for locator, doc in iter_documents(data, os.path.basename(path)):
        counts["read"] += 1
        if isinstance(doc, FormatError):
            counts["rejected"] += 1
            counts[f"rejected.{doc.reason}"] += 1
            continue
        counts["kept"] += 1
        rows = document_sentence_rows(doc, locator)
        counts["sentences.complex"] += sum(r["side"] == "complex" for r in rows)
        counts["sentences.simple"] += sum(r["side"] == "simple" for r in rows)
        for pair in gold_pairs(doc, rows):
            counts[f"pairs.{pair['alignment']}"] += 1
    return counts


def check_multicochrane(folder: str) -> Counter:
    """How many MultiCochrane gold sentences (aligned by the authors) our splitter keeps whole."""
    from medsimp.pipelines.multilingual_sentences import split_sentences

    counts: Counter = Counter()
    for name, fields, language in (("en-test-with-doi.json", ("input", "gold"), "en"),
                                   ("fr-test.json", ("gold",), "fr")):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as fh:
            for item in json.load(fh):
                for field in fields:
                    counts[f"{language}.sentences"] += 1
                    counts[f"{language}.kept_whole"] += len(split_sentences(item[field], language)) == 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data")
    args = parser.parse_args()
    cochrane, plaba = os.path.join(args.data, "cochrane"), os.path.join(args.data, "plaba", "dev.json")
    if not os.path.isdir(cochrane) and not os.path.exists(plaba):
        print(f"{args.data}: no real data here, skipping")
        return 0
    rejected = 0
    checks = (("cochrane (Devaraj)", check_cochrane, cochrane), ("plaba", check_plaba, plaba),
              ("multicochrane splitting", check_multicochrane, os.path.join(args.data, "multicochrane")))
    for name, check, path in checks:
        if not os.path.exists(path):
            print(f"{name}: {path} absent, skipped")
            continue
        counts = check(path)
        rejected += counts["rejected"]
        print(f"{name}: " + ", ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    return 1 if rejected else 0


if __name__ == "__main__":
    sys.exit(main())
