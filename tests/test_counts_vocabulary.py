"""One vocabulary for counts (issue 53 item 4): the numbers of one run, read from the filter's
stats.json, the build's stats.json and card, and the data report, agree under the meanings
docs/formats.md ("Counts across filter, build, report and card") gives them."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from medsimp.cli import main

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "builders"))
import upstream  # noqa: E402


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_one_runs_counts_agree_from_the_filter_to_the_card_and_the_report(tmp_path):
    root = tmp_path / "up"
    paths = upstream.write_cochrane(root)
    align = tmp_path / "align"  # the fixture's pairs, as `align corpus` writes them
    shutil.copytree(Path(paths["pairs"]), align / "pairs")
    params = tmp_path / "params.yaml"
    build = {
        **paths,
        "pairs": str(tmp_path / "filter" / "pairs"),
        "split": {"seed": 13, "validation": 0.2, "test": 0.2},
    }
    params.write_text(yaml.safe_dump({"build": {"multicochrane": build}}), encoding="utf-8")
    run = ["--params", str(params)]
    assert main([*run, "filter", "--input", str(align), "--output", str(tmp_path / "filter")]) == 0
    out = tmp_path / "mc"
    assert main([*run, "build", "multicochrane", "--output", str(out)]) == 0
    assert main([*run, "report", str(out), "--output", str(tmp_path / "report")]) == 0
    filt = json.loads((tmp_path / "filter" / "stats.json").read_text())
    built = json.loads((out / "stats.json").read_text())
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    card = (out / "README.md").read_text(encoding="utf-8")
    languages = sorted(k for k in built["splits"] if not k.endswith("-filtered"))
    rows = {
        lang: {
            split: [
                r
                for f in sorted((out / lang).glob(f"{split}-*.parquet"))
                for r in pq.read_table(f).to_pylist()
            ]
            for split in ("train", "validation", "test")
        }
        for lang in languages
    }
    everything = [r for by_split in rows.values() for rs in by_split.values() for r in rs]
    # read: rows in; kept: rows a stage passes on (filter: keep true; build: rows written)
    assert filt["read"] == built["read"] == filt["kept"] + filt["filtered"]
    # the build's read = kept (rows written) + filtered (rows of MC-CLEAN reviews replaced by
    # gold; none here) + rejected (dead letters, e.g. a pair naming an unknown sentence)
    assert built["read"] == built["kept"] + built["filtered"] + built["rejected"]
    assert built["kept"] == len(everything) and built["rejected"] >= 1  # the fixture's bad record
    rejected = [
        json.loads(x) for x in (out / "dead_letter").glob("*.jsonl") for x in x.read_text().splitlines()
    ]
    rejected_kept = sum(
        r["keep"]
        for f in sorted((tmp_path / "filter" / "pairs").glob("*.parquet"))
        for r in pq.read_table(f).to_pylist()
        if r["pair_id"] in {d["locator"] for d in rejected}
    )
    # overlap_keep (build) is the filter's kept; overlap_dropped counts the filtered splits only
    assert built["overlap_keep"] == filt["kept"] - rejected_kept == sum(r["keep"] for r in everything)
    train_dropped = sum(not r["keep"] for lang in languages for r in rows[lang]["train"])
    assert built["overlap_dropped"] == train_dropped
    for lang in languages:
        train = rows[lang]["train"]
        dropped = sum(not r["keep"] for r in train)
        assert f"Overlap filter, {lang} (train): drops {dropped} of {len(train)} pairs" in card
        # the report's "filter" numbers of a config are over every split (has D of N with keep false)
        cfg = report["configs"][lang]["filter"]
        every = [r for rs in rows[lang].values() for r in rs]
        assert (cfg["pairs"], cfg["dropped"]) == (len(every), sum(not r["keep"] for r in every))
        assert built["splits"][f"{lang}-filtered"]["train"] == len(train) - dropped
    rejected_dropped = len(rejected) - rejected_kept
    assert (
        sum(report["configs"][lang]["filter"]["dropped"] for lang in languages)
        == filt["filtered"] - rejected_dropped
    )
    assert re.search(rf"\| read \| {built['read']} \|", (tmp_path / "report" / "report.md").read_text())
