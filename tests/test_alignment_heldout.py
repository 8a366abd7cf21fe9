"""alignment.heldout (the held-out Cochrane scoring shared by scripts/eval_alignment.py and
scripts/check_real_data.py) on hand-written documents; the scripts' wiring of it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from alignment.gold import DocPair
from alignment.heldout import has_test_files, jaccard, threshold_pairs, tune

ROOT = Path(__file__).parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _doc(k: int) -> DocPair:
    complex_ = [
        f"We included {10 + k} trials with {200 + k} women.",
        "Pain fell with the drug compared with placebo.",
        "The quality of the evidence was low.",
    ]
    simple = [f"We found {10 + k} studies.", "The drug helped with pain.", "Side effects were rare."]
    return DocPair(f"10.1/CD{k}", complex_, simple, frozenset({(0, 0), (1, 1)}), f"10.1/CD{k}")


def test_threshold_baseline_is_tuned_on_the_given_documents():
    docs = [_doc(k) for k in range(4)]
    sims = [jaccard(d) for d in docs]
    t = tune(docs, sims)
    assert 0.02 <= t <= 0.94
    assert threshold_pairs(np.array([[0.5, 0.1], [0.2, 0.7]]), 0.5) == {(0, 0), (1, 1)}


def test_test_files_are_found_in_either_naming(tmp_path):
    assert not has_test_files(tmp_path)
    (tmp_path / "test.source.txt").write_text("a\n", encoding="utf-8")
    (tmp_path / "test.target").write_text("b\n", encoding="utf-8")
    assert has_test_files(tmp_path)


def test_default_model_is_params_align_model_when_it_exists(tmp_path):
    check = _script("check_real_data")
    params = tmp_path / "params.yaml"
    params.write_text("align:\n  model: models/crf\n", encoding="utf-8")
    label, folder = check.default_model(params, None)
    assert folder is None and "trained on params align.gold" in label
    (tmp_path / "models" / "crf").mkdir(parents=True)
    (tmp_path / "models" / "crf" / "config.json").write_text("{}", encoding="utf-8")
    label, folder = check.default_model(params, None)
    assert folder == tmp_path / "models" / "crf" and label.startswith("crf_default (")


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_check_real_data_says_why_it_skips_the_alignment_check(tmp_path):
    """No Devaraj test split beside the MultiCochrane pairs: one line saying what it needs."""
    (tmp_path / "multicochrane").mkdir()
    rows = [{"doi": "10.1/CD1", "input": "A trial.", "gold": "A study."}]
    (tmp_path / "multicochrane" / "en-test-with-doi.json").write_text(json.dumps(rows), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_real_data.py"), "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "cochrane alignment: skipped" in out.stdout and "--cochrane-test" in out.stdout


@pytest.mark.slow  # trains a CRF over the real MiniLM encoder
def test_eval_cochrane_scores_a_trained_model_beside_the_baselines(tmp_path):
    """A model folder is scored as it is (no training on the base gold, no CV model); the
    baselines' thresholds come from the other half of the reviews."""
    from alignment.crf import CRFAligner
    from alignment.encoders import make_encoder
    from alignment.heldout import eval_cochrane
    from medsimp.params_schema import Crf

    crf = Crf(epochs=5)
    cache = str(tmp_path / "cache")
    model = CRFAligner.train([_doc(k) for k in range(10, 13)], make_encoder(crf.encoder, cache), crf)
    model.save(tmp_path / "model")
    docs = [_doc(k) for k in range(4)]
    info = eval_cochrane(docs, crf, cache, None, {"crf_default": tmp_path / "model"}, cv=False)
    assert set(info) == {"thresholds", "crf_default", "jaccard", "tfidf"}
    assert set(info["thresholds"]) == {"jaccard_fold0", "jaccard_fold1", "tfidf_fold0", "tfidf_fold1"}
    assert all(0 <= info[name]["f1"] <= 1 for name in ("crf_default", "jaccard", "tfidf"))
    assert info["crf_default"]["f1"] > 0.5
