"""Vecalign wrapper, Vecalign-format scorer and the embedding cache on constructed documents."""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "alignment"))
from fakes import HashEncoder, random_sentences  # noqa: E402

from alignment import vecalign  # noqa: E402
from alignment.encoders import CachedEncoder  # noqa: E402
from alignment.gold import parse_blocks  # noqa: E402
from alignment.score import format_block, vecalign_scores  # noqa: E402
from medsimp.params_schema import Vecalign


def _constructed():
    s = random_sentences(12, seed=1)
    extra = random_sentences(1, seed=99)[0]
    # tgt: copies, an insertion, 2+3 merged (2-1), 4 deleted, 5 split in two (1-2), rest copied
    half = s[5].split(" ")
    tgt = [s[0], s[1], extra, s[2] + " " + s[3], " ".join(half[:5]), " ".join(half[5:])] + s[6:]
    gold = [((0,), (0,)), ((1,), (1,)), ((), (2,)), ((2, 3), (3,)), ((4,), ()), ((5,), (4, 5))] + [
        ((i,), (i,)) for i in range(6, 12)
    ]
    return s, tgt, gold


# Bag-of-words vectors of made-up words are nearly orthogonal: unmatched pairs all cost the
# same, so the knob is read over all random pairs (as published) and set low.
FAKE = Vecalign(alignment_max_size=4, del_percentile_frac=0.05, del_percentile_of="random")


def test_insertion_deletion_merge_split():
    src, tgt, gold = _constructed()
    res = vecalign.align(src, tgt, HashEncoder(), params=FAKE)
    assert res.blocks == gold
    assert vecalign_scores([gold], [res.blocks])["f1_strict"] == 1.0
    assert len(res.scores) == len(res.blocks)


def test_empty_sides():
    enc = HashEncoder()
    assert vecalign.align([], ["a b"], enc).blocks == [((), (0,))]
    assert vecalign.align(["a", "b"], [], enc).blocks == [((0,), ()), ((1,), ())]
    assert vecalign.align([], [], enc).blocks == []


def test_mean_overlap_mode_aligns_merges():
    src, tgt, _ = _constructed()
    res = vecalign.align(src, tgt, HashEncoder(), params=FAKE.model_copy(update={"overlap_mode": "mean"}))
    assert ((2, 3), (3,)) in set(res.blocks)


@pytest.mark.slow  # a timing or corpus-size check: out of the fast loop
def test_thousand_sentences_bounded_time_and_memory():
    src = random_sentences(1000, seed=3, length=6)
    tgt = src[:500] + random_sentences(3, seed=4) + src[500:]
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    res = vecalign.align(src, tgt, HashEncoder(dim=256), params=Vecalign(alignment_max_size=3))
    elapsed = time.perf_counter() - t0
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024  # growth of peak RSS
    assert elapsed < 60 and peak < 400 * 2**20
    assert res.timing["dp_s"] < 30
    correct = sum(1 for a, b in res.blocks if a == b and a and a[0] < 500)
    assert correct >= 495


def test_scorer_hand_example():
    gold = parse_blocks(["[0]:[0]", "[1, 2]:[1]", "[3]:[]", "[4]:[2, 3]"])
    test = parse_blocks(["[0]:[0]:0.1", "[1]:[1]", "[2]:[]", "[3]:[2]", "[4]:[3]"])
    s = vecalign_scores([gold], [test])
    # precision over test blocks (non-empty): strict 1/5; lax: [1]:[1] and [4]:[3] also overlap gold -> 3/5
    assert s["precision_strict"] == pytest.approx(1 / 5)
    assert s["precision_lax"] == pytest.approx(3 / 5)
    # recall over gold blocks non-empty on both sides ([3]:[] excluded): strict 1/3; lax 3/3
    assert s["recall_strict"] == pytest.approx(1 / 3)
    assert s["recall_lax"] == pytest.approx(1.0)
    assert format_block(((1, 2), ()), 0.5) == "[1, 2]:[]:0.500000"


def test_cache_reuses_embeddings(tmp_path):
    src, tgt, _ = _constructed()
    inner = HashEncoder()
    enc = CachedEncoder(inner, str(tmp_path))
    first = vecalign.align(src, tgt, enc)
    calls = inner.calls
    again = CachedEncoder(inner, str(tmp_path))
    second = vecalign.align(src, tgt, again)
    assert inner.calls == calls and again.misses == 0 and again.hits > 0
    assert first.blocks == second.blocks and first.scores == second.scores


def test_documents_aligned_at_once_in_threads_score_as_alone():
    """Beam runs bundles of one worker on several threads. sentalign samples with the global
    RNGs after vecalign.align seeds them: two alignments at once must not draw from each
    other's sequence (the scores moved by 1e-7 under load before the lock)."""
    import threading

    docs = [(random_sentences(14, seed=k), random_sentences(11, seed=k + 50)) for k in range(2)]
    encoder = HashEncoder()
    alone = [vecalign.align(src, tgt, encoder, params=FAKE).scores for src, tgt in docs]
    moved: list[int] = []

    def work(k: int) -> None:
        for _ in range(12):
            if vecalign.align(*docs[k], encoder, params=FAKE).scores != alone[k]:
                moved.append(k)

    threads = [threading.Thread(target=work, args=(k % 2,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert moved == []
