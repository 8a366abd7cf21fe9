"""scripts/aligner_designs.py's helpers on hand-written fixtures (no ../shared)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from alignment.devgold import COCHRANE_DEV
from alignment.gold import DocPair
from medsimp.reviews import review_key

SCRIPT = Path(__file__).parents[1] / "scripts" / "aligner_designs.py"


@pytest.fixture(scope="module")
def ad():
    spec = importlib.util.spec_from_file_location("aligner_designs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_versions_of_one_review_share_an_id_so_a_test_review_never_enters_the_pool(ad):
    assert review_key("10.1002/14651858.CD006647.pub4") == review_key("10.1002/14651858.CD006647.pub2")
    assert review_key("10.1002/14651858.CD006647.pub4") != review_key("10.1002/14651858.CD006648.pub4")
    assert review_key("not a doi") == review_key("NOT A DOI") == "NOT A DOI"


def test_the_dev_reviews_the_product_keeps_out_of_self_training_are_the_scripts_dev_set(ad):
    from medsimp.reviews import DEV_REVIEWS

    assert {review_key(doi) for doi in COCHRANE_DEV} == DEV_REVIEWS


def test_hand_labels_are_refused_on_documents_split_otherwise(ad):
    """The dev labels are sentence indices: a splitter that cuts a review differently would shift
    them silently, so the rebuilt documents' sentence counts must be the labelled ones."""
    doi, lab = next(iter(COCHRANE_DEV.items()))
    n_c, n_s = lab["n"]
    right = DocPair(doi, ["c"] * n_c, ["s"] * n_s, frozenset(), review_key(doi))
    others = [
        DocPair(d, ["c"] * v["n"][0], ["s"] * v["n"][1], frozenset(), review_key(d))
        for d, v in COCHRANE_DEV.items()
        if d != doi
    ]
    dev = ad.cochrane_dev([right, *others])
    assert dev[0].pairs == frozenset(map(tuple, lab["pairs"]))
    wrong = DocPair(doi, ["c"] * (n_c + 1), ["s"] * n_s, frozenset(), review_key(doi))
    with pytest.raises(ValueError, match="sentence counts"):
        ad.cochrane_dev([wrong, *others])


@dataclass
class _Result:
    pairs: dict


class _Model:
    def align(self, complex_, simple):
        return _Result({(0, 0): 0.9, (1, 0): 0.4, (2, 1): 0.5})


def test_pseudo_documents_keep_every_sentence_and_only_pairs_at_the_floor(ad):
    docs = [
        DocPair("d", ["a", "b", "c"], ["x", "y", "z"], frozenset(), "g"),
        DocPair("e", [], ["x"], frozenset(), "h"),
    ]
    out, info = ad.pseudo_documents(_Model(), docs, 0.5)
    assert [d.doc_id for d in out] == ["d"]  # an empty side is no document
    assert out[0].complex == ["a", "b", "c"] and out[0].simple == ["x", "y", "z"]
    assert out[0].pairs == frozenset({(0, 0), (2, 1)})
    assert info == {"min_p": 0.5, "documents": 1, "pairs": 2}


def test_without_the_data_folder_it_says_so_and_exits_0(ad, tmp_path, capsys):
    assert ad.main(["--data", str(tmp_path)]) == 0
    assert "not found" in capsys.readouterr().err


class _Vectors:
    """An encoder of hand-set unit vectors: each text's vector is looked up (default: e0)."""

    name = "vectors"

    def __init__(self, table):
        self.table = {k: v / np.linalg.norm(v) for k, v in table.items()}

    def encode(self, texts, lang=None):
        return np.stack([self.table.get(t, np.array([1.0, 0.0, 0.0])) for t in texts])


class _Fixed:
    """A model whose merged output is fixed, with an encoder."""

    def __init__(self, pairs, encoder):
        from medsimp.params_schema import Crf

        self.pairs, self.encoder, self.config = pairs, encoder, Crf()

    def align(self, complex_, simple, lang="en"):
        from alignment.crf import CRFResult

        return CRFResult(dict(self.pairs), [], [])


def test_pairmerge_joins_a_neighbour_only_when_the_joined_block_is_closer(ad):
    """N-1: 'B' joins (A, X) because 'A B' is closer to X than 'A'; 'C' is no neighbour of A.
    1-N: 'Y' joins because 'X Y' is closer to A than 'X'. With a margin above the gains, none."""
    enc = _Vectors(
        {
            "A": np.array([1.0, 1.0, 0.0]),
            "X": np.array([1.0, 0.0, 0.0]),
            "A B": np.array([1.0, 0.2, 0.0]),  # closer to X than A is
            "Y": np.array([0.0, 0.0, 1.0]),
            "X Y": np.array([1.0, 0.9, 0.0]),  # closer to A than X is
            "Z": np.array([0.0, 0.0, 1.0]),
        }
    )
    model = ad.PairMerge(_Fixed({(0, 0): 0.8}, enc))
    res = model.align(["A", "B", "C"], ["X", "Y"])
    assert res.pairs == {(0, 0): 0.8, (1, 0): 0.8, (0, 1): 0.8}
    assert model.added == 2
    assert res.blocks == [((0, 1), (0, 1)), ((2,), ())]
    strict = ad.PairMerge(_Fixed({(0, 0): 0.8}, enc), margin=0.5)
    assert strict.align(["A", "B", "C"], ["X", "Y"]).pairs == {(0, 0): 0.8}
    # a neighbour already aligned elsewhere is never taken
    taken = ad.PairMerge(_Fixed({(0, 0): 0.8, (1, 1): 0.7}, enc))
    assert set(taken.align(["A", "B", "C"], ["X", "Y"]).pairs) == {(0, 0), (1, 1)}


class _Rows:
    """A forward scorer whose rows are independent (zero transitions) with set emissions."""

    def __init__(self, emit):
        import torch

        self.emit = torch.tensor(emit, dtype=torch.float32)

    def emissions(self, feats, nfeats):
        return self.emit

    def transition_table(self):
        import torch

        z = torch.zeros(())
        return {"aa": torch.zeros(9), "same": z, "nn": z, "an": z, "na": z}


def test_selffill_adds_the_best_pair_of_a_pls_sentence_the_labels_leave_unaligned(ad):
    """PLS 0 is labelled; PLS 1's best forward posterior is 0.6 (>= 0.25: its pair is added);
    PLS 2's is 1/12 (left unaligned); a pair under the labels' floor is not kept."""
    model = _Fixed({(1, 0): 0.9, (1, 2): 0.3}, _Vectors({}))
    model.forward = _Rows([[0.0, 0.0, 5.0], [0.0, float(np.log(3)), 0.0], [float(np.log(10)), 0.0, 0.0]])
    docs = [
        DocPair("d", ["a", "b"], ["x", "y", "z"], frozenset(), "g"),
        DocPair("e", [], ["x"], frozenset(), "h"),
    ]
    out, info = ad.fill_documents(model, docs, 0.5, 0.25)
    assert [d.doc_id for d in out] == ["d"]
    assert out[0].pairs == frozenset({(1, 0), (0, 1)})
    assert info == {"min_p": 0.5, "fill_p": 0.25, "documents": 1, "pairs": 2, "pairs_added": 1}
    assert ad.fill_documents(model, docs, 0.5, 0.7)[0][0].pairs == frozenset({(1, 0)})
