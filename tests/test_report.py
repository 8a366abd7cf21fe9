"""`medsimp report` on builders built from the tiny upstream fixtures: numbers equal stats.json
and the parquet files, the page renders in Chromium, MIMIC-derived text stays out."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from test_humaneval_browser import _wait, browser  # noqa: F401 - the Chromium fixture

from medsimp.cli import main
from medsimp.report.data import alignment_types, unaligned

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "builders"))
import upstream

REPO = Path(__file__).resolve().parents[1]
SPLIT = {"seed": 13, "validation": 0.2, "test": 0.2}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("up")
    medlane_dir = root / "medlane"
    shutil.copytree(REPO / "tests" / "fixtures" / "builders" / "medlane", medlane_dir)
    cochrane = upstream.write_cochrane(root)
    build = {
        "multicochrane": {**cochrane, "split": SPLIT},
        "medlane": {
            "input": str(medlane_dir),
            "validation_size": 2,
            "candidates": upstream.write_notes(root),
        },
        "plaba": {**upstream.write_plaba(root), "split": SPLIT},
    }
    params = root / "params.yaml"
    params.write_text(yaml.safe_dump({"build": build}), encoding="utf-8")
    out = tmp_path_factory.mktemp("builders")
    for name in build:
        assert main(["--params", str(params), "build", name, "--output", str(out / name)]) == 0
    return {"root": out, "sentences": cochrane["sentences"]}


def _report(built, name: str, tmp_path: Path, *extra: str) -> tuple[dict, str, Path]:
    out = tmp_path / "report" / name
    args = ["report", str(built["root"] / name), "--output", str(out), "--plots", str(tmp_path / "plots")]
    if name == "multicochrane":
        args += ["--sentences", built["sentences"]]
    assert main([*args, *extra]) == 0
    return (json.loads((out / "report.json").read_text()), (out / "index.html").read_text(), out)


@pytest.mark.slow
def test_report_numbers_equal_stats_and_parquet(built, tmp_path):
    folder = built["root"] / "multicochrane"
    data, html, out = _report(built, "multicochrane", tmp_path)
    stats = json.loads((folder / "stats.json").read_text())
    assert data["splits"] == stats["splits"]
    assert data["counts"]["read"] == stats["read"] and data["counts"]["kept"] == stats["kept"]
    rows = pq.read_table(next((folder / "es").glob("train-*.parquet"))).to_pylist()
    es = data["configs"]["es"]
    assert es["rows"] == sum(stats["splits"]["es"].values())
    assert es["overlap_r"]["threshold"] == 0.5 and es["overlap_r"]["n"] == es["rows"]
    every = [r for f in (folder / "es").glob("*.parquet") for r in pq.read_table(f).to_pylist()]
    assert es["filter"]["pairs"] == len(every)
    assert es["filter"]["dropped"] == sum(not r["keep"] for r in every)
    assert (
        f"Overlap filter decisions (`keep`, every split): has {es['filter']['dropped']} of {len(every)}"
        in ((tmp_path / "report" / "multicochrane" / "report.md").read_text())
    )
    assert sum(es["alignment_types"].values()) == es["rows"]
    assert rows and es["examples"] and "simple" in es["examples"][0]
    assert (tmp_path / "plots" / "es.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<h1>Data report: multicochrane</h1>" in html and 'id="banner"' not in html
    md = (out / "report.md").read_text()
    assert f"| read | {stats['read']} |" in md
    again, _, _ = _report(built, "multicochrane", tmp_path / "again")
    assert again == data  # deterministic
    assert (tmp_path / "again" / "report" / "multicochrane" / "index.html").read_text() == html


@pytest.mark.slow
def test_mimic_derived_builder_shows_no_text_without_the_flag(built, tmp_path):
    rows = [
        r
        for f in sorted((built["root"] / "medlane").rglob("*.parquet"))
        for r in pq.read_table(f).to_pylist()
    ]
    texts = [r.get("source") or r["text"] for r in rows if (r.get("source") or r.get("text"))]
    data, html, out = _report(built, "medlane", tmp_path)
    assert data["restricted"] and not data["show_text"]
    assert all(not st["examples"] for st in data["configs"].values())
    everything = html + (out / "report.md").read_text() + (out / "report.json").read_text()
    assert texts and not any(t in everything for t in texts)
    assert 'id="banner"' in html
    data, html, _ = _report(built, "medlane", tmp_path / "shown", "--show-restricted")
    assert data["show_text"] and "do not share" in html
    assert any(e["complex"] in texts for st in data["configs"].values() for e in st["examples"])


def test_alignment_types_and_ratios_on_crafted_rows():
    rows = [
        {"pair_id": "p0", "doi": "d", "language": "es", "complex_ids": ["c0"], "simple_ids": ["s0"]},
        {"pair_id": "p1", "doi": "d", "language": "es", "complex_ids": ["c1", "c2"], "simple_ids": ["s1"]},
        {"pair_id": "p2", "doi": "d", "language": "es", "complex_ids": ["c3"], "simple_ids": ["s2", "s3"]},
    ]
    assert alignment_types(rows) == {"1-1": 1, "N-1": 1, "1-N": 1}
    sentences = [
        {"sentence_id": f"c{i}", "doc_id": "d", "side": "complex", "language": "en"} for i in range(5)
    ]  # c4 is deleted
    sentences += [
        {"sentence_id": f"s{i}", "doc_id": "d", "side": "simple", "language": "es"} for i in range(6)
    ]  # s4, s5 are insertions (elaborations)
    sentences += [{"sentence_id": "f0", "doc_id": "d", "side": "simple", "language": "fr"}]
    assert unaligned(rows, sentences) == {
        "deletions": 1,
        "insertions": 2,
        "deletion_ratio": 0.2,
        "elaboration_ratio": round(2 / 6, 4),
    }
    assert unaligned(rows, None)["deletion_ratio"] is None


@pytest.mark.browser
def test_report_page_renders_in_chromium(built, tmp_path, browser):  # noqa: F811
    data, _, out = _report(built, "plaba", tmp_path)
    stats = json.loads((built["root"] / "plaba" / "stats.json").read_text())
    _, page = browser
    page.call("Page.navigate", url=(out / "index.html").as_uri())
    _wait(lambda: page.js("document.readyState === 'complete'"))
    _wait(lambda: page.js("[...document.images].every((i) => i.complete && i.naturalWidth > 0)"))
    shown = page.js(
        "Object.fromEntries([...document.querySelectorAll('#counts td')]"
        ".map((td) => [td.dataset.key, td.textContent]))"
    )
    assert shown == {k: str(v) for k, v in stats.items() if not isinstance(v, dict)}
    cells = page.js(
        "[...document.querySelectorAll('#splits td')].map((td) => "
        "[td.dataset.config, td.dataset.split, td.textContent])"
    )
    assert {(c, s): int(n) for c, s, n in cells if n} == {
        (c, s): n for c, v in stats["splits"].items() for s, n in v.items()
    }
    assert page.js("document.images.length") == len(data["configs"])


# --- issue 29: what a researcher checks before training -------------------------------------
LONG = " ".join(f"word{i}" for i in range(120)) + "."  # one 120-word "sentence"
GLUED = "Eleven trials were included. Results showed no difference between groups."
RATIO = "Participants in the intervention group were followed up for twelve months in total."
SAME = "Exercise improved walking distance."
NORMAL = [
    (f"Trial {i} enrolled adults with moderate asthma for this review.", f"Study {i} had adults with asthma.")
    for i in range(20)
]
CRAFTED = [
    *NORMAL,
    (LONG, "A long sentence."),
    ("3.", "Three."),
    (SAME, SAME),
    (RATIO, "People."),
    (GLUED, "Eleven."),
]
PROCEDURE = {
    "start": 0,
    "end": 5,
    "term": "trial",
    "cui": "C0008976",
    "semtypes": ["T061"],
    "similarity": 1.0,
}


def crafted_builder(root: Path, lineage: str, mimic_derived: bool) -> Path:
    """A builder folder of one config holding each outlier once, an identical pair and T061."""
    import pyarrow as pa

    from medsimp.lineage import with_lineage

    folder = root / "crafted"
    (folder / "en").mkdir(parents=True)
    rows = [
        {
            "pair_id": f"p{i}",
            "doi": f"d{i % 5}",
            "language": "en",
            "complex_ids": [f"c{i}"],
            "simple_ids": [f"s{i}"],
            "complex_text": c,
            "simple_text": s,
            "overlap_r": 0.7,
            "complex_concepts": [PROCEDURE] if i < 3 else [],
            "simple_concepts": [],
        }
        for i, (c, s) in enumerate(CRAFTED)
    ]
    table = pa.Table.from_pylist(rows)
    pq.write_table(
        table.replace_schema_metadata(with_lineage(table.schema, [lineage]).metadata),
        folder / "en" / "train.parquet",
    )
    card = {
        "medsimp": {"builder": "crafted", "mimic_derived": mimic_derived},
        "configs": [{"config_name": "en", "data_files": [{"split": "train", "path": "en/train.parquet"}]}],
    }
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(card)}---\n# card\n", encoding="utf-8")
    (folder / "stats.json").write_text(json.dumps({"read": len(rows), "kept": len(rows)}), encoding="utf-8")
    return folder


def _crafted_report(folder: Path, out: Path, *extra: str) -> tuple[dict, str, str]:
    assert (
        main(["report", str(folder), "--output", str(out), "--plots", str(out.parent / "plots"), *extra]) == 0
    )
    return (
        json.loads((out / "report.json").read_text()),
        (out / "index.html").read_text(),
        (out / "report.md").read_text(),
    )


def test_report_lists_outliers_identical_pairs_and_semantic_type_names(tmp_path):
    folder = crafted_builder(tmp_path / "in", "cochrane", mimic_derived=False)
    data, html, md = _crafted_report(folder, tmp_path / "out")
    en = data["configs"]["en"]
    found = {(o["kind"], o["side"]): o for o in en["outliers"]}
    long = found["long_sentence", "complex"]
    assert (long["n"], long["of"], long["max"]) == (1, len(CRAFTED), 120.0)
    assert long["examples"][0]["text"].startswith("word0 word1") and long["examples"][0]["words"] == 120.0
    assert found["no_letters", "complex"]["n"] == 1 and found["no_letters", "complex"]["examples"] == [
        {"text": "3."}
    ]
    assert found["internal_boundary", "complex"]["examples"] == [{"text": GLUED}]
    ratio = found["length_ratio", "pair"]  # LONG (120 / 3 words), RATIO (14 / 1), GLUED (10 / 1)
    assert ratio["n"] == 3 and ratio["max"] == 40.0 and ratio["examples"][0]["simple"] == "A long sentence."
    assert all(o["n"] == 0 for (kind, side), o in found.items() if side == "simple")
    same = en["identical"]
    assert (same["n"], same["of"], same["share"]) == (1, len(CRAFTED), round(1 / len(CRAFTED), 4))
    assert same["examples"] == [{"complex": SAME, "simple": SAME}]
    # semantic types by name, in the JSON, the page and the markdown
    assert en["semtypes"]["complex"] == [
        {"tui": "T061", "name": "Therapeutic or Preventive Procedure", "n": 3}
    ]
    assert "<th>Therapeutic or Preventive Procedure</th>" in html
    assert "Therapeutic or Preventive Procedure T061 (3)" in md
    # the 120-word sentence does not squash the length histogram: clipped, and said so
    length = en["histograms"]["length"]
    assert length["clipped"] == 1 and length["range"][1] < 120 and length["n"] == 2 * len(CRAFTED)
    assert f"{length['clipped']} of {length['n']} values outside it are not drawn" in md
    # the first screen: the shape and the top issues come before the counts of stats.json
    assert html.index('id="shape"') < html.index('id="issues"') < html.index('id="counts"')
    assert md.index("## At a glance") < md.index("Top issues") < md.index("## All counts")
    assert [(i["kind"], i["n"]) for i in data["issues"]][:2] == [("length_ratio", 3), ("identical", 1)]
    assert "en: 1 sentences over 80 words (complex; 4.0% of 25)" in md
    assert (tmp_path / "plots" / "en.png").read_bytes()[:4] == b"\x89PNG"


def test_restricted_report_counts_outliers_but_never_quotes_them(tmp_path):
    texts = {t for pair in CRAFTED for t in pair} - {"3."}  # "3." is too short to search for
    for lineage, flag in (("mimic-iii", False), ("cochrane", True)):  # either says restricted
        folder = crafted_builder(tmp_path / lineage, lineage, mimic_derived=flag)
        out = tmp_path / lineage / "out"
        data, html, md = _crafted_report(folder, out)
        en = data["configs"]["en"]
        assert data["restricted"] and not data["show_text"]
        assert {(o["kind"], o["side"]): o["n"] for o in en["outliers"] if o["n"]} == {
            ("long_sentence", "complex"): 1,
            ("no_letters", "complex"): 1,
            ("internal_boundary", "complex"): 1,
            ("length_ratio", "pair"): 3,
        }
        assert en["identical"]["n"] == 1 and "hidden (MIMIC-derived)" in html
        assert all(not o["examples"] for o in en["outliers"]) and not en["identical"]["examples"]
        everything = html + md + (out / "report.json").read_text()
        assert not [t for t in texts if t in everything] and "word0 word1" not in everything
    shown, html, _ = _crafted_report(folder, tmp_path / "shown", "--show-restricted")
    assert shown["configs"]["en"]["identical"]["examples"] and SAME in html and "do not share" in html


def test_a_sentence_the_authors_wrote_inside_brackets_is_not_an_outlier():
    """Real Cochrane (Devaraj val): the report's old regex flagged this one sentence of 2,488,
    whose inner stops are inside the authors' brackets; scripts/check_real_data.py did not.
    Both now count a boundary as `medsimp.text.boundaries`; the share of one in thousands
    reads 0.04%, not 0.0%."""
    from medsimp.report.data import outliers, percent

    bracketed = (
        "This effect is uncertain (antioxidants: RR 0.58, 95% CI 0.32 to 1.03; 1 trial; low-quality "
        "evidence. Medroxyprogesterone: RR 0.71, 95% CI 0.48 to 1.05; 2 trials; low-quality evidence)."
    )
    unclosed = "This effect is uncertain (see the tables. Iron made no difference."
    units = {"complex": [(t, 1, len(t.split())) for t in (bracketed, unclosed, GLUED, SAME)]}
    found = {o["kind"]: o for o in outliers(units, [], 80, 4.0, 5, True)}
    assert found["internal_boundary"]["n"] == 2
    assert {e["text"] for e in found["internal_boundary"]["examples"]} == {unclosed, GLUED}
    assert [percent(s) for s in (None, 0.0, 0.0004, 0.0402)] == ["-", "0.0%", "0.04%", "4.0%"]


def test_semantic_type_table_names_all_127_types():
    from medsimp.report.data import clip_range, semantic_type_names

    names = semantic_type_names()
    assert len(names) == 127 and names["T047"] == "Disease or Syndrome" and names["T204"] == "Eukaryote"
    assert clip_range([1.0, 2.0, 3.0], 99, low_tail=False) == {"range": [1.0, 3.0], "clipped": 0, "n": 3}
    assert clip_range([*range(100), 10_000], 99, low_tail=False)["clipped"] == 1


def test_near_copies_are_counted_and_flag_a_config_of_mostly_copies():
    from medsimp.report.data import issues, near_copies

    pairs = [
        ("The patient had a myocardial infarction.", "The patient had a myocardial infarction!"),
        (
            "Aspirin reduced the risk of stroke in adults.",
            "Aspirin reduced the risk of stroke in adults today.",
        ),
        ("Statins lower cholesterol.", "These drugs make the fat in your blood go down."),
    ]
    found = near_copies(pairs, 0.9, 3, show_text=True)
    assert (found["n"], found["of"], found["mostly"]) == (1, 3, False)  # 9 of 10 words is not 90% of both
    found = near_copies(pairs, 0.8, 3, show_text=True)
    assert (found["n"], found["mostly"]) == (2, True)
    assert {e["simple"] for e in found["examples"]} == {p[1] for p in pairs[:2]}
    assert near_copies(pairs, 0.8, 3, show_text=False)["examples"] == []
    flagged = issues({"en": {"outliers": [], "identical": None, "copies": found}})
    assert [(f["kind"], f["n"], f["of"]) for f in flagged] == [("copies", 2, 3)]


def test_the_lowest_scored_pairs_come_first():
    from medsimp.report.data import lowest_scored

    rows = [
        {"complex_text": f"complex {i}", "simple_text": f"simple {i}", "crf_score": score}
        for i, score in enumerate([0.9, 0.2, None, 0.55, 1.0])
    ]
    found = lowest_scored(rows, 2, show_text=True)
    assert found["of"] == 4
    assert found["pairs"] == [
        {"score": 0.2, "complex": "complex 1", "simple": "simple 1"},
        {"score": 0.55, "complex": "complex 3", "simple": "simple 3"},
    ]
    assert [e.keys() for e in lowest_scored(rows, 2, show_text=False)["pairs"]] == [{"score"}, {"score"}]
    assert lowest_scored([{"complex_text": "a", "simple_text": "b"}], 2, True) is None


def test_semantic_types_from_a_demo_vocabulary_say_so_on_the_card_chart_and_page(tmp_path):
    """Issue 53: the data report's semantic-type charts came from the 1,262-term demo
    vocabulary without a caveat. The link stage records its index's size, the card names the
    vocabulary, and the report says it above the table, in the Markdown and on the chart."""
    root = tmp_path / "up"
    plaba = upstream.write_plaba(root)
    linked_stats = Path(plaba["linked"]) / "stats.json"
    params = root / "params.yaml"
    params.write_text(yaml.safe_dump({"build": {"plaba": {**plaba, "split": SPLIT}}}), encoding="utf-8")
    pages = {}
    for demo, terms in ((True, 1262), (False, 3_500_000)):
        linked_stats.write_text(json.dumps({"index_terms": terms, "index_demo": demo}))
        out = tmp_path / f"b{demo}" / "plaba"
        assert main(["--params", str(params), "build", "plaba", "--output", str(out)]) == 0
        card = (out / "README.md").read_text()
        report = tmp_path / f"r{demo}"
        assert main(["report", str(out), "--output", str(report), "--plots", str(tmp_path / f"p{demo}")]) == 0
        pages[demo] = (card, (report / "report.md").read_text(), (report / "index.html").read_text())
    card, md, html = pages[True]
    assert "demo vocabulary (1262 terms, not a UMLS release)" in card
    assert "Semantic types below come from a demo vocabulary (1262 terms" in md
    assert 'class="vocabulary"' in html
    card, md, html = pages[False]
    assert "UMLS index of 3500000 terms" in card and "demo vocabulary" not in md + html


def test_the_report_describes_the_filter_the_card_recorded_not_todays_params(tmp_path, capsys):
    """Issue 56 section 1: a stage reads upstream facts from what upstream wrote. The threshold
    and the near-copy overlap the report draws and counts are those the card recorded of the
    filter the corpus went through (`filter.recorded`), whatever today's params say; a card that
    does not record them is read with today's params, and the report says so once."""
    from medsimp.params_schema import AnnotateReport, Filter
    from medsimp.report.stage import Inputs, Outputs, Sections, report

    folder = crafted_builder(tmp_path / "in", "cochrane", mimic_derived=False)
    today = Sections(AnnotateReport(), Filter(threshold=0.9, copy_overlap=0.99), ["en"])
    text = (folder / "README.md").read_text(encoding="utf-8")
    recorded = {"threshold": 0.6, "comparison": "gt", "aligner_min": None, "drop_copies": "none"}
    recorded["copy_overlap"] = 0.8
    (folder / "README.md").write_text(
        text.replace(
            "mimic_derived: false\n", f"mimic_derived: false\n  filter.recorded: {json.dumps(recorded)}\n"
        ),
        encoding="utf-8",
    )
    report(Inputs(folder), Outputs(str(tmp_path / "recorded")), today)
    en = json.loads((tmp_path / "recorded" / "report.json").read_text())["configs"]["en"]
    assert en["overlap_r"]["threshold"] == 0.6 and en["overlap_r"]["above"] == en["overlap_r"]["n"]
    assert "does not record the filter" not in capsys.readouterr().err
    (folder / "README.md").write_text(
        text.replace("mimic_derived: false\n", "mimic_derived: false\n  aligner.model: m\n"), encoding="utf-8"
    )
    report(Inputs(folder), Outputs(str(tmp_path / "today")), today)
    en = json.loads((tmp_path / "today" / "report.json").read_text())["configs"]["en"]
    assert en["overlap_r"]["threshold"] == 0.9 and en["overlap_r"]["above"] == 0  # every r is 0.7
    assert capsys.readouterr().err.count("does not record the filter the corpus went through") == 1
