"""A corpus card records how the corpus was made: input content hashes, upstream params, the
aligner and its gold, the filter threshold, the code's git revision (issue 29)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from medsimp.cli import main
from medsimp.corpora.writer import code_hash
from medsimp.provenance import content_hash


def _medlane(folder: Path, n_eval: int) -> Path:
    folder.mkdir()
    (folder / "train.txt").write_text("pt has htn .\npatient has high blood pressure .\nyou have it .\n\n")
    (folder / "test.txt").write_text(
        "".join(
            f"bp was {n} .\n" + "".join(f"{k} bp[blood pressure] was {n} .\n" for k in (1, 2)) + "\n"
            for n in range(n_eval)
        )
    )
    return folder


def _build(tmp_path: Path, data: Path, tag: str) -> dict:
    params = tmp_path / f"params-{tag}.yaml"
    params.write_text(yaml.safe_dump({"build": {"medlane": {"input": str(data), "candidates": None}}}))
    out = tmp_path / f"built-{tag}"
    assert main(["--params", str(params), "build", "medlane", "--output", str(out)]) == 0
    text = (out / "README.md").read_text(encoding="utf-8")
    return {"meta": yaml.safe_load(text[4:].split("\n---\n", 1)[0])["medsimp"], "card": text}


def test_different_inputs_give_different_provenance(tmp_path):
    a = _build(tmp_path, _medlane(tmp_path / "a", 4), "a")
    b = _build(tmp_path, _medlane(tmp_path / "b", 6), "b")
    assert a["meta"]["input.input"].endswith(f"sha256:{content_hash(tmp_path / 'a')}")
    assert a["meta"]["input.input"] != b["meta"]["input.input"]
    assert a["meta"]["params_hash.notes"] == b["meta"]["params_hash.notes"]  # upstream stage's params
    # the code of `medsimp build` and of the builder it ran, not another builder's
    assert a["meta"]["code_sha256"] == code_hash("medsimp.corpora.medlane") != ""
    assert code_hash("medsimp.corpora.plaba") != code_hash("medsimp.corpora.medlane")
    again = _build(tmp_path, tmp_path / "a", "a2")  # same inputs: the same card, byte for byte
    assert again["card"].replace("built-a2", "built-a") == a["card"]


def test_a_multicochrane_card_names_the_aligner_actually_used_its_gold_and_threshold(tmp_path):
    """Issue 35 item 4: after `align corpus --model OTHER` the card named params' model
    (`out/models/crf_aligner sha256:missing`). It names what align's stats.json recorded."""
    import sys

    from medsimp.provenance import used_aligner

    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "builders"))
    import upstream

    build = {"multicochrane": {**upstream.write_cochrane(tmp_path)}}
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"doc": 1}) + "\n")
    other = tmp_path / "other_model"  # not params' align.model
    other.mkdir()
    (other / "model.pt").write_bytes(b"weights")
    self_trained = {"enabled": True, "input": "out/cochrane", "min_posterior": 0.5}
    self_trained |= {"pseudo_documents": 7, "pseudo_pairs": 31}
    (other / "stats.json").write_text(
        json.dumps({"gold": [f"gold.jsonl sha256:{content_hash(gold)}"], "self_training": self_trained})
    )
    align_out = tmp_path / "align"
    align_out.mkdir()
    (align_out / "stats.json").write_text(
        json.dumps({"aligner": {**used_aligner(str(other), str(tmp_path)), "merge": "union"}})
    )
    cards = []
    for threshold in (0.5, 0.6):
        params = tmp_path / f"params-{threshold}.yaml"
        rule = {"rule": "overlap_or_aligner"} if threshold == 0.6 else {}
        params.write_text(
            yaml.safe_dump(
                {
                    "build": build,
                    "align": {"gold": "nowhere.jsonl", "output": "align"},
                    "filter": {"threshold": threshold, **rule},
                }
            )
        )
        out = tmp_path / f"mc-{threshold}"
        assert main(["--params", str(params), "build", "multicochrane", "--output", str(out)]) == 0
        cards.append(yaml.safe_load((out / "README.md").read_text()[4:].split("\n---\n", 1)[0])["medsimp"])
    assert cards[0]["aligner.model"] == f"other_model sha256:{content_hash(other)}"
    assert cards[0]["aligner.gold"] == f"gold.jsonl sha256:{content_hash(gold)}"
    assert cards[0]["aligner.heldout"].startswith("not measured for this model")  # an unmeasured model
    from medsimp.provenance import describe_self_training

    nothing = {"enabled": True, "input": "out/cochrane", "pool_read": 9, "pseudo_documents": 0}
    assert describe_self_training(nothing).startswith("on, but none of the 9 reviews of out/cochrane")
    assert describe_self_training({"enabled": False}) == "off: trained on the gold alone"
    assert cards[0]["aligner.self_training"] == (
        "7 unlabelled reviews of out/cochrane labelled by the gold-trained CRF (31 pairs of posterior "
        ">= 0.5), then trained on the gold + them; the 22 MC-CLEAN English test reviews are never used"
    )
    # issue 53: align recorded no scoring key for this model, so no precision is claimed for its
    # kept rows, and the card says why in one line
    assert cards[0]["aligner.expected_kept_precision"].startswith(
        "not estimated: align recorded no scoring key for its model"
    )
    assert cards[0]["filter.threshold"] == "gt 0.5" and "filter.rule" not in cards[0]  # the paper's rule
    assert cards[1]["filter.rule"] == "overlap_or_aligner (CRF probability >= 0.9)"
    assert cards[0]["params_hash.filter"] != cards[1]["params_hash.filter"]
    assert cards[0]["params_hash"] == cards[1]["params_hash"]  # build.multicochrane alone is the same
    # issue 54: once the filter stage recorded what it ran with, the card says that, whatever
    # today's params say (here 0.5 gt)
    recorded = Path(build["multicochrane"]["pairs"]).parent / "stats.json"
    recorded.write_text(json.dumps({"threshold": 0.7, "comparison": "ge", "read": 1}))
    out = tmp_path / "mc-recorded"
    assert (
        main(["--params", str(tmp_path / "params-0.5.yaml"), "build", "multicochrane", "--output", str(out)])
        == 0
    )
    card = yaml.safe_load((out / "README.md").read_text()[4:].split("\n---\n", 1)[0])["medsimp"]
    assert (
        card["filter.threshold"] == "ge 0.7"
        and card["filter.recorded"]["from"] == "stats.json of the filter stage"
    )


def test_the_card_cites_a_held_out_score_only_for_the_exact_model_measured():
    """Issue 37 item 3: the card gives the aligner's measured F1 on held-out real gold, looked up by
    what decides the model's scores (its scoring key: the DAG's model scores alike on any x86
    machine; issue 53: not the folder's hash, which its stats.json moves), and says how to
    measure any other model instead of borrowing a number."""
    from medsimp import resources
    from medsimp.corpora.card import heldout_score

    known = json.loads(resources.path("aligner_heldout.json").read_text(encoding="utf-8"))
    key = next(k for k in known if not k.startswith("_"))
    line = heldout_score(key)
    assert line.startswith(f"pair F1 {known[key]['f1']:.3f} (P ") and "22 reviews" in line
    assert heldout_score("0123456789abcdef").startswith("not measured")
    assert heldout_score("").startswith("not measured")
    assert heldout_score("_about").startswith("not measured")


def test_code_hash_covers_the_build_and_nothing_else(tmp_path, monkeypatch):
    """The card's code hash is of the modules `medsimp build` imports: a module outside that
    closure (the annotator page) is not in it, and a change to one inside it moves the hash."""
    from medsimp import code_graph
    from medsimp.corpora import writer

    modules, _ = code_graph.closure(["medsimp.cli", writer.BUILD_COMMAND])
    assert "medsimp.corpora.writer" in modules and "medsimp.annotate.page" not in modules
    before = code_hash()
    fake = tmp_path / "writer.py"
    fake.write_bytes(modules["medsimp.corpora.writer"].read_bytes() + b"# changed\n")
    real = code_graph.closure
    monkeypatch.setattr(
        code_graph,
        "closure",
        lambda roots: ({**real(roots)[0], "medsimp.corpora.writer": fake}, real(roots)[1]),
    )
    assert code_hash() != before


def test_code_hash_ignores_what_a_wheel_does_not_ship():
    """An editor backup or a scratch file beside the code does not change the card."""
    import os

    before = code_hash()
    stray = Path(__file__).resolve().parents[1] / "pipelines" / f"scratch-{os.getpid()}.py~"
    stray.write_text("not code\n", encoding="utf-8")
    try:
        assert code_hash() == before
    finally:
        stray.unlink()
