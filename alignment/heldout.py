"""Held-out scoring of an aligner on real Cochrane gold, with the lexical baselines beside it.

Shared by scripts/eval_alignment.py (`--only cochrane`, and the PLABA cross-validation's
baselines) and scripts/check_real_data.py. The gold: MultiCochrane's released MC-CLEAN English
test pairs placed in their reviews' documents (`cochrane_gold`); the baselines: a Jaccard or a
TF-IDF cosine threshold over every sentence pair (`jaccard`, `tfidf_fn`), the threshold tuned
for pair F1 on the training documents (`tune`) and scored on held-out ones (`eval_cochrane`,
2-fold by review).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from alignment.crf import CRFAligner
from alignment.encoders import make_encoder
from alignment.gold import DocPair
from alignment.score import pair_prf
from alignment.selftrain import self_train
from alignment.text import content_tokens
from medsimp.params_schema import Crf, SelfTraining
from medsimp.reviews import review_key
from medsimp.text import multilingual

Similarity = Callable[[DocPair], np.ndarray]


def jaccard(doc: DocPair, stopwords: str = "spacy") -> np.ndarray:
    """Jaccard overlap of content tokens, complex x simple sentences."""
    c = [content_tokens(t, stopwords) for t in doc.complex]
    s = [content_tokens(t, stopwords) for t in doc.simple]
    return np.array([[len(a & b) / max(len(a | b), 1) for b in s] for a in c])


def tfidf_fn(train_docs: Sequence[DocPair]) -> Similarity:
    """TF-IDF cosine, complex x simple sentences, the vocabulary fitted on the training documents."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(lowercase=True).fit([t for d in train_docs for t in d.complex + d.simple])

    def sim(doc: DocPair) -> np.ndarray:
        return (vec.transform(doc.complex) @ vec.transform(doc.simple).T).toarray()

    return sim


def threshold_pairs(sim: np.ndarray, t: float) -> set[tuple[int, int]]:
    """Every (complex, simple) pair whose similarity reaches the threshold."""
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(sim >= t), strict=True)}


def tune(docs: Sequence[DocPair], sims: Sequence[np.ndarray]) -> float:
    """The threshold (0.02..0.94, step 0.01) of best pair F1 on these documents."""
    grid = np.round(np.arange(0.02, 0.95, 0.01), 2)
    f1 = [pair_prf([set(d.pairs) for d in docs], [threshold_pairs(s, t) for s in sims])["f1"] for t in grid]
    return float(grid[int(np.argmax(f1))])


BASELINES: dict[str, Callable[[Sequence[DocPair]], Similarity]] = {
    "jaccard": lambda _: jaccard,
    "tfidf": tfidf_fn,
}


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def sentence_ids(text: str, sents: list[str]) -> list[int]:
    """Which of our sentences hold a gold sentence: the equal one, else ours that make it up
    (each a part of it, together >= 80% of it), else the one that contains it."""
    t = _norm(text)
    same = [i for i, x in enumerate(sents) if _norm(x) == t]
    if same:
        return same[:1]
    parts = [i for i, x in enumerate(sents) if _norm(x) in t and len(_norm(x)) >= 0.2 * len(t)]
    if parts and sum(len(_norm(sents[i])) for i in parts) >= 0.8 * len(t):
        return parts
    return [i for i, x in enumerate(sents) if t in _norm(x)][:1]


def devaraj_test_file(folder: Path, side: str) -> Path:
    """Devaraj et al.'s `test.<side>` (or MultiCochrane's copy, `test.<side>.txt`) in folder."""
    for name in (f"test.{side}", f"test.{side}.txt"):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"no test.{side} in {folder}")


def has_test_files(folder: Path) -> bool:
    """Whether folder holds both sides of Devaraj et al.'s test split."""
    return all(
        any((folder / f"test.{side}{ext}").exists() for ext in ("", ".txt")) for side in ("source", "target")
    )


def cochrane_gold(pairs_path: Path, test_dir: Path) -> tuple[list[DocPair], dict]:
    """Document-level English Cochrane gold: MultiCochrane's released MC-CLEAN English test
    pairs (`input` abstract sentence, `gold` PLS sentence, `doi`; 22 reviews) placed in their
    reviews' documents from Devaraj et al.'s test files (abstract from "Main results" on, and
    the PLS; `test.source`/`test.target`, one review a line). A review is the line holding
    most of its pairs' sentences; both sides are split by the project's splitter
    (`medsimp.text.multilingual`, as `medsimp cochrane`), and a gold pair is kept when both
    of its sentences are in that document (Background/Methods sentences are not)."""
    rows = json.loads(pairs_path.read_text(encoding="utf-8"))
    src = devaraj_test_file(test_dir, "source").read_text(encoding="utf-8").splitlines()
    tgt = devaraj_test_file(test_dir, "target").read_text(encoding="utf-8").splitlines()
    nsrc, ntgt = [_norm(x) for x in src], [_norm(x) for x in tgt]
    by_doi: dict[str, list[dict]] = defaultdict(list)  # by review (`review_key`): one document each
    for r in rows:
        by_doi[review_key(r["doi"])].append(r)
    docs, info = [], {"reviews": len(by_doi), "gold_pairs_released": len(rows), "reviews_not_found": 0}
    info.update(complex_not_in_document=0, simple_not_in_document=0, gold_pairs_in_documents=0)
    for doi in sorted(by_doi):
        votes: dict[int, int] = defaultdict(int)
        for r in by_doi[doi]:
            for k in range(len(src)):
                votes[k] += (_norm(r["input"]) in nsrc[k]) + (_norm(r["gold"]) in ntgt[k])
        k = max(votes, key=lambda x: (votes[x], -x))
        if not votes[k]:
            info["reviews_not_found"] += 1
            continue
        complex_ = [s.text for s in multilingual.split_sentences(src[k], "en")]
        simple = [s.text for s in multilingual.split_sentences(tgt[k], "en")]
        pairs = set()
        for r in by_doi[doi]:
            ci, si = sentence_ids(r["input"], complex_), sentence_ids(r["gold"], simple)
            info["complex_not_in_document"] += not ci
            info["simple_not_in_document"] += not si
            info["gold_pairs_in_documents"] += bool(ci and si)
            pairs |= {(a, b) for a in ci for b in si}
        docs.append(DocPair(by_doi[doi][0]["doi"], complex_, simple, frozenset(pairs), doi))
    info["documents"] = len(docs)
    info["gold_sentence_pairs"] = sum(len(d.pairs) for d in docs)
    return docs, info


def eval_cochrane(
    docs: list[DocPair],
    crf: Crf,
    cache: str,
    base_gold: list[DocPair] | None,
    models: Mapping[str, str | Path],
    cv: bool = True,
    self_training: SelfTraining | None = None,
    pool: Sequence[DocPair] = (),
) -> dict:
    """Pair P/R/F1 on the Cochrane documents (`cochrane_gold`), every system scored on reviews
    it never saw: the CRF trained on the base gold (`crf_base_gold`; params align.gold, the
    recipe of the DAG's default model; skipped when base_gold is None), each trained model of
    `models` (NAME -> model folder, e.g. the DAG's out/models/crf_aligner or the PLABA-trained
    one of scripts/train_real_aligner.py), with `cv` the CRF trained on the base gold plus the
    other half of the reviews (`crf_base_plus_cochrane_cv`, 2-fold by DOI), and the Jaccard /
    TF-IDF threshold baselines tuned on the other half. With `self_training` enabled (params
    align.self_training), also the CRF self-trained from the base gold on `pool`, unlabelled
    reviews none of which is scored here (`crf_base_gold_self_trained`: the DAG's recipe)."""
    if {review_key(d.doc_id) for d in pool} & {review_key(d.doc_id) for d in docs}:
        raise ValueError("the self-training pool holds a review that is scored")
    encoder = make_encoder(crf.encoder, cache)
    groups = sorted({d.group for d in docs})
    folds = [set(groups[0::2]), set(groups[1::2])]
    systems: dict[str, CRFAligner] = {}
    if base_gold is not None:
        systems["crf_base_gold"] = CRFAligner.train(base_gold, encoder, crf)
        if self_training is not None and self_training.enabled:
            systems["crf_base_gold_self_trained"], _ = self_train(
                base_gold, pool, encoder, crf, self_training
            )
    for name, path in models.items():
        systems[name] = CRFAligner.load(path, encoder, crf.merge)
    cv = cv and base_gold is not None
    names = [*systems, *(["crf_base_plus_cochrane_cv"] if cv else []), *BASELINES]
    pred: dict[str, dict[str, set]] = {name: {} for name in names}
    for name, model in systems.items():
        for d in docs:
            pred[name][d.doc_id] = set(model.align(d.complex, d.simple).pairs)
    info: dict = {"thresholds": {}}
    for k, test_groups in enumerate(folds):
        train = [d for d in docs if d.group not in test_groups]
        test = [d for d in docs if d.group in test_groups]
        if cv and base_gold is not None:
            model = CRFAligner.train(base_gold + train, encoder, crf)
            for d in test:
                pred["crf_base_plus_cochrane_cv"][d.doc_id] = set(model.align(d.complex, d.simple).pairs)
        for name, fn in BASELINES.items():
            sim = fn(train)
            t = tune(train, [sim(d) for d in train])
            info["thresholds"][f"{name}_fold{k}"] = t
            for d in test:
                pred[name][d.doc_id] = threshold_pairs(sim(d), t)
    gold = [set(d.pairs) for d in docs]
    for name, p in pred.items():
        info[name] = pair_prf(gold, [p[d.doc_id] for d in docs])
    return info
