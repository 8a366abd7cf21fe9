"""Alignment scores: Vecalign's strict/lax P/R/F1 over blocks, and P/R/F1 over sentence pairs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sentalign.score import score_multiple

from alignment.gold import Block


def format_block(block: Block, score: float | None = None) -> str:
    """`[i, j]:[k]` (Vecalign's output format), with `:score` when given."""
    src, tgt = block
    line = f"{list(src)}:{list(tgt)}"
    return line if score is None else f"{line}:{score:.6f}"


def vecalign_scores(gold: Sequence[Sequence[Block]], test: Sequence[Sequence[Block]]) -> dict[str, float]:
    """Strict and lax precision/recall/F1 exactly as Vecalign's `score.py` (Thompson's code).

    Strict: a test block counts when it equals a gold block. Lax: when it shares a source
    and a target sentence with a gold block. Precision is over test blocks that are not
    empty on both sides; recall is over gold blocks that are non-empty on both sides.
    """
    g = [[(list(a), list(b)) for a, b in doc] for doc in gold]
    t = [[(list(a), list(b)) for a, b in doc] for doc in test]
    return {k: float(v) for k, v in score_multiple(gold_list=g, test_list=t).items()}


def blocks_to_pairs(blocks: Iterable[Block]) -> set[tuple[int, int]]:
    """Every (source, target) sentence pair inside a block."""
    return {(i, j) for src, tgt in blocks for i in src for j in tgt}


def pairs_to_blocks(pairs: Iterable[tuple[int, int]], n_src: int, n_tgt: int) -> list[Block]:
    """Group pairs into connected components; unaligned sentences become 1-0 / 0-1 blocks.

    Blocks are ordered by their first source index; an insertion (0-1 block) goes where its
    target falls in that order.
    """
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in pairs:
        a, b = find(("s", i)), find(("t", j))
        if a != b:
            parent[a] = b
    comps: dict = {}
    for i in range(n_src):
        comps.setdefault(find(("s", i)), ([], []))[0].append(i)
    for j in range(n_tgt):
        comps.setdefault(find(("t", j)), ([], []))[1].append(j)
    blocks = [(tuple(sorted(a)), tuple(sorted(b))) for a, b in comps.values()]

    def key(b: Block):
        if b[0]:
            return (min(b[0]), 1, min(b[1]) if b[1] else -1)
        # an insertion goes right after the sources of the blocks holding earlier targets
        before = [max(o[0]) for o in blocks if o[0] and o[1] and min(o[1]) < b[1][0]]
        return (max(before) + 1 if before else 0, 0, b[1][0])

    return sorted(blocks, key=key)


def pair_prf(gold: Sequence[set[tuple[int, int]]], test: Sequence[set[tuple[int, int]]]) -> dict[str, float]:
    """Micro precision/recall/F1 over aligned (complex, simple) sentence pairs across documents."""
    tp = sum(len(g & t) for g, t in zip(gold, test, strict=True))
    n_test = sum(len(t) for t in test)
    n_gold = sum(len(g) for g in gold)
    p = tp / n_test if n_test else 0.0
    r = tp / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f, "tp": tp, "n_test": n_test, "n_gold": n_gold}
