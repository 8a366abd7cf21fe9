"""MultiCochrane builder: aligned Cochrane abstract -> plain-language sentence pairs per language.

Inputs (params `build.multicochrane`): the filtered pairs (`out/filter/pairs`, see
docs/architecture.md "Aligned pairs"), the Cochrane sentence table (sentence texts,
used to place concept spans in joined multi-sentence sides) and the linked table
(`out/linked/cochrane`: UMLS concepts and readability per sentence).

Configs: `<lang>` holds every aligned pair of language `<lang>` with its overlap `r`
and `keep` flag; `<lang>-filtered` has the same validation/test splits and a training
split of only the pairs with `keep` true (the paper filters the training set only;
`filter_splits` widens it). Splits are by review (`medsimp.reviews.review_key`), the same in
every language, from the most authoritative source at hand (`assign_splits`): MC-CLEAN's 22
English test reviews -> test and the calibration's dev reviews -> validation; the input's own
split (the sentence table's `split` column); `mc_human.json`'s split fields; then the hash:
seeded by `unit_hash` (documented as NOT MC-CLEAN), or, when `mc_human` points at
MultiCochrane's `mc_human.json`, MC-CLEAN reviews filling 22 test and 5 validation with their
human (gold) alignments, the rest train; in those reviews every other language's pairs are
the English gold composed with the PLS bridge (`bridge_gold`). Sources that disagree about a
review are refused unless `allow_split_conflicts`. Gold rows go through the overlap filter.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from alignment.overlap import describe_cost, drop_cost, filter_row
from medsimp.corpora.common import (
    CHUNK_ROWS,
    BuildError,
    BuiltDataset,
    HubCard,
    StreamedSplit,
    chunked_tables,
    cover_splits,
    iter_parquet_dir,
    seeded_split,
    side_annotations,
    unit_hash,
)
from medsimp.corpora.scratch import Scratch, number_key
from medsimp.errors import InputError
from medsimp.params_schema import BuildMulticochrane, Filter
from medsimp.reviews import DEV_REVIEWS, MC_CLEAN_TEST_REVIEWS, review_key
from medsimp.schemas import CONCEPT, READABILITY
from medsimp.stats import dead_letter
from medsimp.text.copies import row_copy_kind

PAIR_COLUMNS = [
    "pair_id",
    "doi",
    "language",
    "complex_ids",
    "simple_ids",
    "pivot_ids",
    "complex_text",
    "simple_text",
    "pivot_text",
    "section",
    "method",
    "crf_score",
    "vecalign_score",
    "overlap_r",
    "keep",
]

SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("doi", pa.string()),
        ("language", pa.string()),
        ("complex_text", pa.string()),
        ("simple_text", pa.string()),
        ("pivot_text", pa.string()),
        ("complex_ids", pa.list_(pa.string())),
        ("simple_ids", pa.list_(pa.string())),
        ("pivot_ids", pa.list_(pa.string())),
        ("section", pa.string()),
        ("method", pa.string()),
        ("crf_score", pa.float64()),
        ("vecalign_score", pa.float64()),
        ("overlap_r", pa.float64()),
        ("keep", pa.bool_()),
        ("complex_concepts", pa.list_(CONCEPT)),
        ("simple_concepts", pa.list_(CONCEPT)),
        ("complex_readability", pa.list_(READABILITY)),
        ("simple_readability", pa.list_(READABILITY)),
    ]
)

FEATURES = {
    "pair_id": "`<doi>:<language>:<n>`",
    "doi": "normalised DOI of the Cochrane review (no `.pubN`)",
    "language": "ISO 639-1 language of the simple side",
    "complex_text": "English technical-abstract sentence(s), joined by a space",
    "simple_text": "plain-language-summary sentence(s) in `language`, joined by a space",
    "pivot_text": "English PLS sentence(s) a cross-lingual pair was bridged through ('' for en)",
    "complex_ids": "sentence ids of the complex side (several for 1-N alignments)",
    "simple_ids": "sentence ids of the simple side (several for N-1 alignments)",
    "pivot_ids": "sentence ids of the English PLS pivot (empty for en)",
    "section": "abstract section heading of the complex side",
    "method": "`crf` (en) or `crf+vecalign` (bridged); MC-CLEAN: `gold` (en) or "
    "`gold+vecalign` (English gold composed with the PLS bridge)",
    "crf_score": "CRF alignment score (marginal probability of the pair)",
    "vecalign_score": "Vecalign cost of the PLS-PLS step (null for en)",
    "overlap_r": "overlap r of the English pair (bridged pairs inherit it)",
    "keep": "true when the pair passes the overlap filter (r > threshold by default; MC-CLEAN gold "
    "rows too, as in the paper); the training split of the `-filtered` configs holds only these",
    "complex_concepts": "UMLS concepts of the complex side; start/end index `complex_text`",
    "simple_concepts": "UMLS concepts of the simple side; start/end index `simple_text`",
    "complex_readability": "readability of each complex sentence, aligned with `complex_ids` "
    "(null where the link stage gave none)",
    "simple_readability": "readability of each simple sentence, aligned with `simple_ids`",
}

CITATION = """@inproceedings{joseph-etal-2023-multilingual,
  title = {Multilingual Simplification of Medical Texts},
  author = {Joseph, Sebastian and Kazanas, Kathryn and Reina, Keziah and Ramanathan, Vishnesh J.
    and Xu, Wei and Wallace, Byron C. and Li, Junyi Jessy},
  booktitle = {Proceedings of the 2023 Conference on Empirical Methods in Natural Language
    Processing},
  year = {2023},
  publisher = {Association for Computational Linguistics},
  url = {https://aclanthology.org/2023.emnlp-main.1037}
}"""

ACCESS = """Text comes from Cochrane review abstracts and plain-language summaries
(Cochrane Database of Systematic Reviews, (c) John Wiley & Sons / The Cochrane Collaboration).
Abstracts and summaries are freely readable, but their reuse is governed by Cochrane's terms;
redistribute only what those terms allow (MultiCochrane's authors released their corpus for
research). The builder code and annotations added by medsimp (splits, concepts, readability)
are Apache-2.0. UMLS-derived concept identifiers fall under the UMLS licence of whoever ran
the link stage (the embedded default index is a small demo vocabulary, not UMLS)."""

_PUB = re.compile(r"\.pub\d+$", re.IGNORECASE)
_URL = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)


def bare_doi(doi: str) -> str:
    """The DOI as a row shows it: no URL prefix, no `.pubN` version (case kept)."""
    return _PUB.sub("", _URL.sub("", doi.strip()))


_DOI_KEY = re.compile(r"^(https?://doi\.org/|doi:)?10\.\d+/", re.IGNORECASE)
_SPLIT_NAMES = {"validation": "validation", "val": "validation", "dev": "validation", "test": "test"}


def _doi_records(obj: Any, hint: str | None = None) -> Iterator[tuple[str, str | None]]:
    """(doi, split or None) for every review in a JSON tree of unknown layout.

    A review is an object with a `doi` field, or a key that is a DOI. A `split` field,
    else the nearest enclosing key named validation/val/dev/test, gives its split.
    """
    if isinstance(obj, list):
        for item in obj:
            yield from _doi_records(item, hint)
    elif isinstance(obj, dict):
        if obj.get("doi"):
            yield str(obj["doi"]), _SPLIT_NAMES.get(str(obj.get("split", "")).lower(), hint)
            return
        for key, value in obj.items():
            if _DOI_KEY.match(str(key)):
                split = value.get("split", "") if isinstance(value, dict) else ""
                yield str(key), _SPLIT_NAMES.get(str(split).lower(), hint)
            else:
                yield from _doi_records(value, _SPLIT_NAMES.get(str(key).lower(), hint))


def mc_human_splits(path: str | Path) -> tuple[dict[str, str], set[str]]:
    """(review key -> the split `mc_human.json` gives it, keys of the reviews it gives none)."""
    given: dict[str, str] = {}
    free: set[str] = set()
    for doi, split in _doi_records(json.loads(Path(path).read_text(encoding="utf-8"))):
        if split:
            given[review_key(doi)] = split
        else:
            free.add(review_key(doi))
    if not given and not free:
        raise BuildError(f"{path} holds no review DOI")
    return given, free - set(given)


def mc_clean_split(
    path: str | Path,
    n_validation: int,
    seed: int,
    n_test: int = 22,
    fixed: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """review key (`medsimp.reviews.review_key`) -> train/validation/test for the MC-CLEAN
    reviews of `mc_human.json`.

    Joseph et al. (2023) hold out 22 test and 5 validation reviews of MC-CLEAN; the rest of
    MC-CLEAN is training. Reviews are found wherever the file holds them (see
    `_doi_records`). `fixed` (splits a more authoritative source decided: the benchmark lists,
    the input's own split) wins, then a split the file gives; the other reviews are ordered by
    `unit_hash(key, seed)` (reproducible, documented in the card) and fill validation up to
    `n_validation`, then test up to `n_test`; the rest go to train.
    """
    given, free = mc_human_splits(path)
    out = dict(given)
    out.update({k: v for k, v in (fixed or {}).items() if k in given or k in free})
    ordered = sorted(free - set(out), key=lambda d: (unit_hash(d, seed), d))
    n_val = max(0, n_validation - sum(1 for s in out.values() if s == "validation"))
    n_tst = max(0, n_test - sum(1 for s in out.values() if s == "test"))
    out.update({d: "validation" for d in ordered[:n_val]})
    out.update({d: "test" for d in ordered[n_val : n_val + n_tst]})
    out.update({d: "train" for d in ordered[n_val + n_tst :]})
    return out


# Where a review's split came from, most authoritative first (the card counts reviews per source)
SOURCES = {
    "mc_clean_test": "MC-CLEAN's released English test reviews",
    "dev": "the dev reviews the aligner's calibration is fitted on",
    "input": "the input's own split (Devaraj's train/val/test files, a `split` field)",
    "mc_human": "a split given in mc_human.json",
    "mc_clean_hash": "MC-CLEAN reviews drawn by seeded hash up to the paper's 5 validation / 22 test",
    "mc_noisy": "the other reviews of an MC-CLEAN build (train, as in the paper)",
    "hash": "seeded hash by review",
}
_RANK = {name: n for n, name in enumerate(SOURCES)}


def input_splits(path: str | Path) -> dict[str, set[str]]:
    """review key -> the splits the input gives it: the sentence table's `split` column (the
    cochrane job fills it from a canonical record's `split` field or the Devaraj file a review
    came from: train/val/test). Reviews without one, and tables without the column, give none."""
    files = sorted(Path(path).glob("*.parquet")) if Path(path).is_dir() else [Path(path)]
    out: dict[str, set[str]] = {}
    for f in files:
        names = set(pq.read_schema(f).names)
        if not {"doc_id", "split"} <= names:
            continue
        for batch in pq.ParquetFile(f).iter_batches(
            batch_size=CHUNK_ROWS, columns=["doc_id", "split"], use_threads=False
        ):
            for doc_id, split in zip(batch.column("doc_id").to_pylist(), batch.column("split").to_pylist()):
                if doc_id and split:
                    if split not in ("train", "validation", "test"):
                        raise BuildError(
                            f"{f.name}: review {doc_id} has split {split!r} (train/validation/test)"
                        )
                    out.setdefault(review_key(doc_id), set()).add(split)
    return out


def assign_splits(
    dois: list[str],
    by_language: Mapping[str, set[str]],
    given_input: Mapping[str, set[str]],
    cfg: BuildMulticochrane,
) -> tuple[dict[str, str], dict[str, str], dict[str, str], list[str]]:
    """Each review's split from the most authoritative source at hand (`SOURCES`' order):
    MC-CLEAN's 22 English test reviews -> test and the calibration's dev reviews -> validation
    (`medsimp.reviews`); then the input's own split; then a split `mc_human.json` gives; then
    the MC-CLEAN quota drawn by hash, MC-NOISY -> train (with `mc_human`), or the seeded hash.
    Reviews are matched by `review_key`, so every version and spelling of one review shares a split.

    Returns (doi -> split, doi -> source, MC-CLEAN review key -> split, conflicts). A conflict
    is a review that two sources put in different splits: a benchmark test review the input puts
    in train, a review in two of the input's files. With `cfg.allow_split_conflicts` off it is
    refused (InputError, one line naming the reviews); on, the most authoritative source wins and
    the conflicts are returned for the card.
    """
    keys = {d: review_key(d) for d in dois}
    mc_given: dict[str, str] = {}
    mc_keys: set[str] = set()
    if cfg.mc_human:
        mc_given, mc_free = mc_human_splits(cfg.mc_human)
        mc_keys = set(mc_given) | mc_free
    claims: dict[str, list[tuple[str, str]]] = {}  # key -> (source, split), most authoritative first
    for key in sorted(set(keys.values()) | mc_keys):
        found = []
        if key in MC_CLEAN_TEST_REVIEWS:
            found.append(("mc_clean_test", "test"))
        if key in DEV_REVIEWS:
            found.append(("dev", "validation"))
        found += [("input", split) for split in sorted(given_input.get(key, ()))]
        if key in mc_given:
            found.append(("mc_human", mc_given[key]))
        if found:
            claims[key] = found
    conflicts = [
        f"{key} ({', '.join(f'{source} {split}' for source, split in found)})"
        for key, found in sorted(claims.items())
        if len({split for _, split in found}) > 1
    ]
    if conflicts and not cfg.allow_split_conflicts:
        shown = "; ".join(conflicts[:10]) + (
            f"; and {len(conflicts) - 10} more" if len(conflicts) > 10 else ""
        )
        raise InputError(
            f"leakage refused: {len(conflicts)} review(s) in two splits or a "
            f"benchmark test review outside test: {shown} "
            "(build.multicochrane.allow_split_conflicts: true takes the most authoritative split)"
        )
    chosen = {key: found[0] for key, found in claims.items()}  # (source, split)
    clean: dict[str, str] = {}
    if cfg.mc_human:
        fixed = {k: split for k, (_, split) in chosen.items() if k in mc_keys}
        clean = mc_clean_split(
            cfg.mc_human, cfg.mc_clean_validation, cfg.split.seed, cfg.mc_clean_test, fixed
        )
        for key, split in clean.items():
            chosen.setdefault(key, ("mc_clean_hash", split))
    split_of: dict[str, str] = {}
    source_of: dict[str, str] = {}
    free = sorted({k for k in keys.values() if k not in chosen})
    if free and cfg.mc_human:
        chosen.update({k: ("mc_noisy", "train") for k in free})
    elif free:
        # a review's spellings share the split of its first DOI (one spelling: the DOI's own hash)
        first: dict[str, str] = {}
        for d in dois:  # sorted: the first spelling of each review
            first.setdefault(keys[d], d)
        hashed = seeded_split(
            (first[k] for k in free), float(cfg.split.validation), float(cfg.split.test), cfg.split.seed
        )
        placed = {first[k]: split for k, (_, split) in chosen.items() if k in first}
        # small corpora: every language gets train, test, validation when it can; reviews another
        # source placed count but never move
        covered = cover_splits(
            {**hashed, **placed},
            {lang: {first[keys[d]] for d in ds} for lang, ds in by_language.items()},
            cfg.split.seed,
            fixed=set(placed),
        )
        chosen.update({k: ("hash", covered[first[k]]) for k in free})
    for d in dois:
        source_of[d], split_of[d] = chosen[keys[d]]
    check_leakage(split_of)
    return split_of, source_of, clean, conflicts


def check_leakage(split_of: Mapping[str, str]) -> None:
    """Refuse (BuildError, naming the reviews) a review in two splits or an MC-CLEAN test
    review outside test: what the splits hold, checked after they are drawn."""
    by_key: dict[str, set[str]] = {}
    for doi, split in split_of.items():
        by_key.setdefault(review_key(doi), set()).add(split)
    twice = sorted(k for k, splits in by_key.items() if len(splits) > 1)
    outside = sorted(k for k, splits in by_key.items() if k in MC_CLEAN_TEST_REVIEWS and splits != {"test"})
    if twice or outside:
        raise BuildError(
            "leakage: "
            + "; ".join(
                part
                for part in (
                    f"review(s) in two splits: {', '.join(twice)}" if twice else "",
                    f"MC-CLEAN test review(s) outside test: {', '.join(outside)}" if outside else "",
                )
                if part
            )
        )


def source_counts(split_of: Mapping[str, str], source_of: Mapping[str, str]) -> str:
    """The card's line: per split, how many reviews came from each source."""
    counts: Counter[tuple[str, str]] = Counter()
    for split, source in {review_key(d): (split_of[d], source_of[d]) for d in split_of}.values():
        counts[(split, source)] += 1
    parts = []
    for split in ("train", "validation", "test"):
        inner = [f"{counts[(split, s)]} from {label}" for s, label in SOURCES.items() if counts[(split, s)]]
        parts.append(f"{split}: {', '.join(inner) if inner else 'none'}")
    return "Reviews per split and where their split came from: " + "; ".join(parts) + "."


def gold_rows(
    path: str | Path, split_of: Mapping[str, str], filter_params: Filter | None = None
) -> dict[str, list[dict]]:
    """review key -> rows of the human (gold) English alignments of `mc_human.json`.

    Each gold block (connected component of the gold sentence pairs) is one row, method
    `gold`; sentence ids are `mc_human:<doi>:<side>:<index>`; alignment scores are null. The
    rows go through the overlap filter as the paper's do (Joseph et al. 2023, Table 1: 1,136 ->
    329 English training pairs): `overlap_r` and `keep` from `alignment.overlap.filter_row`
    with `filter_params`' threshold and comparison (those the filter stage recorded, see
    `filter_settings`). The English gold is read with `alignment.gold.read_mc_clean` (its
    assumed layout: docs/alignment.md).
    """
    settings = filter_params or Filter()
    from alignment.gold import GoldFormatError, read_mc_clean
    from alignment.score import pairs_to_blocks

    try:
        docs = read_mc_clean(path)
    except (GoldFormatError, KeyError, TypeError, ValueError) as exc:
        raise InputError(
            f"{Path(path).name}: no gold alignments to build MC-CLEAN splits from "
            f"({str(exc).splitlines()[0][:200]})"
        ) from None
    out: dict[str, list[dict]] = {}
    for doc in docs:
        key = review_key(doc.doc_id)
        if key not in split_of:
            continue
        doi = bare_doi(doc.doc_id)
        rows = []
        blocks = [b for b in pairs_to_blocks(doc.pairs, len(doc.complex), len(doc.simple)) if b[0] and b[1]]
        for n, (cidx, sidx) in enumerate(blocks):
            rows.append(
                {
                    "pair_id": f"{doi}:en:gold{n}",
                    "doi": doi,
                    "language": "en",
                    "complex_ids": [f"mc_human:{doi}:complex:{i}" for i in cidx],
                    "simple_ids": [f"mc_human:{doi}:simple:{j}" for j in sidx],
                    "pivot_ids": [],
                    "complex_text": " ".join(doc.complex[i] for i in cidx),
                    "simple_text": " ".join(doc.simple[j] for j in sidx),
                    "pivot_text": "",
                    "section": "",
                    "method": "gold",
                    "crf_score": None,
                    "vecalign_score": None,
                    "overlap_r": None,
                    "keep": None,
                    "complex_concepts": [],
                    "simple_concepts": [],
                    "complex_readability": [None] * len(cidx),
                    "simple_readability": [None] * len(sidx),
                    "_simple_sentences": [doc.simple[j] for j in sidx],  # for the bridge; not a column
                }
            )
            rows[-1] = filter_row(rows[-1], float(settings.threshold), settings.comparison)
        out[key] = rows
    return out


def _norm_sentence(text: str) -> str:
    return " ".join(text.lower().split())


def _same_sentence(gold: str, ours: str) -> bool:
    """The gold English PLS sentence and one of the sentence table's: equal after case and
    whitespace folding, or one holds the other (a sentence the two segmenters cut
    differently; both sides at least 20 characters so a fragment cannot match at random)."""
    a, b = _norm_sentence(gold), _norm_sentence(ours)
    if a == b:
        return True
    return min(len(a), len(b)) >= 20 and (a in b or b in a)


def bridge_gold(
    gold_en: list[dict], bridge: list[dict], texts: Mapping[str, str], language: str
) -> tuple[list[dict], int]:
    """MC-CLEAN pairs of `language` for one review: each English gold pair composed with the
    PLS bridge (Joseph et al. 2023, §3.1.2: English PLS as the bridge from the English
    abstract to the PLS in language X).

    `gold_en` are the review's English gold rows (`gold_rows`), `bridge` the review's
    automatic `crf+vecalign` rows of `language`: each carries one Vecalign block, English
    PLS `pivot_ids` -> X PLS `simple_ids`. A gold pair (abstract sentences A -> English PLS
    sentences P) becomes (A -> every X sentence of the blocks whose pivots are P's
    sentences), its pivot being P. Filtered through the English pivot: a gold pair whose P
    has no X counterpart in the bridge gives no pair (returned as the drop count), and X
    sentences whose English pivot is in no gold pair (elaborations) are never used.
    """
    blocks = []
    for row in sorted(bridge, key=lambda r: (number_key(r["pair_id"].rsplit(":", 1)[-1]), r["pair_id"])):
        pivots = [texts.get(pid, "") for pid in row["pivot_ids"] or ()]
        if row["simple_ids"] and pivots:
            blocks.append((pivots, list(row["simple_ids"]), row["vecalign_score"]))
    out: list[dict] = []
    dropped = 0
    for g in gold_en:
        linked = [
            k
            for k, (pivots, _, _) in enumerate(blocks)
            if any(_same_sentence(s, p) for s in g["_simple_sentences"] for p in pivots)
        ]
        ids: list[str] = []
        for k in linked:
            ids.extend(i for i in blocks[k][1] if i not in ids)
        if not ids:
            dropped += 1
            continue
        costs = [blocks[k][2] for k in linked if blocks[k][2] is not None]
        n = g["pair_id"].rsplit(":gold", 1)[-1]
        out.append(
            {
                **{k: v for k, v in g.items() if not k.startswith("_")},
                "pair_id": f"{g['doi']}:{language}:gold{n}",
                "language": language,
                "simple_ids": ids,
                "pivot_ids": list(g["simple_ids"]),
                "simple_text": " ".join(texts[i] for i in ids),
                "pivot_text": g["simple_text"],
                "method": "gold+vecalign",
                "vecalign_score": sum(costs) / len(costs) if costs else None,
            }
        )
    return out, dropped


HUB = HubCard(
    license_name="cochrane-library-terms",
    license_link="https://www.cochranelibrary.com",
    task_categories=("text-generation", "translation"),
    tags=("medical", "text-simplification", "multilingual", "cochrane", "sentence-alignment"),
    intended_use="""Training and evaluating sentence-level simplification of medical evidence, in English and,
through the English plain-language summary, across languages (Joseph et al., 2023); comparing
filtered and unfiltered training data on the same test set.""",
    limitations="""Pairs are automatic alignments (a neural CRF aligner, then Vecalign through the English
summary) unless MC-CLEAN gold alignments are given: some pairs are partial or wrong, and the
overlap filter removes some correct elaborations along with noise. Plain-language summaries
elaborate and omit, so a pair's sides need not hold the same facts. Summaries in other languages
are translations of the English one, with their own errors.""",
)


PAIRS_SCHEMA = pa.schema([SCHEMA.field(c) for c in PAIR_COLUMNS])  # the pairs as read, typed
KEYS_SCHEMA = pa.schema([SCHEMA.field("doi"), SCHEMA.field("language")])
TEXTS_SCHEMA = pa.schema([pa.field("sentence_id", pa.string()), pa.field("text", pa.string())])
LINKS_SCHEMA = pa.schema(
    [
        pa.field("sentence_id", pa.string()),
        pa.field("concepts", pa.list_(CONCEPT)),
        pa.field("readability", READABILITY),
    ]
)
REQUIRED = ("pair_id", "doi", "language", "complex_ids", "simple_ids")  # a pair without one is rejected


def filter_cost(
    decisions: Mapping[tuple[str, str], list[tuple[bool, float | None]]], splits: tuple[str, ...]
) -> tuple[dict[str, int], list[str]]:
    """What the overlap filter costs in the splits it filters (`alignment.overlap.drop_cost`):
    counts for stats.json (`overlap_dropped`, `overlap_dropped_aligner_sure`) and one card line
    per language."""
    totals = {"overlap_dropped": 0, "overlap_dropped_aligner_sure": 0}
    notes = []
    for lang in sorted({lang for lang, _ in decisions}):
        cost = drop_cost(d for sp in splits for d in decisions.get((lang, sp), []))
        totals["overlap_dropped"] += cost["dropped"]
        totals["overlap_dropped_aligner_sure"] += cost["dropped_aligner_sure"]
        if cost["pairs"]:
            notes.append(f"Overlap filter, {lang} ({'/'.join(splits)}): {describe_cost(cost)}.")
    return totals, notes


def filter_settings(cfg: BuildMulticochrane, params: Filter | None) -> tuple[Filter, str]:
    """The overlap filter the corpus went through, and where it came from: what the filter
    stage recorded in `stats.json` beside `cfg.pairs` (`threshold`, `comparison`, and `rule` /
    `aligner_min`, `drop_copies` / `copy_overlap` when not the paper's), else the params'
    `filter` section (`params`), else its defaults (the paper's r > 0.5). The gold rows go
    through it, and the card and the data report describe it."""
    recorded = Path(cfg.pairs).parent / "stats.json"
    base = params or Filter()
    try:
        stats = json.loads(recorded.read_text(encoding="utf-8"))
        found = Filter(
            threshold=stats["threshold"],
            comparison=stats["comparison"],
            rule=stats.get("rule", "overlap"),
            aligner_min=stats.get("aligner_min") or Filter().aligner_min,
            drop_copies=stats.get("drop_copies", "none"),
            copy_overlap=stats.get("copy_overlap", base.copy_overlap),
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return base, "the params' filter section"
    return found, f"{recorded.name} of the filter stage"


def build(cfg: BuildMulticochrane, filter_params: Filter | None = None) -> BuiltDataset:
    """Build the MultiCochrane dataset from the params section `build.multicochrane`.

    Memory does not grow with the corpus: pairs are read CHUNK_ROWS at a time, sentence texts
    and links are looked up, and output rows kept until they are written, in a `Scratch`
    database on disk that the returned dataset owns (close it, or use it in a `with`)."""
    resources = ExitStack()
    try:
        return _build(cfg, resources, filter_params)
    except BaseException:
        resources.close()
        raise


def _build(cfg: BuildMulticochrane, resources: ExitStack, params_filter: Filter | None) -> BuiltDataset:
    # first pass, over two columns: the reviews of each language (a review's split needs them all)
    by_language: dict[str, set[str]] = {}
    read = 0
    for chunk in iter_parquet_dir(cfg.pairs, KEYS_SCHEMA, CHUNK_ROWS):
        read += chunk.num_rows
        for d, lang in zip(chunk.column("doi").to_pylist(), chunk.column("language").to_pylist()):
            if d and lang:
                by_language.setdefault(lang, set()).add(d)
    dois = sorted(set().union(*by_language.values()))
    split_cfg = cfg.split
    seed = split_cfg.seed
    split_of, source_of, clean, conflicts = assign_splits(dois, by_language, input_splits(cfg.sentences), cfg)
    gold: dict[str, list[dict]] = {}
    filter_params, filter_from = filter_settings(cfg, params_filter)
    benchmark = (
        "MC-CLEAN's 22 released English test reviews (`medsimp.reviews`) are test and the "
        "calibration's dev reviews validation, in every language, whatever the input says; "
        "then the input's own split (Devaraj's train/val/test files, a `split` field) decides"
    )
    if cfg.mc_human:
        gold = gold_rows(cfg.mc_human, clean, filter_params)
        lacking = sorted(d for d, s in clean.items() if s != "train" and not gold.get(d))
        if lacking:
            raise InputError(
                f"{Path(cfg.mc_human).name}: {len(lacking)} held-out MC-CLEAN "
                f"review(s) have no gold alignment (first: {lacking[0]}); test and "
                "validation must hold gold alignments"
            )
        held = {s: sorted(d for d, v in clean.items() if v == s) for s in ("validation", "test")}
        scheme = (
            f"MC-CLEAN (Joseph et al. 2023): {benchmark}. Of the {len(clean)} reviews of "
            f"{Path(cfg.mc_human).name}, {len(held['test'])} test and "
            f"{len(held['validation'])} validation reviews hold their human (gold) English "
            "alignments; held-out reviews outside it keep automatic alignments (reviews no source places are drawn by seeded hash up to "
            f"{cfg.mc_clean_validation} validation and {cfg.mc_clean_test} test); the other "
            "MC-CLEAN reviews (gold alignments) and every other review no source places "
            "(automatic alignments, MC-NOISY) are train. In the held-out reviews, "
            "each other language's pairs are the English gold pairs composed with the "
            "English PLS -> PLS bridge (Vecalign), filtered through the English pivot: a gold "
            "pair whose English PLS sentences have no counterpart gives no pair (method "
            "`gold+vecalign`). Validation reviews: "
            + ", ".join(held["validation"])
            + ". Test reviews: "
            + ", ".join(held["test"])
            + "."
        )
    else:
        scheme = (
            f"NOT MC-CLEAN: no gold alignments were given (`mc_human` unset), so "
            f"validation and test hold automatic alignments. {benchmark}; the other reviews are "
            f"seeded by review (seed {seed}, "
            f"validation {split_cfg.validation}, test "
            f"{split_cfg.test}); in small corpora those reviews are moved so "
            "that a language with n reviews has the first min(n, 3) of train, test, "
            "validation"
        )
    filter_splits = tuple(cfg.filter_splits)
    bad = sorted(set(filter_splits) - {"train", "validation", "test"})
    if bad:
        raise BuildError(f"build.multicochrane.filter_splits: unknown split(s) {bad}")

    scratch = Scratch(resources)
    scratch.add_texts(iter_parquet_dir(cfg.sentences, TEXTS_SCHEMA, CHUNK_ROWS))
    scratch.add_links(iter_parquet_dir(cfg.linked, LINKS_SCHEMA, CHUNK_ROWS))
    rows_in: Counter[tuple[str, str]] = Counter()  # (language, split) -> rows of the unfiltered config
    keep_in: Counter[tuple[str, str]] = Counter()  # ... of them passing the overlap filter
    # (language, split, in the -filtered config too, kind) -> identical / near-copy rows
    copies: Counter[tuple[str, str, bool, str]] = Counter()

    def count_copy(group: tuple[str, str], row: Mapping[str, Any]) -> None:
        kind = row_copy_kind(row, filter_params.copy_overlap)
        if kind:
            copies[(*group, bool(row.get("keep")), kind)] += 1

    decisions: dict[tuple[str, str], list[tuple[bool, float | None]]] = {}  # -> (keep, CRF score)
    bridges: dict[tuple[str, str], list[dict]] = {}
    rejects: list[dict] = []
    kept = missing_links = replaced = 0
    # second pass: every pair joined with its sentences' links, kept in the scratch database
    # under its config and split, in build order (doi, pair number, pair_id)
    for chunk in iter_parquet_dir(cfg.pairs, PAIRS_SCHEMA, CHUNK_ROWS):
        pairs = chunk.to_pylist()
        wanted = {i for p in pairs for c in ("complex_ids", "simple_ids") for i in p[c] or ()}
        texts, links = scratch.texts(wanted), scratch.links(wanted)
        for pair in pairs:
            absent = next((c for c in REQUIRED if not pair[c] and pair[c] != []), None)
            if absent:
                rejects.append(dead_letter("multicochrane", pair["pair_id"] or "", "missing_field", absent))
                continue
            if review_key(pair["doi"]) in clean:
                # MC-CLEAN review: its gold rows (en) replace the automatic ones; in held-out
                # reviews the other languages' automatic rows are the PLS bridge the English gold
                # is composed with (`bridge_gold`); they keep automatic rows for training only
                if pair["language"] == "en" or split_of[pair["doi"]] != "train":
                    if pair["language"] != "en" and all(i in texts for i in pair["simple_ids"]):
                        bridge_key = (review_key(pair["doi"]), pair["language"])
                        bridges.setdefault(bridge_key, []).append(pair)
                    replaced += 1
                    continue
            ids = [*pair["complex_ids"], *pair["simple_ids"]]
            unknown = [sid for sid in ids if sid not in texts]
            if unknown:
                rejects.append(
                    dead_letter("multicochrane", pair["pair_id"], "unknown_sentence_id", unknown[0])
                )
                continue
            cc, cr, m1 = side_annotations(pair["complex_ids"], texts, links)
            sc, sr, m2 = side_annotations(pair["simple_ids"], texts, links)
            missing_links += m1 + m2
            row = {
                **pair,
                "complex_concepts": cc,
                "simple_concepts": sc,
                "complex_readability": cr,
                "simple_readability": sr,
            }
            group = (pair["language"], split_of[pair["doi"]])
            scratch.add_row(
                "/".join(group),
                row,
                doc=pair["doi"],
                number=pair["pair_id"].rsplit(":", 1)[-1],
                item=pair["pair_id"],
                flag=bool(pair["keep"]),
            )
            kept += 1
            rows_in[group] += 1
            keep_in[group] += bool(pair["keep"])
            count_copy(group, pair)
            decisions.setdefault(group, []).append((bool(pair["keep"]), pair.get("crf_score")))

    # then the MC-CLEAN gold rows (en) and the gold composed with the bridge (other languages)
    for key, rows in sorted(gold.items()):
        for row in rows:
            group = ("en", clean[key])
            scratch.add_row(
                "/".join(group),
                {k: v for k, v in row.items() if not k.startswith("_")},
                part=1,
                flag=row["keep"],
            )
            rows_in[group] += 1
            keep_in[group] += row["keep"]
            count_copy(group, row)
            decisions.setdefault(group, []).append((row["keep"], None))
    bridged = dropped = 0
    for (key, lang), bridge in sorted(bridges.items()):
        texts = scratch.texts(i for row in bridge for c in ("simple_ids", "pivot_ids") for i in row[c] or ())
        composed, n_dropped = bridge_gold(gold.get(key, []), bridge, texts, lang)
        dropped += n_dropped
        for row in composed:
            sc, sr, m2 = side_annotations(row["simple_ids"], texts, scratch.links(row["simple_ids"]))
            missing_links += m2
            row.update(simple_concepts=sc, simple_readability=sr)
            group = (lang, clean[key])
            scratch.add_row("/".join(group), row, part=2, flag=bool(row["keep"]))
            rows_in[group] += 1
            keep_in[group] += bool(row["keep"])
            count_copy(group, row)
            decisions.setdefault(group, []).append((bool(row["keep"]), None))
            bridged += 1

    if not rows_in:
        reasons = Counter(r["reason"] for r in rejects)
        raise BuildError(
            f"{cfg.pairs}: no usable pair ({read} read, {len(rejects)} rejected"
            + (f": {', '.join(f'{n} {r}' for r, n in sorted(reasons.items()))}" if reasons else "")
            + ")"
        )

    def split(group: str, flagged_only: bool = False) -> StreamedSplit:
        return StreamedSplit(SCHEMA, lambda: chunked_tables(scratch.rows(group, flagged_only), SCHEMA))

    configs: dict[str, dict[str, pa.Table | StreamedSplit]] = {}
    descriptions: dict[str, str] = {}
    languages = sorted({lang for lang, _ in rows_in})
    for lang in languages:
        configs[lang] = {s: split(f"{lang}/{s}") for s in ("train", "validation", "test")}
        # the paper filters the training set only: evaluation splits stay as they are, so a
        # filtered-versus-unfiltered comparison is scored on the same test set
        configs[f"{lang}-filtered"] = {
            s: split(f"{lang}/{s}", flagged_only=s in filter_splits) for s in ("train", "validation", "test")
        }
        descriptions[lang] = f"all aligned en -> {lang} pairs, with overlap r and `keep`"
        descriptions[f"{lang}-filtered"] = (
            f"en -> {lang}: {'/'.join(filter_splits)} hold only pairs that pass the overlap "
            "filter; the other splits are those of the unfiltered config"
        )
    n_gold = sum(len(v) for v in gold.values())
    cost_counts, cost_notes = filter_cost(decisions, filter_splits)
    counts = {
        **cost_counts,
        "read": read,
        "kept": kept,
        "filtered": replaced,
        "rejected": len(rejects),
        "gold_pairs": n_gold,
        "gold_bridged_pairs": bridged,
        "gold_bridge_dropped": dropped,
        "mc_clean_reviews": len(clean),
        "overlap_keep": sum(keep_in.values()),
        "overlap_keep_train": sum(n for (_, sp), n in keep_in.items() if sp == "train"),
        "reviews": len(dois),
        "missing_links": missing_links,
        "languages": len(languages),
        "identical_pairs": sum(n for (_, _, _, k), n in copies.items() if k == "identical"),
        "near_copy_pairs": sum(n for (_, _, _, k), n in copies.items() if k == "near_copy"),
    }
    return BuiltDataset(
        name="multicochrane",
        title="MultiCochrane (medsimp build)",
        description=(
            "Sentence-aligned pairs from Cochrane systematic reviews: English technical-abstract "
            "sentences aligned to plain-language-summary sentences in English and, bridged "
            "through the English summary, in every other language present (Joseph et al., 2023). "
            "Each pair carries its alignment scores, the overlap filter's r and decision, UMLS "
            "concepts and readability of both sides."
        ),
        citation=CITATION,
        license="other",
        access=ACCESS,
        configs=configs,
        config_descriptions=descriptions,
        feature_descriptions=FEATURES,
        counts=counts,
        hub=HUB,
        default_config="en" if "en" in languages else (languages[0] if languages else ""),
        rejects=rejects,
        resources=resources,
        aligner_scores=sorted(
            float(score)
            for (lang, _), pairs in decisions.items()
            if lang == "en"
            for keep, score in pairs
            if keep and score is not None  # the kept rows: what a user publishes
        ),
        notes=[
            f"Splits: {scheme}; a review is in the same split in every language.",
            source_counts(split_of, source_of),
            *(
                [
                    "Override: build.multicochrane.allow_split_conflicts is on; "
                    + (
                        f"{len(conflicts)} review(s) whose sources disagreed took the most "
                        f"authoritative split: {'; '.join(conflicts)}."
                        if conflicts
                        else "no review's sources disagreed."
                    )
                ]
                if cfg.allow_split_conflicts
                else []
            ),
            *(
                [
                    f"MC-CLEAN gold pairs go through the overlap filter as the paper's do (r "
                    f"{'>' if filter_params.comparison == 'gt' else '>='} {float(filter_params.threshold)}, "
                    f"from {filter_from}): {sum(r['keep'] for rows in gold.values() for r in rows)} of "
                    f"{n_gold} English gold pairs pass; the unfiltered configs hold them all."
                ]
                if gold
                else []
            ),
            f"`-filtered` configs filter {', '.join(filter_splits)} only (the paper filters "
            "the training set); `build.multicochrane.filter_splits` can filter more.",
            "`kept` counts automatic rows (unfiltered configs); `filtered` counts automatic "
            "rows of MC-CLEAN reviews replaced by gold rows (`gold_pairs`, English; "
            "`gold_bridged_pairs`, other languages of held-out reviews, with "
            "`gold_bridge_dropped` gold pairs that had no counterpart); `overlap_keep` "
            "rows (automatic and gold) pass the overlap filter.",
            *cost_notes,
            *copy_notes(copies, rows_in, keep_in, filter_splits, filter_params.copy_overlap),
        ],
    )


def copy_notes(
    copies: Mapping[tuple[str, str, bool, str], int],
    rows_in: Mapping[tuple[str, str], int],
    keep_in: Mapping[tuple[str, str], int],
    filter_splits: tuple[str, ...],
    copy_overlap: float,
) -> list[str]:
    """One card line per config: the share of identical and near-copy pairs in each split
    (`medsimp.text.copies.row_copy_kind`, as the filter judges them: a bridged pair by its
    English pair; named with its threshold), so a reader sees how much of
    the corpus a model could learn to copy (issue 53). A `-filtered` config's filtered splits
    count only the rows that pass."""
    lines = []
    for lang in sorted({lang for lang, _ in rows_in}):
        for filtered in (False, True):
            parts = []
            for split in ("train", "validation", "test"):
                only_kept = filtered and split in filter_splits
                n = keep_in.get((lang, split), 0) if only_kept else rows_in.get((lang, split), 0)
                if not n:
                    continue

                keeps = (True,) if only_kept else (True, False)
                same, near = (
                    sum(copies.get((lang, split, keep, kind), 0) for keep in keeps)
                    for kind in ("identical", "near_copy")
                )
                parts.append(
                    f"{split} {same} identical ({100 * same / n:.1f}%) and {near} near copies "
                    f"({100 * near / n:.1f}%) of {n}"
                )
            if parts:
                name = f"{lang}-filtered" if filtered else lang
                lines.append(f"Copies in {name}: {'; '.join(parts)}.")
    if lines:
        lines.insert(
            0,
            "Copies: *identical* = the same words in the same order (white space aside); *near copy* = "
            f"not identical, each side's lower-cased word set sharing at least {copy_overlap:g} of itself "
            "with the other's (filter.copy_overlap; `filter.drop_copies` can drop them, off by default "
            "as in the paper).",
        )
    return lines
