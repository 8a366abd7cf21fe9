"""The aligner's probabilities calibrated on held-out gold (issue 37 item 3, issue 53 section 2):
keyed by what decides the scores, fitted by `medsimp align calibrate` into a file beside the
model, and the expected precision of the kept rows, with its interval, on the card and in the
data report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from alignment.calibration import (
    Calibration,
    calibration_path,
    describe,
    estimate_line,
    filter_rule,
    find,
    heldout,
    heldout_check,
    model_digest,
    score_gold,
)
from medsimp import resources
from medsimp.cli import main
from medsimp.provenance import content_hash

RULE = filter_rule(0.5, "gt", None)
ROOT = Path(__file__).resolve().parents[1]


def _cal(key: str = "k" * 16, merge: str = "union") -> Calibration:
    # overconfident scores: kept rows at 0.9 are right half the time, rows at 0.99 always
    docs = [
        [(0.2, 0.0, True), (0.9, 1.0, True), (0.5, 1.0, False)],  # a dropped row is not fitted
        [(0.3, 0.0, True), (0.9, 0.0, True)],
        [(0.99, 1.0, True), (0.99, 1.0, True)],
        [(0.95, 1.0, True), (0.25, 0.0, True)],
    ]
    return Calibration.fit(key, "hand gold", merge, RULE, docs, {"f1": 0.5})


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_isotonic_fit_on_kept_rows_estimates_their_mean_calibrated_correctness_with_an_interval():
    cal = _cal()
    assert len(cal.rows) == 8 and cal.documents == 4  # the row the filter dropped is left out
    assert cal.probability([0.25, 0.9, 0.99]).tolist() == [0.0, 0.5, 1.0]
    assert cal.probability([0.0, 1.0]).tolist() == [0.0, 1.0]  # clipped beyond the fitted range
    est = cal.estimate([0.9, 0.99])
    assert est is not None and est["rows"] == 2 and cal.estimate([]) is None
    assert est["precision"] == pytest.approx(0.75) and est["mean_score"] == pytest.approx(0.945)
    assert 0.0 <= est["low"] <= est["precision"] <= est["high"] <= 1.0 and est["low"] < est["high"]
    assert cal.estimate([0.99, 0.9]) == est  # seeded bootstrap: the same interval every run
    text = describe(est)
    assert text.startswith("expected precision of the kept rows 0.750 (95% interval ")
    assert "bootstrap over the gold's documents" in text and "on held-out gold (4-fold by document" in text
    assert Calibration.from_json(json.loads(json.dumps(cal.as_json()))) == cal


def test_the_knobs_are_params_and_the_calibration_keeps_them():
    from medsimp.config import load_params
    from medsimp.params_schema import AlignCalibration

    knobs = load_params(str(ROOT / "params.yaml"), []).align.calibration
    assert knobs == AlignCalibration() and (knobs.folds, knobs.bootstrap, knobs.seed) == (5, 1000, 53)
    docs = [[(0.2, 0.0, True), (0.9, 1.0, True)], [(0.3, 0.0, True), (0.95, 1.0, True)]] * 3
    other = Calibration.fit(
        "k" * 16, "g", "union", RULE, docs, {}, AlignCalibration(folds=2, bootstrap=200, seed=1)
    )
    assert (other.bootstrap, other.seed, other.heldout["folds"]) == (200, 1, 2)
    assert Calibration.from_json(other.as_json()) == other


def test_the_heldout_check_fits_on_some_documents_and_estimates_the_others():
    # two kinds of document: a fit on the others predicts each held-out one's rows
    rows = [(d, s, float(s > 0.5)) for d in range(6) for s in (0.2 + 0.01 * d, 0.9 - 0.01 * d)]
    check = heldout_check(rows)
    assert check == {"folds": 5, "rows": 12, "estimated": 0.5, "measured": 0.5, "error": 0.0}
    wrong = [(d, s, 0.0 if d == 0 else c) for d, s, c in rows]  # one document's rows all wrong
    assert heldout_check(wrong)["error"] > 0.0  # the estimate, fitted on the others, runs high


GOOD = _cal().as_json()


@pytest.mark.parametrize(
    "change, why",
    [
        ({"rows": [[0, 0.5, 1.0]]}, "at least 2"),
        ({"rows": [[0, 0.5, 1.0], [1, 1.5, 1.0]]}, "score in \\[0, 1\\]"),
        ({"rows": [[0, 0.5, 1.0], [1, float("nan"), 1.0]]}, "score in \\[0, 1\\]"),
        ({"rows": [[0, 0.5, 1.0], ["a", 0.5, 1.0]]}, "\\[document, score"),
        ({"merge": "both"}, "its merge"),
        ({"key": ""}, "its key"),
        ({"filter": {"threshold": 0.5}}, "the filter its rows passed"),
        ({"documents": True}, "positive count"),
        ({"bootstrap": 0}, "its bootstrap is a positive count"),
        ({"seed": "x"}, "its seed is an integer"),
    ],
)
def test_a_malformed_calibration_is_refused_with_the_reason(change, why):
    assert Calibration.from_json(GOOD).merge == "union"
    with pytest.raises(ValueError, match=why):
        Calibration.from_json({**GOOD, **change})


def test_find_says_in_one_line_why_a_model_has_no_estimate(tmp_path):
    from medsimp.errors import MedsimpError

    model = tmp_path / "m"
    assert find(model, "a" * 16, "out/models/m")[1].startswith(
        "not estimated: no calibration at out/models/m.calibration.json"
    )  # named as align recorded the model, never the resolved path
    assert find(model, "a" * 16)[1].startswith("not estimated: no calibration at m.calibration.json")
    assert find(model, "")[1].startswith("not estimated: align recorded no scoring key")
    calibration_path(model).write_text(json.dumps(_cal("a" * 16).as_json()))
    assert calibration_path(str(model) + "/") == tmp_path / "m.calibration.json"
    cal, why = find(model, "a" * 16)
    assert cal == _cal("a" * 16) and why == ""
    none, why = find(model, "b" * 16)  # other weights: never another model's calibration
    assert none is None and "is for another model's scores (key aaaa" in why
    assert estimate_line(cal, "", [0.9], "intersection", RULE)[1].startswith(
        "not estimated: the calibration is for align.crf.merge union"
    )
    assert (
        "this corpus's filter is overlap r gt 0.6"
        in estimate_line(cal, "", [0.9], "union", filter_rule(0.6, "gt", None))[1]
    )
    assert estimate_line(cal, "", [], "union", RULE) == (
        None,
        "not estimated: no kept row carries a CRF score",
    )
    calibration_path(model).write_text("{}")
    with pytest.raises(MedsimpError, match="m.calibration.json: not a calibration"):
        find(model, "a" * 16)


def test_a_gold_rows_correctness_is_the_share_of_its_pairs_in_the_gold_and_kept_is_the_filters():
    from alignment.crf import CRFResult
    from alignment.gold import DocPair

    class Aligned:  # what CRFAligner.align gives for this document
        def align(self, complex_, simple):
            pairs = {(0, 0): 0.9, (1, 1): 0.6, (2, 1): 0.8}
            return CRFResult(pairs, [((0,), (0,)), ((1, 2), (1,)), ((3,), ())], [0.9, 0.7, 0.0])

    doc = DocPair(
        "d",
        ["The trial found less pain.", "Cats purr.", "Dogs bark loudly.", "Gone."],
        ["The trial found less pain.", "Birds sing."],
        frozenset({(0, 0), (2, 1)}),
    )
    rows, prf = score_gold(Aligned(), [doc], RULE)
    # a 1-1 row, right and kept (r 1.0); an N-1 row, half right, dropped (r 0); no deletion row
    assert rows == [[(0.9, 1.0, True), (pytest.approx(0.7), 0.5, False)]]
    assert prf == {"precision": pytest.approx(0.6667, abs=1e-4), "recall": 1.0, "f1": 0.8}


def test_dropping_copies_is_part_of_the_rule_the_kept_rows_passed():
    # issue 53: the calibration keyed the filter rule but not `filter.drop_copies`: with copies
    # dropped the kept rows differ from those it was fitted on, and the card still gave a number
    from alignment.crf import CRFResult
    from alignment.gold import DocPair

    class Aligned:
        def align(self, complex_, simple):
            return CRFResult({(0, 0): 0.9}, [((0,), (0,))], [0.9])

    doc = DocPair("d", ["The trial found less pain."], ["The trial found less pain."], frozenset({(0, 0)}))
    assert score_gold(Aligned(), [doc], RULE)[0] == [[(0.9, 1.0, True)]]  # the paper keeps a copy
    dropping = filter_rule(0.5, "gt", None, "identical", 0.9)
    assert score_gold(Aligned(), [doc], dropping)[0] == [[(0.9, 1.0, False)]]
    assert filter_rule(0.5, "gt", None, "none", 0.8) == RULE  # the paper's rule whatever copy_overlap
    est, line = estimate_line(_cal(), "", [0.9, 0.99], "union", dropping)
    assert est is None and line == (
        "not estimated: the calibration's kept rows passed overlap r gt 0.5, this corpus's filter is "
        "overlap r gt 0.5, identical copies dropped (copy_overlap 0.9)"
    )
    assert estimate_line(_cal(), "", [0.9, 0.99], "union", RULE)[0] is not None


def test_the_packaged_held_out_scores_are_found_by_the_models_scoring_key_only():
    """Issue 53: keyed by what decides the scores (the weights, merge, encoder, features), not
    by the folder's content hash, which its stats.json (paths, counts) moved."""
    known = json.loads(resources.path("aligner_heldout.json").read_text(encoding="utf-8"))
    key = next(k for k in known if not k.startswith("_"))
    facts = heldout(key)
    assert facts is not None and facts["f1"] == known[key]["f1"]
    assert "calibration" not in facts  # calibrations live beside their models, never in the package
    assert heldout("0123456789abcdef") is None
    assert heldout("_about") is None and model_digest("m sha256:missing") == ""


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 5.0, -0.5])
def test_a_packaged_held_out_row_out_of_range_never_reaches_a_card(tmp_path, monkeypatch, bad):
    """Issue 54: validation checked types, not ranges: an F1 of NaN, inf, 5.0 or -0.5 reached
    the card. It is one error naming the entry and the value."""
    from medsimp.errors import MedsimpError

    row = {"precision": 0.5, "recall": 0.5, "f1": bad}
    planted = tmp_path / "aligner_heldout.json"
    planted.write_text(json.dumps({"0123456789abcdef": row}))
    monkeypatch.setattr(resources, "path", lambda name: planted)
    with pytest.raises(MedsimpError, match="its f1 .* is not a fraction from 0 to 1"):
        heldout("0123456789abcdef")


def test_the_data_report_estimates_the_kept_english_crf_rows_only():
    from medsimp.report.data import config_stats

    cal = _cal()
    rows = [
        {"complex_text": "A b c.", "simple_text": "A b.", "method": "crf", "crf_score": 0.9, "keep": True},
        {"complex_text": "D e f.", "simple_text": "D e.", "method": "crf", "crf_score": 0.99, "keep": True},
        {"complex_text": "K l.", "simple_text": "M n.", "method": "crf", "crf_score": 0.2, "keep": False},
        {"complex_text": "G h.", "simple_text": "G h.", "method": "gold", "crf_score": None, "keep": None},
        {
            "complex_text": "I j.",
            "simple_text": "Ij.",
            "method": "crf+vecalign",
            "crf_score": 0.2,
            "keep": True,
        },
    ]

    def estimator(scores):
        return estimate_line(cal, "", scores, "union", RULE)

    st = config_stats(rows, None, 0.5, ["en"], 3, estimator=estimator)
    assert st["precision"]["rows"] == 2 and st["precision"]["precision"] == pytest.approx(0.75)
    assert "hand gold" in st["precision"]["text"]
    assert config_stats(rows, None, 0.5, ["en"], 3)["precision"] is None  # no aligner: no line
    why = config_stats(rows, None, 0.5, ["en"], 3, estimator=lambda s: (None, "not estimated: x"))
    assert why["precision"] == {"text": "not estimated: x"}  # none: the reason, not a silent drop


# ---- end to end: align train, align calibrate, the card and the data report ---------------------

GOLD = ROOT / "data" / "sample" / "align_gold.jsonl"
PARAMS = {"align": {"self_training": {"enabled": False}, "crf": {"encoder": {"kind": "e5"}, "epochs": 5}}}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two models trained the same way from gold files at two paths (stats.json differs, the
    weights do not), a copy of the first with one weight changed, and a calibration gold."""
    root = tmp_path_factory.mktemp("calib")
    lines = GOLD.read_text(encoding="utf-8").splitlines(keepends=True)
    (root / "train.jsonl").write_text("".join(lines[:5]))
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "train.jsonl").write_text("".join(lines[:5]))
    (root / "cal.jsonl").write_text("".join(lines[5:]))
    (root / "params.yaml").write_text(yaml.safe_dump(PARAMS))
    p = ["--params", str(root / "params.yaml")]
    assert main([*p, "align", "train", "--gold", str(root / "train.jsonl"), "--output", str(root / "m")]) == 0
    elsewhere = ["--gold", str(root / "elsewhere" / "train.jsonl"), "--output", str(root / "again")]
    assert main([*p, "align", "train", *elsewhere]) == 0
    # a copy of the first with one weight moved by 1e-4: other scores, the same bookkeeping
    import torch

    shutil.copytree(root / "m", root / "other")
    state = torch.load(root / "m" / "model.pt", weights_only=True)
    name = next(iter(state["forward"]))
    state["forward"][name] = state["forward"][name] + 1e-4
    torch.save(state, root / "other" / "model.pt")
    return root


def _stats(folder: Path) -> dict:
    return json.loads((folder / "stats.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_align_calibrate_writes_beside_the_model_and_the_same_weights_find_it(trained, capsys):
    root, p = trained, ["--params", str(trained / "params.yaml")]
    package = content_hash(resources.path("aligner_heldout.json").parent)
    before = content_hash(root / "m")
    assert (
        main([*p, "align", "calibrate", "--gold", str(root / "cal.jsonl"), "--model", str(root / "m")]) == 0
    )
    out = capsys.readouterr()
    assert "pair_f1_on_gold" in out.err and "documents the model never trained on" in out.err
    target = root / "m.calibration.json"
    cal = Calibration.from_json(json.loads(target.read_text(encoding="utf-8")))
    assert content_hash(root / "m") == before  # the model folder is untouched
    assert content_hash(resources.path("aligner_heldout.json").parent) == package  # so is the package
    assert "of cal.jsonl sha256:" in cal.gold and cal.heldout["folds"] == 4 and cal.heldout["rows"] > 0
    # trained the same way from a gold at another path: stats.json differs, the weights do not
    assert _stats(root / "m") != _stats(root / "again")
    assert _stats(root / "m")["scoring_key"] == _stats(root / "again")["scoring_key"] == cal.key
    shutil.copy(target, root / "again.calibration.json")
    assert find(root / "again", _stats(root / "again")["scoring_key"])[0] == cal
    # other weights (the folder otherwise a copy): the calibration beside them is not theirs
    from alignment.calibration import scoring_key
    from alignment.crf import CRFAligner
    from alignment.encoders import make_encoder
    from medsimp.params_schema import E5Spec

    other = CRFAligner.load(root / "other", make_encoder(E5Spec(), None), "union")
    assert scoring_key(root / "m", CRFAligner.load(root / "m", other.encoder, "union")) == cal.key
    assert scoring_key(root / "m", CRFAligner.load(root / "m", other.encoder, "forward")) != cal.key
    # a deletion prior (issue 53 section 6) decides the scores too; none keeps the key it had
    from medsimp.params_schema import updated

    same = CRFAligner.load(root / "m", other.encoder, "union")
    same.config = updated(same.config, {"deletion_prior": 2.0})
    assert scoring_key(root / "m", same) != cal.key
    assert scoring_key(root / "other", other) != cal.key
    shutil.copy(target, root / "other.calibration.json")
    found, why = find(root / "other", scoring_key(root / "other", other))
    assert found is None and "is for another model's scores" in why


def test_align_train_prints_no_f1_on_its_training_documents(trained):
    stats = _stats(trained / "m")
    assert not any("f1" in k for k in stats) and len(stats["scoring_key"]) == 16


@pytest.mark.parametrize(
    "gold, why",
    [
        ("missing.jsonl", "no such file or folder"),
        ("folder", "a folder without Devaraj et al.'s val.source, val.target, val.doi"),
        ("bad.jsonl", "not gold alignments (JSONDecodeError"),
        ("test.jsonl", "holds 1 of the 22 MC-CLEAN English test reviews (CD009170)"),
        ("train.jsonl", "is the gold"),
    ],
)
def test_align_calibrate_refuses_bad_gold_in_one_line(trained, capsys, gold, why):
    root = trained
    (root / "folder").mkdir(exist_ok=True)
    (root / "bad.jsonl").write_text("{not json\n")
    doc = json.loads(GOLD.read_text(encoding="utf-8").splitlines()[6])
    doc["doc_id"] = "10.1002/14651858.CD009170.pub2"
    (root / "test.jsonl").write_text(json.dumps(doc) + "\n")
    args = ["--params", str(root / "params.yaml"), "align", "calibrate", "--gold", str(root / gold)]
    assert main([*args, "--model", str(root / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # the stage's banner, then one line
    assert len(err) == 2 and err[1].startswith("medsimp align") and why in err[1]


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_the_card_and_the_data_report_give_the_kept_rows_precision_or_say_why_not(tmp_path):
    """The card (`medsimp build`) and the data report (`medsimp report`) find the calibration
    beside the model align used, by its scoring key, and estimate the kept English rows (8 of the
    fixture's 10 English CRF rows); with another model's calibration there, each says why not."""
    import sys

    from medsimp.provenance import used_aligner

    sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "builders"))
    import upstream

    model = tmp_path / "model"
    model.mkdir()
    (model / "model.pt").write_bytes(b"weights")
    (tmp_path / "align").mkdir()
    used = {**used_aligner(str(model), str(tmp_path)), "scoring_key": "a" * 16, "merge": "union"}
    (tmp_path / "align" / "stats.json").write_text(json.dumps({"aligner": used}))
    params = tmp_path / "params.yaml"
    build = {"multicochrane": upstream.write_cochrane(tmp_path)}
    params.write_text(yaml.safe_dump({"build": build, "align": {"gold": "g.jsonl", "output": "align"}}))
    calibration_path(model).write_text(json.dumps(_cal("a" * 16).as_json()))
    out = tmp_path / "mc"
    assert main(["--params", str(params), "build", "multicochrane", "--output", str(out)]) == 0
    card = yaml.safe_load((out / "README.md").read_text()[4:].split("\n---\n", 1)[0])["medsimp"]
    line = card["aligner.expected_kept_precision"]
    assert (
        line.startswith("expected precision of the kept rows 0.")
        and "over 8 aligner-scored kept rows" in line
    )
    assert "95% interval" in line and "hand gold" in line and "on held-out gold (4-fold by document" in line
    md = {}
    for key in ("a" * 16, "b" * 16):  # the model's calibration; then another model's at that place
        calibration_path(model).write_text(json.dumps(_cal(key).as_json()))
        assert main(["--params", str(params), "report", str(out), "--output", str(tmp_path / key)]) == 0
        md[key[0]] = (tmp_path / key / "report.md").read_text(encoding="utf-8")
    assert "Aligner (kept English CRF rows): expected precision of the kept rows 0." in md["a"]
    assert "Aligner (kept English CRF rows): not estimated: " in md["b"]
    assert str(tmp_path) not in md["b"]  # the file as align recorded the model: the same from any folder
    assert "is for another model's scores" in md["b"]
    # issue 54: what upstream ran with decides, not today's params: align corpus merged by
    # `forward` (its stats.json), today's params say union, the calibration is for union
    calibration_path(model).write_text(json.dumps(_cal("a" * 16).as_json()))
    (tmp_path / "align" / "stats.json").write_text(json.dumps({"aligner": {**used, "merge": "forward"}}))
    assert main(["--params", str(params), "build", "multicochrane", "--output", str(out)]) == 0
    card = yaml.safe_load((out / "README.md").read_text()[4:].split("\n---\n", 1)[0])["medsimp"]
    assert card["aligner.merge"] == "forward"
    assert card["aligner.expected_kept_precision"] == (
        "not estimated: the calibration is for align.crf.merge union, not forward"
    )
    assert main(["--params", str(params), "report", str(out), "--output", str(tmp_path / "fwd")]) == 0
    assert "not estimated: the calibration is for align.crf.merge union, not forward" in (
        (tmp_path / "fwd" / "report.md").read_text(encoding="utf-8")
    )
