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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from alignment.crf import CRFAligner
from alignment.gold import DocPair
from medsimp.params_schema import Crf, SelfTraining, updated
from medsimp.reviews import DEV_REVIEWS, MC_CLEAN_TEST_REVIEWS, review_key


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

    def stats(self) -> dict[str, int]:
        return {
            "pool_read": self.read,
            "pool_used": len(self.documents),
            "pool_skipped_one_side_empty": self.without_both_sides,
            "pool_skipped_gold_document": self.gold_documents,
            "pool_skipped_mc_clean_test": self.mc_clean_test,
            "pool_skipped_dev_review": self.dev,
            "pool_over_max_documents": self.over_cap,
        }


def _rank(doc_id: str) -> str:
    return hashlib.sha256(doc_id.encode("utf-8")).hexdigest()


def choose_pool(docs: Iterable[DocPair], gold: Sequence[DocPair], max_documents: int) -> Pool:
    """The documents of `docs` self-training may use: both sides non-empty, not a gold
    document (same review), not an MC-CLEAN test review nor a dev review (`DEV_REVIEWS`); at
    most `max_documents` (0: all), the lowest hashes of their ids. Streams `docs`, holding at
    most twice `max_documents` of them; a document id seen twice is a ValueError (the choice
    would depend on the order)."""
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
            kept.append((_rank(d.doc_id), d.doc_id, d))
            if max_documents and len(kept) >= 2 * max_documents:  # bounded memory: the lowest ranks
                kept = heapq.nsmallest(max_documents, kept, key=lambda x: x[:2])
    eligible = read - one_side - in_test - in_dev - in_gold
    chosen = sorted(kept, key=lambda x: x[:2])[: max_documents or None]
    return Pool([d for _, _, d in chosen], read, one_side, in_gold, in_test, in_dev, eligible - len(chosen))


def pseudo_documents(model: CRFAligner, docs: Sequence[DocPair], min_posterior: float) -> list[DocPair]:
    """Whole documents labelled by the model: every pair of its merged output with posterior >=
    min_posterior (the reviews keep their share of unaligned sentences)."""
    return [
        DocPair(
            d.doc_id,
            d.complex,
            d.simple,
            frozenset(k for k, p in model.align(d.complex, d.simple).pairs.items() if p >= min_posterior),
            d.group,
        )
        for d in docs
    ]


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
