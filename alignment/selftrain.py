"""Self-training of the English CRF on unlabelled reviews (issue 37, the `selfdoc` design).

After the CRF trains on the gold, it labels whole unlabelled reviews (both directions merged as
`align.crf.merge`, every pair of posterior >= `min_posterior`; a review keeps its own share of
unaligned sentences), and a new CRF trains on the gold plus those documents. The design and
its measurement (chosen on development gold, scored once on the 22 MC-CLEAN test reviews) are
in docs/alignment.md "Designs tried for issue 37".

The pool is the English side of a sentence table (`align.input`: the corpus being built), less
the gold's own documents, the 22 MC-CLEAN English test reviews (`MC_CLEAN_TEST_REVIEWS`) and
the 10 dev reviews the calibration is fitted on (`DEV_REVIEWS`), both in `medsimp.reviews` and
matched by `review_key` (case, `.pubN` version and URL prefix do not matter, so no version or
spelling of them is ever trained on). At most `max_documents` are
used, chosen by a hash of the document id: the same documents whatever the table's order.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from alignment.bridge import english_sides
from alignment.crf import CRFAligner
from alignment.gold import DocPair
from medsimp.params_schema import Crf, SelfTraining, updated
from medsimp.progress import counting
from medsimp.reviews import DEV_REVIEWS, MC_CLEAN_TEST_REVIEWS, review_key
from pipelines.sources.tables import (
    SENTENCE_FIELDS,
    check_sentence_table,
    grouped_by,
    read_documents,
    read_rows,
    sentence_files,
)


@dataclass(frozen=True)
class Pool:
    """The unlabelled documents self-training uses, and what was left out and why."""

    documents: list[DocPair]
    read: int
    without_both_sides: int
    gold_documents: int
    mc_clean_test: int
    dev: int
    over_cap: int
    # the `watch` ids found among the usable documents, with their content (`doc_digest`)
    watched: Mapping[str, str] = field(default_factory=dict)
    # every usable document, as the first 12 hex digits of the hash of its id (`keep_pinned`
    # counts the reviews added since a model was trained by these)
    keys: frozenset[str] = frozenset()

    @property
    def eligible(self) -> int:
        """Documents the pool could use (before the `max_documents` cap)."""
        return len(self.documents) + self.over_cap

    def stats(self) -> dict[str, int]:
        return {
            "pool_read": self.read,
            "pool_eligible": self.eligible,
            "pool_used": len(self.documents),
            "pool_skipped_one_side_empty": self.without_both_sides,
            "pool_skipped_gold_document": self.gold_documents,
            "pool_skipped_mc_clean_test": self.mc_clean_test,
            "pool_skipped_dev_review": self.dev,
            "pool_over_max_documents": self.over_cap,
        }


def _rank(doc_id: str) -> str:
    return hashlib.sha256(doc_id.encode("utf-8")).hexdigest()


def choose_pool(
    docs: Iterable[DocPair], gold: Sequence[DocPair], max_documents: int, watch: Collection[str] = ()
) -> Pool:
    """The documents of `docs` self-training may use: both sides non-empty, not a gold
    document (same review), not an MC-CLEAN test review nor a dev review (`DEV_REVIEWS`); at
    most `max_documents` (0: all), the lowest hashes of their ids. Streams `docs`, holding at
    most twice `max_documents` of them; a document id seen twice is a ValueError (the choice
    would depend on the order). `watch`: ids whose presence among the usable documents the
    returned pool reports (`watched`: a pinned model's pool, `pinned_model`)."""
    watch = frozenset(watch)
    watched: dict[str, str] = {}
    keys: set[str] = set()
    gold_reviews = {review_key(d.doc_id) for d in gold}
    read = one_side = in_gold = in_test = in_dev = 0
    seen: set[str] = set()
    kept: list[tuple[str, str, DocPair]] = []
    for d in docs:
        read += 1
        if d.doc_id in seen:
            raise ValueError(f"document id {d.doc_id!r} appears twice in the self-training pool")
        seen.add(d.doc_id)
        rid = review_key(d.doc_id)
        if not (d.complex and d.simple):
            one_side += 1
        elif rid in MC_CLEAN_TEST_REVIEWS:
            in_test += 1
        elif rid in DEV_REVIEWS:
            in_dev += 1
        elif rid in gold_reviews:
            in_gold += 1
        else:
            if d.doc_id in watch:
                watched[d.doc_id] = doc_digest(d)
            rank = _rank(d.doc_id)
            keys.add(rank[:12])
            kept.append((rank, d.doc_id, d))
            if max_documents and len(kept) >= 2 * max_documents:  # bounded memory: the lowest ranks
                kept = heapq.nsmallest(max_documents, kept, key=lambda x: x[:2])
    eligible = read - one_side - in_test - in_dev - in_gold
    chosen = sorted(kept, key=lambda x: x[:2])[: max_documents or None]
    return Pool(
        [d for _, _, d in chosen],
        read,
        one_side,
        in_gold,
        in_test,
        in_dev,
        eligible - len(chosen),
        watched,
        frozenset(keys),
    )


def doc_digest(d: DocPair) -> str:
    """A content hash of one unlabelled document (its id and sentences)."""
    return hashlib.sha256(
        json.dumps([d.doc_id, list(d.complex), list(d.simple)], ensure_ascii=False).encode("utf-8")
    ).hexdigest()


def pool_record(pool: Pool) -> dict[str, Any]:
    """What `align train` records of the pool a model learnt from (its stats.json's
    `self_training`), for `keep_pinned` to compare the next run's pool with."""
    return {
        "pool_digest": pool_digest(pool.documents),
        "pool_docs": {d.doc_id: doc_digest(d) for d in pool.documents},
        "pool_keys": sorted(pool.keys),
    }


def pool_digest(documents: Sequence[DocPair]) -> str:
    """A content hash of the pool's documents (ids and sentences, in pool order)."""
    h = hashlib.sha256()
    for d in documents:
        h.update(json.dumps([d.doc_id, list(d.complex), list(d.simple)], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def keep_pinned(previous: Mapping[str, Any], recipe: str, pool: Pool, retrain_after_new: int) -> str | None:
    """Why the model `align train` wrote before (its stats.json's `self_training`, `previous`,
    with `pool_record`'s keys) can stay as it is, or None to retrain (issue 55: a new review must
    not change the old reviews' pairs). It stays when it was made by the same `recipe` (gold,
    align.crf, the self-training knobs, encoder, code) and either its pool is today's word for
    word (retraining would give the same bytes) or, with `retrain_after_new` > 0, every review
    it learnt from is still usable with the same sentences and fewer than `retrain_after_new`
    usable reviews are new since it was trained. `pool` was chosen watching `pool_docs`."""
    if previous.get("recipe") != recipe:
        return None
    docs, then = previous.get("pool_docs"), previous.get("pool_keys")
    if not isinstance(docs, dict) or not isinstance(then, list):
        return None
    if previous.get("pool_digest") == pool_digest(pool.documents):
        return "its pool is today's, word for word: retraining gives the same model"
    added = len(pool.keys - set(then))
    if retrain_after_new and dict(pool.watched) == docs and added < retrain_after_new:
        return (
            f"pinned: {added} usable review(s) new since it was trained, it retrains at "
            f"{retrain_after_new} (align.self_training.retrain_after_new)"
        )
    return None


def pseudo_documents(model: CRFAligner, docs: Sequence[DocPair], min_posterior: float) -> list[DocPair]:
    """Whole documents labelled by the model: every pair of its merged output with posterior >=
    min_posterior (the reviews keep their share of unaligned sentences)."""
    labelled = []
    with counting("self-training: labelling reviews", len(docs)) as tick:  # progress only
        for d in docs:
            pairs = model.align(d.complex, d.simple).pairs
            labelled.append(
                DocPair(
                    d.doc_id,
                    d.complex,
                    d.simple,
                    frozenset(k for k, p in pairs.items() if p >= min_posterior),
                    d.group,
                )
            )
            tick()
    return labelled


def self_train(
    gold: Sequence[DocPair], pool: Sequence[DocPair], encoder, crf: Crf, params: SelfTraining
) -> tuple[CRFAligner, dict[str, int]]:
    """The CRF trained on the gold, then retrained on the gold + the pool as it labels it.
    With an empty pool the gold-only model is returned (the stats say so). The pool is labelled
    with `crf.deletion_prior` 0; both models carry `crf`'s."""
    model = CRFAligner.train(gold, encoder, crf)
    if not pool:
        return model, {"pseudo_documents": 0, "pseudo_pairs": 0}
    # the pool is labelled without the deletion prior (as the design measured it); the model
    # trained on it decodes with it
    labeller = CRFAligner(encoder, updated(crf, {"deletion_prior": 0.0}), model.forward, model.reverse)
    pseudo = pseudo_documents(labeller, pool, params.min_posterior)
    info = {"pseudo_documents": len(pseudo), "pseudo_pairs": sum(len(d.pairs) for d in pseudo)}
    return CRFAligner.train([*gold, *pseudo], encoder, crf), info


def english_documents(input_dir: str) -> Iterator[DocPair]:
    """Every document of a sentence table as an unlabelled English DocPair (its English
    abstract and PLS sentences, as the CRF aligns them), read through Beam's FileSystems outside
    a pipeline: `align train`'s self-training pool. A table `cochrane` wrote is streamed a
    document at a time; one whose documents span files is grouped in memory first."""
    files = sentence_files(input_dir)
    check_sentence_table(files)  # a column, cell or sentence amiss is one line, before any row is used
    if grouped_by(files, ["doc_id"]):
        docs: Iterator[tuple[str, list[dict]]] = (
            (key[0], rows)
            for f in files
            for key, rows in read_documents(f, ["doc_id"], list(SENTENCE_FIELDS))
        )
    else:
        by_doc: dict[str, list[dict]] = defaultdict(list)
        for f in files:
            for r in read_rows(f, list(SENTENCE_FIELDS)):
                by_doc[r["doc_id"]].append(r)
        docs = iter(sorted(by_doc.items()))
    for doc_id, rows in docs:
        complex_, simple = english_sides(rows)
        yield DocPair(doc_id, complex_, simple, frozenset(), review_key(doc_id))
