"""Neural CRF aligner: exact banded inference, training on constructed gold, 1-N / N-1,
insertions, deletions, empty sides, a 1000-sentence document, save/load."""

from __future__ import annotations

import itertools
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "alignment"))
from fakes import HashEncoder, random_sentences  # noqa: E402

from alignment.crf import CRFAligner, CRFScorer, lattice  # noqa: E402
from alignment.features import null_features  # noqa: E402
from alignment.gold import DocPair  # noqa: E402
from alignment.score import pair_prf  # noqa: E402
from medsimp.errors import InputError  # noqa: E402
from medsimp.params_schema import Crf


@pytest.mark.parametrize("cap,n,m", [(2, 3, 4), (3, 4, 3), (5, 4, 6), (2, 1, 1), (4, 2, 1)])
def test_banded_inference_is_exact(cap, n, m):
    """Viterbi, log Z and marginals in O(n m cap) equal brute force over all labellings."""
    torch.manual_seed(cap * 7 + n)
    scorer = CRFScorer(jump_cap=cap)
    for p in scorer.parameters():
        p.data.normal_(0, 1)
    f = np.random.RandomState(n * 10 + m).rand(n, m, 8).astype(np.float32)
    lat = lattice(scorer, f)
    marg, logz = lat.forward_backward()
    with torch.no_grad():
        e = scorer.emissions(torch.tensor(f), torch.tensor(null_features(f))).double().numpy()
        trans, start = (x.double().numpy() for x in scorer.full_transitions(m))
    scores = {
        path: start[path[0]]
        + e[0, path[0]]
        + sum(trans[path[i - 1], path[i]] + e[i, path[i]] for i in range(1, n))
        for path in itertools.product(range(m + 1), repeat=n)
    }
    bz = np.logaddexp.reduce(np.array(list(scores.values())))
    brute = np.zeros((n, m + 1))
    for path, s in scores.items():
        for i, a in enumerate(path):
            brute[i, a] += np.exp(s - bz)
    assert logz == pytest.approx(bz, abs=1e-6)
    assert np.abs(brute - marg).max() < 1e-6
    assert scores[tuple(lat.viterbi())] == pytest.approx(max(scores.values()))
    best = max(scores, key=scores.get)
    with torch.no_grad():
        nll = scorer.nll(torch.tensor(f), torch.tensor(null_features(f)), torch.tensor(best)).item()
    assert nll == pytest.approx(bz - scores[best], abs=1e-3)


def _doc(seed: int, n: int = 10) -> DocPair:
    """Simple side edits a complex side: copies with a dropped word, a split (1-N), a merge (N-1),
    a deleted complex sentence and an inserted simple sentence."""
    rng = random.Random(seed)
    c = random_sentences(n, seed=seed)
    simple, pairs = [], set()
    i = 0
    while i < n:
        op = rng.choice(["copy", "copy", "copy", "split", "merge", "delete", "insert"])
        words = c[i].rstrip(".").split()
        if op == "split":
            simple += [" ".join(words[:5]) + ".", " ".join(words[5:]) + "."]
            pairs |= {(i, len(simple) - 2), (i, len(simple) - 1)}
        elif op == "merge" and i + 1 < n:
            simple.append(" ".join(words[:4] + c[i + 1].split()[:4]) + ".")
            pairs |= {(i, len(simple) - 1), (i + 1, len(simple) - 1)}
            i += 1
        elif op == "delete":
            pass
        elif op == "insert":
            simple.append(random_sentences(1, seed=seed * 1000 + i)[0])
            continue
        else:
            del words[rng.randrange(len(words))]
            simple.append(" ".join(words) + ".")
            pairs.add((i, len(simple) - 1))
        i += 1
    return DocPair(f"d{seed}", c, simple, frozenset(pairs))


@pytest.fixture(scope="module")
def trained():
    torch.set_num_threads(1)
    return CRFAligner.train([_doc(s) for s in range(12)], HashEncoder(), Crf(epochs=15))


def test_constructed_documents(trained):
    docs = [_doc(s) for s in range(100, 110)]
    res = [trained.align(d.complex, d.simple) for d in docs]
    prf = pair_prf([set(d.pairs) for d in docs], [set(r.pairs) for r in res])
    assert prf["f1"] >= 0.95
    for d, r in zip(docs, res):
        for score in r.pairs.values():
            assert 0.0 <= score <= 1.0 + 1e-9
        covered_c = {c for b in r.blocks for c in b[0]}
        covered_s = {s for b in r.blocks for s in b[1]}
        assert covered_c == set(range(len(d.complex))) and covered_s == set(range(len(d.simple)))


def test_one_to_many_and_many_to_one(trained):
    c = random_sentences(4, seed=500)
    w0, w2, w3 = c[0].rstrip(".").split(), c[2].split(), c[3].split()
    simple = [" ".join(w0[:5]) + ".", " ".join(w0[5:]) + ".", c[1], " ".join(w2[:5] + w3[:5]) + "."]
    res = trained.align(c, simple)
    assert ((0,), (0, 1)) in res.blocks
    assert ((2, 3), (3,)) in res.blocks


def test_insertion_and_deletion(trained):
    c = random_sentences(5, seed=600)
    extra = random_sentences(1, seed=601)[0]
    simple = [c[0], extra, c[1], c[3], c[4]]
    res = trained.align(c, simple)
    assert set(res.pairs) == {(0, 0), (1, 2), (3, 3), (4, 4)}
    assert ((), (1,)) in res.blocks and ((2,), ()) in res.blocks


def test_empty_sides(trained):
    assert trained.align([], ["a b c"]).blocks == [((), (0,))]
    assert trained.align(["a", "b"], []).blocks == [((0,), ()), ((1,), ())]
    assert trained.align([], []).pairs == {}


@pytest.mark.slow  # a timing or corpus-size check: out of the fast loop
def test_thousand_sentence_document_bounded(trained):
    c = random_sentences(1000, seed=7, length=6)
    s = [x for i, x in enumerate(c) if i % 10]  # 900 simple sentences: every 10th deleted
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    res = trained.align(c, s)
    elapsed = time.perf_counter() - t0
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024  # growth of peak RSS
    assert elapsed < 90 and peak < 600 * 2**20
    gold = {(i, k) for k, i in enumerate(i for i in range(1000) if i % 10)}
    assert pair_prf([gold], [set(res.pairs)])["f1"] > 0.98


def test_save_load_roundtrip(trained, tmp_path):
    trained.save(tmp_path / "m")
    loaded = CRFAligner.load(tmp_path / "m", HashEncoder())
    d = _doc(321)
    assert loaded.align(d.complex, d.simple).pairs == trained.align(d.complex, d.simple).pairs
    other = HashEncoder()
    other.name = "something-else"
    with pytest.raises(InputError, match="trained with encoder"):
        CRFAligner.load(tmp_path / "m", other)


def test_an_encoder_of_the_same_name_with_other_content_is_refused(trained, tmp_path):
    """Issue 54: a CRF trained over one encoder folder aligned with another encoder of the same
    folder name without complaint. The model records the encoder's content (as the caches key
    it) and refuses another; a model saved before it recorded one loads by name as before."""
    import json

    trained.save(tmp_path / "m")
    assert json.loads((tmp_path / "m" / "config.json").read_text())["encoder_sha256"] == "hash-bow-512"
    same_name = HashEncoder(dim=256)  # named "hash-bow" too, other weights
    assert same_name.name == HashEncoder().name
    with pytest.raises(InputError, match="another encoder of the same name 'hash-bow'"):
        CRFAligner.load(tmp_path / "m", same_name)
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    del config["encoder_sha256"]  # as saved before 2026-12
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    CRFAligner.load(tmp_path / "m", HashEncoder())


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"encoder": "%s", "bogus": 1}', r"not an align.crf config \(bogus: Extra inputs"),
        ('{"encoder": "%s", "jump_cap": "8"}', r"not an align.crf config \(jump_cap: "),
        ("[1, 2]", "not a JSON object"),
        ("{not json", r"cannot be read \(JSONDecodeError\)"),
    ],
)
def test_a_foreign_model_config_is_one_line(trained, tmp_path, config, message):
    trained.save(tmp_path / "m")
    text = config % HashEncoder().name if "%s" in config else config
    (tmp_path / "m" / "config.json").write_text(text)
    with pytest.raises(InputError, match=message):
        CRFAligner.load(tmp_path / "m", HashEncoder())


def test_the_deletion_prior_lowers_only_the_null_emission_of_the_rows():
    """Issue 53 section 6: params align.crf.deletion_prior takes its value off each row's NULL
    emission and nothing else; large enough, every row aligns, negative-large none."""
    torch.manual_seed(0)
    scorer = CRFScorer(jump_cap=4, hidden=4)
    f = np.random.RandomState(0).rand(5, 3, 8).astype(np.float32)
    plain, prior = lattice(scorer, f), lattice(scorer, f, 2.0)
    np.testing.assert_allclose(prior.emit[:, 0], plain.emit[:, 0] - 2.0, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(prior.emit[:, 1:], plain.emit[:, 1:])
    assert (prior.aa == plain.aa).all() and (prior.nn, prior.an, prior.na) == (plain.nn, plain.an, plain.na)
    assert 0 not in lattice(scorer, f, 1e4).viterbi()
    assert set(lattice(scorer, f, -1e4).viterbi()) == {0}


def test_a_deletion_prior_aligns_an_inserted_pls_sentence_and_is_saved_only_when_set(trained, tmp_path):
    """Default 0 (params.yaml): the PLS sentence no abstract sentence matches stays unaligned and
    a saved model's config has no such key (its bytes, and so its content hash, as before the
    param). With a prior it is aligned, and the model saved with it decodes with it."""
    from medsimp.config import load_params
    from medsimp.params_schema import updated

    assert load_params(Path(__file__).parents[1] / "params.yaml", []).align.crf.deletion_prior == 0.0
    c = random_sentences(5, seed=600)
    simple = [c[0], random_sentences(1, seed=601)[0], c[1], c[3], c[4]]
    assert 1 not in {s for _, s in trained.align(c, simple).pairs}
    trained.save(tmp_path / "plain")
    assert "deletion_prior" not in (tmp_path / "plain" / "config.json").read_text()
    eager = CRFAligner(
        trained.encoder, updated(trained.config, {"deletion_prior": 50.0}), trained.forward, trained.reverse
    )
    pairs = eager.align(c, simple).pairs
    assert 1 in {s for _, s in pairs} and {(0, 0), (1, 2), (3, 3), (4, 4)} <= set(pairs)
    eager.save(tmp_path / "eager")
    loaded = CRFAligner.load(tmp_path / "eager", HashEncoder())
    assert loaded.config.deletion_prior == 50.0 and loaded.align(c, simple).pairs == pairs
