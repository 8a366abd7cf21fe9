"""The project's English development gold: hand alignments of 10 Devaraj et al. validation
reviews (`COCHRANE_DEV`, 70 pairs), placed on the documents rebuilt from a folder of Devaraj et
al.'s files (`val.source`, `val.target`, `val.doi`; the text is never in the repository).

Chosen at random (seed 37) by the session that wrote scripts/aligner_designs.py (not independent
annotators). Aligner designs are chosen on them (scripts/aligner_designs.py) and the aligner's
calibration is fitted on them (`medsimp align calibrate --gold DIR`, `alignment.calibration`);
self-training never labels them (`alignment.selftrain.DEV_REVIEWS`). Never the 22 MC-CLEAN
English test reviews.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alignment.gold import DocPair
from medsimp.reviews import review_key
from medsimp.text import multilingual

FILES = ("val.source", "val.target", "val.doi")
DESCRIPTION = "10 hand-aligned Devaraj et al. validation reviews (alignment.devgold COCHRANE_DEV, 70 pairs)"


def is_dev_folder(path: str | Path) -> bool:
    """Whether `path` is a folder of Devaraj et al.'s validation files."""
    return Path(path).is_dir() and all((Path(path) / name).is_file() for name in FILES)


def dev_gold(folder: str | Path) -> list[DocPair]:
    """COCHRANE_DEV on the validation reviews of `folder` (ValueError says what does not fit)."""
    return cochrane_dev(real_reviews(Path(folder)))


# Hand alignments (complex index, simple index) of 10 random validation reviews
# (random.Random(37).sample(range(411), 10)), sentences split by medsimp.text.multilingual;
# "n" is (complex, simple) sentence counts, checked when the documents are rebuilt.
COCHRANE_DEV: dict[str, dict] = {
    "10.1002/14651858.CD006647.pub4": {"n": (13, 7), "pairs": [(2, 1), (9, 1), (11, 3), (8, 4), (12, 4)]},
    "10.1002/14651858.CD009286.pub3": {
        "n": (16, 13),
        "pairs": [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (7, 6), (8, 7), (9, 8), (13, 10)]
        + [(14, 11), (15, 12), (11, 12)],
    },
    "10.1002/14651858.CD008462.pub3": {
        "n": (13, 7),
        "pairs": [(0, 0), (10, 1), (7, 2), (8, 2), (9, 5), (10, 6)],
    },
    "10.1002/14651858.CD006949.pub2": {
        "n": (11, 9),
        "pairs": [(0, 0), (1, 2), (2, 3), (3, 3), (7, 6), (8, 7), (9, 7), (10, 8)],
    },
    "10.1002/14651858.CD006414.pub2": {"n": (8, 5), "pairs": [(0, 0), (1, 1), (1, 2), (7, 4)]},
    "10.1002/14651858.CD005543.pub2": {"n": (10, 6), "pairs": [(7, 2), (5, 3), (6, 3), (8, 4), (9, 5)]},
    "10.1002/14651858.CD012236.pub2": {
        "n": (22, 11),
        "pairs": [(0, 1), (1, 2), (8, 4), (20, 4), (9, 5), (10, 6), (21, 8), (19, 9), (20, 10), (21, 10)],
    },
    "10.1002/14651858.CD003300.pub3": {"n": (11, 4), "pairs": [(0, 0), (3, 1), (7, 2), (10, 3)]},
    "10.1002/14651858.CD010871.pub2": {
        "n": (19, 16),
        "pairs": [(0, 0), (2, 3), (1, 4), (12, 9), (14, 9), (3, 10), (7, 10), (13, 12), (14, 13)],
    },
    "10.1002/14651858.CD010456.pub2": {
        "n": (11, 8),
        "pairs": [(0, 0), (6, 3), (8, 3), (9, 5), (6, 6), (8, 6)],
    },
}


def real_reviews(folder: Path) -> list[DocPair]:
    """Devaraj et al.'s validation reviews as unlabelled DocPairs, split as `medsimp cochrane` does."""
    src, tgt, dois = (
        (folder / f"val.{side}").read_text(encoding="utf-8").splitlines()
        for side in ("source", "target", "doi")
    )
    return [
        DocPair(
            doi.strip(),
            [s.text for s in multilingual.split_sentences(a, "en")],
            [s.text for s in multilingual.split_sentences(b, "en")],
            frozenset(),
            review_key(doi.strip()),
        )
        for a, b, doi in zip(src, tgt, dois)
    ]


def cochrane_dev(reviews: Sequence[DocPair]) -> list[DocPair]:
    """COCHRANE_DEV placed on the rebuilt validation documents."""
    by_doi = {d.doc_id: d for d in reviews}
    out = []
    for doi, lab in COCHRANE_DEV.items():
        d = by_doi.get(doi)
        if d is None:
            raise ValueError(f"no review {doi} among the validation reviews")
        if (len(d.complex), len(d.simple)) != tuple(lab["n"]):
            raise ValueError(f"{doi}: sentence counts {len(d.complex), len(d.simple)} != {lab['n']}")
        out.append(DocPair(doi, d.complex, d.simple, frozenset(map(tuple, lab["pairs"])), d.group))
    return out
