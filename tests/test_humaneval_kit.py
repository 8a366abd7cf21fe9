"""Human-eval kit round trip: forms -> programmatic filling -> ingest -> hand-computed tables."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from medsimp.cli import main
from medsimp.humaneval.agreement import alpha_masi, randolph_kappa
from medsimp.humaneval.design import latin_square
from medsimp.humaneval.forms import form_spec
from medsimp.humaneval.ingest import IngestError, ingest
from medsimp.humaneval.schema import CSV_COLUMNS

SYSTEMS = ["s1", "s2"]
UNITS = [("i1", "s1"), ("i1", "s2"), ("i2", "s1"), ("i2", "s2")]
LAY = {  # rater -> item -> (original q1,q2,q3), (simplified q1..q4), q5 set, q6 set
    "L01": {"i1": ((2, 1, 5), (4, 3, 3, 2), "s1", "s2"), "i2": ((1, 2, 4), (3, 3, 2, 1), "s1|s2", "s2")},
    "L02": {"i1": ((3, 2, 3), (4, 2, 4, -1), "s1", "s2"), "i2": ((2, 1, 1), (4, 3, 2, 2), "s2", "s1")},
}
SEVERITY = {"E1": {"i1": 3, "i2": 2}, "E2": {"i1": 4, "i2": 2}}
CORRECTNESS = dict(zip(UNITS, (5, 4, 3, 2)))
MC = {
    "M1": {"factuality": (2, 1, 2, 0), "fluency": (2, 2, 2, 2), "simplicity": (1, 2, 0, -1)},
    "M2": {"factuality": (2, 1, 1, 0), "fluency": (2, 2, 2, 2), "simplicity": (1, 1, 0, -1)},
}


def _answer(form: str, rater: str, q: dict) -> str:
    item, stage, system, qid = q["item_id"], q["stage"], q["system"], q["qid"]
    if q["kind"] == "text":
        return 'says "fluid", ok' if qid == "justification" else ""
    if form == "expert":
        if qid == "severity":
            return str(SEVERITY[rater][item])
        return str(CORRECTNESS[(item, system)]) if qid == "correctness" else "4"
    if form == "multicochrane":
        return str(MC[rater][qid][UNITS.index((item, system))])
    orig, simp, q5, q6 = LAY[rater][item]
    if stage == "original":
        return str(orig[int(qid[1]) - 1])
    if stage == "simplified":
        return str(simp[int(qid[1]) - 1])
    return q5 if qid == "q5" else q6


def _fill(manifest: dict, form: str, rater: str, path: Path) -> None:
    spec = form_spec(manifest, form, rater if form == "layperson" else "")
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for block in spec["blocks"]:
            for q in block["questions"]:
                w.writerow(
                    [form, rater, q["item_id"], q["stage"], q["system"], q["qid"], _answer(form, rater, q)]
                )


@pytest.fixture()
def kit(tmp_path):
    variants = tmp_path / "variants.csv"
    with open(variants, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["sentence_id", "variant", "source", "output", "fkgl"])
        for n, (item, system) in enumerate(UNITS, start=1):
            w.writerow([item, system, f"Source of {item} <b>&", f"{system} says {item}", n])
    params = tmp_path / "params.yaml"
    params.write_text(f"humaneval: {{input: '{variants}', systems: [s1, s2], n_laypeople: 2}}\n")
    forms = tmp_path / "forms"
    assert main(["--params", str(params), "humaneval", "forms", "--output", str(forms)]) == 0
    manifest = json.loads((forms / "manifest.json").read_text())
    resp = tmp_path / "responses"
    resp.mkdir()
    for form, raters in (("expert", SEVERITY), ("layperson", LAY), ("multicochrane", MC)):
        for r in raters:
            _fill(manifest, form, r, resp / f"{form}-{r}.csv")
    return tmp_path, params, forms, resp, manifest


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_latin_square_balances_systems():
    sq = latin_square(["a", "b", "c", "d", "e", "f"], ["x", "y", "z"], 3)
    assert sq["L01"] == {"a": "x", "b": "y", "c": "z", "d": "x", "e": "y", "f": "z"}
    for item in "abcdef":
        assert sorted(sq[r][item] for r in sq) == ["x", "y", "z"]


def test_forms_are_deterministic_and_complete(kit, tmp_path):
    _, params, forms, _, manifest = kit
    assert manifest["layperson_assignment"] == {
        "L01": {"i1": "s1", "i2": "s2"},
        "L02": {"i1": "s2", "i2": "s1"},
    }
    again = tmp_path / "forms2"
    assert main(["--params", str(params), "humaneval", "forms", "--output", str(again)]) == 0
    for f in sorted(p.name for p in forms.iterdir()):
        assert (forms / f).read_bytes() == (again / f).read_bytes(), f
    html = (forms / "layperson-L01.html").read_text()
    assert "<b>" not in html and "\\u003cb\\u003e" in html  # source text cannot inject markup
    from openpyxl import load_workbook

    wb = load_workbook(forms / "forms.xlsx")
    assert wb.sheetnames == ["items", "expert", "multicochrane", "layperson-L01", "layperson-L02"]
    assert wb["expert"].max_row == 1 + 2 * (2 + 2 * 6)  # severity + original simplicity


def test_round_trip_tables(kit):
    tmp_path, params, forms, resp, _ = kit
    out, plots = tmp_path / "results", tmp_path / "plots"
    assert (
        main(
            [
                "--params",
                str(params),
                "humaneval",
                "analyze",
                "--forms",
                str(forms),
                "--responses",
                str(resp),
                "--output",
                str(out),
                "--plots",
                str(plots),
                "--metrics",
                str(tmp_path / "m.json"),
            ]
        )
        == 0
    )
    t1 = {(r["form"], r["question"], r["system"]): float(r["mean"]) for r in _rows(out / "table1.csv")}
    assert t1[("layperson", "q1", "original")] == 2.0
    assert t1[("layperson", "q1", "s1")] == 4.0 and t1[("layperson", "q1", "s2")] == 3.5
    # Q4 on Yang et al.'s four levels -1..2: s1 = L01 i1 (2), L02 i2 (2); s2 = L01 i2 (1), L02 i1 (-1)
    assert t1[("layperson", "q4", "s1")] == 2.0 and t1[("layperson", "q4", "s2")] == 0.0
    assert t1[("expert", "correctness", "s1")] == 4.0 and t1[("expert", "correctness", "s2")] == 3.0
    assert t1[("multicochrane", "simplicity", "s2")] == 0.25
    t2 = {
        (r["system"], r["confidence"]): (float(r["mse"]), float(r["accuracy"]), int(r["n"]))
        for r in _rows(out / "table2.csv")
    }
    # expert reference = low median: i1 -> 3 (of 3, 4), i2 -> 2
    assert t2[("original", "1")] == (2.5, 0.0, 2)
    assert t2[("original", "2")] == (2.0, 0.5, 2)
    assert t2[("original", "all")] == (2.25, 0.25, 4)
    assert t2[("s2", "2")] == (1.0, 0.0, 1) and t2[("s2", "all")] == (0.5, 0.5, 2)
    assert t2[("s1", "3")] == (0.0, 1.0, 2)
    t3 = {r["system"]: {k: int(v) for k, v in r.items() if k != "system"} for r in _rows(out / "table3.csv")}
    assert t3["s1"] == {
        "most_votes": 3,
        "least_votes": 1,
        "most_majority_items": 1,
        "least_majority_items": 1,
    }
    assert t3["s2"] == {
        "most_votes": 2,
        "least_votes": 3,
        "most_majority_items": 1,
        "least_majority_items": 2,
    }
    agree = json.loads((out / "agreement.json").read_text())
    # hand computation: D_o = (4/3)/4 = 1/3, D_e = 8/12 = 2/3 -> alpha = 0.5
    assert agree["alpha_masi_q5"] == 0.5
    assert agree["randolph_kappa_factuality"] == 0.625  # (0.75 - 1/3) / (2/3)
    assert agree["randolph_kappa_simplicity"] == 0.6875  # (0.75 - 1/5) / (4/5)
    assert agree["randolph_kappa_fluency"] == 1.0
    corr = {(r["form"], r["question"], r["metric"]): r for r in _rows(out / "correlations.csv")}
    assert float(corr[("expert", "correctness", "fkgl")]["spearman"]) == -1.0
    assert float(corr[("expert", "correctness", "fkgl")]["kendall_tau"]) == -1.0  # every pair discordant
    assert corr[("expert", "simplicity", "fkgl")]["spearman"] == ""  # constant scores
    stats = json.loads((out / "stats.json").read_text())
    # expert 2 x 26 rows, layperson 2 x 22, MultiCochrane 2 x 12; the layperson's empty
    # (optional) Q5/Q6 justifications are filtered: 2 raters x 2 items x 2
    assert stats["read"] == 2 * 28 + 2 * 22 + 2 * 12 and stats["filtered"] == 8
    assert (out / "votes.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "scores-expert.png").exists() and (plots / "votes.csv").read_text().startswith(
        "system,preference,votes"
    )


def test_validation_reports_every_problem(kit):
    _, _, _, resp, manifest = kit
    path = resp / "layperson-L01.csv"
    rows = path.read_text().splitlines()
    rows[1] = rows[1].rsplit(",", 1)[0] + ",9"  # q1 out of range
    rows[2] = rows[2].rsplit(",", 1)[0] + ","  # q2 missing
    rows.append(rows[3])  # duplicate answer
    path.write_text("\n".join(rows) + "\n")
    (resp / "copy.csv").write_text((resp / "expert-E1.csv").read_text())  # same rater twice
    bad_set = resp / "layperson-L02.csv"
    bad_set.write_text(bad_set.read_text().replace(",q5,s2", ",q5,s9"))
    with pytest.raises(IngestError) as err:
        ingest(manifest, sorted(resp.glob("*.csv")))
    msg = str(err.value)
    assert "layperson-L01.csv:2: layperson rater 'L01', item 'i1', q1: answer 9 out of range 1..4" in msg
    assert "layperson-L01.csv:3: layperson rater 'L01', item 'i1', q2: missing answer" in msg
    assert "layperson-L01.csv:24: duplicate answer for item 'i1' original - q3" in msg
    assert "duplicate rater 'E1' on the expert form" in msg
    assert "unknown systems ['s9']" in msg
    assert len(err.value.problems) == 5


def test_agreement_edge_cases():
    assert alpha_masi([("a", "u", frozenset({"x"}))]) is None
    assert alpha_masi([(r, u, frozenset({"x"})) for r in "ab" for u in "uv"]) == 1.0
    assert randolph_kappa({"u": [1, 1, 2], "v": [2]}, 2) == pytest.approx((1 / 3 - 0.5) / 0.5)
    assert randolph_kappa({"u": [1]}, 3) is None


def test_analyze_without_responses_skips(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("humaneval: {}\n")
    assert (
        main(
            [
                "--params",
                str(p),
                "humaneval",
                "analyze",
                "--forms",
                str(tmp_path),
                "--responses",
                str(tmp_path / "none"),
                "--output",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "o" / "stats.json").read_text())["skipped"] is True


def test_multicochrane_responses_alone_write_no_empty_vote_tables(kit, capsys):
    tmp_path, params, forms, resp, _ = kit
    for f in resp.glob("*.csv"):
        if not f.name.startswith("multicochrane-"):
            f.unlink()
    out = tmp_path / "mc-only"
    argv = ["--params", str(params), "humaneval", "analyze", "--forms", str(forms), "--responses", str(resp)]
    assert main([*argv, "--output", str(out)]) == 0
    assert not (out / "votes.png").exists() and not (out / "table3.csv").exists()
    assert (out / "table1.csv").exists() and (out / "scores-multicochrane.png").exists()
    assert "no layperson responses" in capsys.readouterr().err


def test_vote_legend_sits_beside_the_bars():
    from matplotlib.transforms import Bbox

    from medsimp.humaneval.plots import vote_figure

    fig = vote_figure([{"system": s, "most_votes": 9, "least_votes": 9} for s in ("a", "b", "c")])
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    bars = [p.get_window_extent() for p in ax.patches]
    assert bars and not any(Bbox.intersection(legend, b) for b in bars)
