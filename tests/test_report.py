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
from medsimp.report import alignment_types, unaligned

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
