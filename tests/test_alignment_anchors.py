"""Length/number anchors, centring, the deletion-penalty reading and the per-language-pair encoder choice."""

from __future__ import annotations

import numpy as np
import pytest

from alignment import vecalign
from alignment.anchors import length_features, number_features, with_anchors
from alignment.encoders import PairEncoders
from medsimp.params_schema import E5Spec, SchemaError, UseSpec, Vecalign, updated


def test_number_features_match_figures_across_scripts():
    f = number_features(
        ["ارتفاع ۸۵۰۱ متر", "Der Lhotse misst 8501 m", "La cote est 8470", "Sans chiffre", "No figure"]
    )
    assert f[0] @ f[1] == pytest.approx(1.0)  # Persian digits read as ASCII
    assert f[1] @ f[2] == pytest.approx(0.0)
    assert not f[3].any() and not f[4].any()  # no digits: a zero block, neutral between such texts


def test_length_kernel_falls_with_the_length_ratio():
    f = length_features([100, 100, 150, 300], unit=100, sigma=0.35)
    assert f[0] @ f[1] == pytest.approx(1.0)
    assert 1.0 > f[0] @ f[2] > f[0] @ f[3] > 0
    # relative to each side's unit: French 20% longer throughout is no mismatch
    g = length_features([120], unit=120, sigma=0.35)
    assert f[0] @ g[0] == pytest.approx(1.0)


def test_anchored_cosine_is_the_weighted_mean_of_the_parts():
    rng = np.random.default_rng(0)
    e = rng.normal(size=(2, 16))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    texts = ["A cost of 12 units was reported here.", "Il coûte 12 unités."]
    v = with_anchors(e, texts, 30.0, length_weight=0.6, number_weight=0.3, length_sigma=0.35)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    lf = length_features([len(t) for t in texts], 30.0, 0.35)
    expected = (e[0] @ e[1] + 0.6 * lf[0] @ lf[1] + 0.3 * 1.0) / 1.9
    assert v[0] @ v[1] == pytest.approx(expected, abs=1e-5)
    assert with_anchors(e, texts, 30.0, length_weight=0, number_weight=0, length_sigma=0.35) == pytest.approx(
        e
    )


def test_centring_removes_a_side_wide_offset_and_length_units_share_a_count():
    rng = np.random.default_rng(1)
    sem = rng.normal(size=(2, 5, 8))
    shifted = sem + rng.normal(size=8) * 5  # a language/topic component shared by the side
    p = Vecalign(center=True, length_weight=0, number_weight=0)
    sents = ["a"] * 5
    assert vecalign.side_vectors(sents, sem, p, 1.0) == pytest.approx(
        vecalign.side_vectors(sents, shifted, p, 1.0), abs=1e-5
    )
    plain = updated(p, {"center": False})
    assert vecalign.side_vectors(sents, sem, plain, 1.0) == pytest.approx(sem.astype(np.float32))
    assert vecalign.side_vectors(["a", "b"], sem[:, :2], p, 1.0) == pytest.approx(
        sem[:, :2].astype(np.float32)
    )
    # characters per sentence of the pair: each side's total over the mean count (2 + 4) / 2
    assert vecalign.length_units(["x" * 40, "y" * 60], ["z" * 30] * 4) == pytest.approx((100 / 3, 120 / 3))


def test_deletion_percentile_reads_the_knob_over_unmatched_pairs():
    p = Vecalign(del_percentile_frac=0.1, del_percentile_of="unmatched")
    assert vecalign.deletion_percentile(p, 3, 3) == pytest.approx(0.4)
    assert vecalign.deletion_percentile(p, 468, 554) == pytest.approx(1 / 554 + 0.1 * 553 / 554)
    assert vecalign.deletion_percentile(Vecalign(del_percentile_frac=0.1), 3, 3) == 0.1
    with pytest.raises(SchemaError, match="del_percentile_of"):  # the schema has the choices
        updated(p, {"del_percentile_of": "all"})


def test_pair_encoders_fall_back_for_languages_use_does_not_cover(tmp_path):
    encoders = PairEncoders([UseSpec(), E5Spec()], str(tmp_path))
    use = encoders.for_pair("de", "fr")
    assert use.name == "use-multilingual-v3" and encoders.for_pair("en-GB", "es_ES") is use
    assert encoders.for_pair("en", "fa").name.startswith("e5-small")
    with pytest.raises(ValueError, match="en-fa"):
        PairEncoders(UseSpec(), None).for_pair("en", "fa")
    vecs = use.encode(["Das Wetter ist heute schön.", "Der Vertrag wurde gekündigt."], "de")
    fr = use.encode(["Il fait beau aujourd'hui.", "Le contrat a été résilié."], "fr")
    sims = vecs @ fr.T
    assert sims[0, 0] > sims[0, 1] and sims[1, 1] > sims[1, 0]
    assert encoders.misses == 2 and encoders.hits == 0  # one cache entry per call
