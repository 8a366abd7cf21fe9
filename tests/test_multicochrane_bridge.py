"""MC-CLEAN for every language (issue 27 §2): the English gold composed with the PLS bridge."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from medsimp.cli import main

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "builders"))
import upstream  # noqa: E402

DOI = "10.1/CD1"


def _gold(n: int, simple: list[str], complex_: list[str]) -> dict:
    return {
        "pair_id": f"{DOI}:en:gold{n}",
        "doi": DOI,
        "language": "en",
        "complex_ids": [f"mc_human:{DOI}:complex:{i}" for i in range(len(complex_))],
        "simple_ids": [f"mc_human:{DOI}:simple:{n}{k}" for k in range(len(simple))],
        "pivot_ids": [],
        "complex_text": " ".join(complex_),
        "simple_text": " ".join(simple),
        "pivot_text": "",
        "method": "gold",
        "vecalign_score": None,
        "_simple_sentences": simple,
    }


def _bridge(n: int, pivots: list[str], xs: list[str], cost: float) -> dict:
    return {
        "pair_id": f"{DOI}:es:{n}",
        "pivot_ids": pivots,
        "simple_ids": xs,
        "vecalign_score": cost,
    }


def test_gold_pairs_composed_with_the_bridge_hand_case():
    """Hand-made review: English PLS e0..e3, Spanish PLS s0..s3.

    gold: A0 -> e0;  A1 -> e1 + e2 (one pair, two PLS sentences);  A2 -> e3
    bridge (Vecalign): e0 -> s0 (cost 0.2); e1 -> s1 (0.4); e2 -> s2 + s3 (0.6);
    e9 (an elaboration, in no gold pair) -> s9. e3 has no Spanish counterpart.
    Expected: A0 -> s0; A1 -> s1 s2 s3 (cost 0.5); A2 dropped; s9 never used. The gold
    cuts e1 at a different place than the sentence table ("... trials." vs "... trials"),
    which the containment rule still matches.
    """
    from medsimp.corpora.multicochrane import bridge_gold

    texts = {
        "e0": "We found three studies.",
        "e1": "They compared two treatments in small trials",
        "e2": "Both worked about as well.",
        "e9": "Asthma is a disease of the airways.",
        "s0": "Encontramos tres estudios.",
        "s1": "Compararon dos tratamientos.",
        "s2": "Ambos funcionaron.",
        "s3": "Igual de bien.",
        "s9": "El asma es una enfermedad.",
    }
    gold = [
        _gold(0, ["We found three studies."], ["A0"]),
        _gold(1, ["They compared two treatments in small trials.", "Both worked about as well."], ["A1"]),
        _gold(2, ["Side effects were rare."], ["A2"]),
    ]
    bridge = [
        _bridge(0, ["e0"], ["s0"], 0.2),
        _bridge(1, ["e1"], ["s1"], 0.4),
        _bridge(2, ["e2"], ["s2", "s3"], 0.6),
        _bridge(3, ["e9"], ["s9"], 0.1),
    ]
    rows, dropped = bridge_gold(gold, bridge, texts, "es")
    assert dropped == 1
    assert [(r["complex_text"], r["simple_ids"]) for r in rows] == [
        ("A0", ["s0"]),
        ("A1", ["s1", "s2", "s3"]),
    ]
    second = rows[1]
    assert second["simple_text"] == "Compararon dos tratamientos. Ambos funcionaron. Igual de bien."
    assert second["pivot_text"] == gold[1]["simple_text"]
    assert second["pivot_ids"] == gold[1]["simple_ids"]
    assert second["pair_id"] == f"{DOI}:es:gold1" and second["language"] == "es"
    assert second["method"] == "gold+vecalign" and abs(second["vecalign_score"] - 0.5) < 1e-12
    assert all("_simple_sentences" not in r for r in rows)


@pytest.mark.slow
def test_mc_clean_validation_and_test_exist_for_every_language(tmp_path):
    """The old builder left es/fr validation and test empty whenever `mc_human` was given."""
    paths = upstream.write_cochrane(tmp_path)
    sentences = json.loads((Path(upstream.HERE) / "cochrane.json").read_text(encoding="utf-8"))["sentences"]
    dois = [f"10.1002/14651858.CD00000{i}" for i in range(1, 6)]

    def side(doi: str, side_: str) -> list[str]:
        rows = [s for s in sentences if s["doc_id"] == doi and s["side"] == side_ and s["language"] == "en"]
        return [s["text"] for s in sorted(rows, key=lambda s: s["sentence_index"])]

    mc_human = [
        {
            "doi": d,
            "abstract": side(d, "complex"),
            # a gold-only English PLS sentence (no Spanish/French counterpart) is dropped
            "pls": [*side(d, "simple"), "An extra plain sentence only in the gold file."],
            "alignments": [[0, 0], [1, 1], [2, 2]],
            "split": {0: "test", 1: "test", 2: "validation"}.get(n, "train"),
        }
        for n, d in enumerate(dois)
    ]
    mc = tmp_path / "mc_human.json"
    mc.write_text(json.dumps(mc_human), encoding="utf-8")
    params = tmp_path / "params.yaml"
    cfg = {**paths, "mc_human": str(mc), "mc_clean_validation": 1, "mc_clean_test": 2}
    params.write_text(yaml.safe_dump({"build": {"multicochrane": cfg}}), encoding="utf-8")
    out = tmp_path / "mc"
    assert main(["--params", str(params), "build", "multicochrane", "--output", str(out)]) == 0
    from datasets import load_dataset

    def load(config: str):
        return load_dataset(str(out), config, cache_dir=str(tmp_path / "cache"))

    en, es, fr = load("en"), load("es"), load("fr")
    # CD000001, CD000002 test; CD000003 validation (es only: the fixture has no French PLS)
    assert set(es["test"]["doi"]) == set(en["test"]["doi"]) and len(set(es["test"]["doi"])) == 2
    assert set(es["validation"]["doi"]) == set(en["validation"]["doi"])
    assert set(fr["test"]["doi"]) == set(en["test"]["doi"]) and "validation" not in fr
    for ds in (es, fr):
        for split in ("validation", "test"):
            if split not in ds:
                continue
            assert set(ds[split]["method"]) == {"gold+vecalign"}
    # each English gold block of a held-out review has one counterpart, except the
    # gold-only PLS sentence's block (filtered through the English pivot)
    assert len(en["test"]) == 2 * 3 and len(es["test"]) == 2 * 2 and len(fr["test"]) == 2 * 2
    row = next(
        r for r in es["test"] if r["doi"].endswith("CD000001") and r["complex_text"].startswith("Treatment")
    )
    assert row["simple_ids"] == ["cochrane:10.1002/14651858.CD000001:simple:es:1"]
    assert row["simple_text"].startswith("El tratamiento redujo")
    assert row["pivot_text"].startswith("The treatment lowered")
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    assert stats["gold_bridged_pairs"] == len(es["test"]) + len(es["validation"]) + len(fr["test"])
    assert stats["gold_bridge_dropped"] == 2 + 1 + 2  # es test, es validation, fr test
    assert stats["read"] == stats["kept"] + stats["filtered"] + stats["rejected"]
    # training keeps the automatic non-English rows of the MC-CLEAN training reviews
    assert "crf+vecalign" in set(es["train"]["method"])
