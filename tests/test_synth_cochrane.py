"""`medsimp synth cochrane`: corpus-scale Cochrane input that the real reader accepts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from medsimp.cli import main
from medsimp.pipelines.multilingual_sentences import split_sentences
from medsimp.pipelines.synth_cochrane import lines

ROOT = Path(__file__).resolve().parents[1]
BASE = ["--params", str(ROOT / "params.yaml"), "--set", "beam.num_workers=1"]


def test_same_seed_same_bytes_and_sizes(tmp_path):
    for name in ("a.jsonl", "b.jsonl"):
        assert (
            main(
                [
                    *BASE,
                    "synth",
                    "cochrane",
                    "--reviews",
                    "60",
                    "--seed",
                    "7",
                    "--output",
                    str(tmp_path / name),
                ]
            )
            == 0
        )
    data = (tmp_path / "a.jsonl").read_bytes()
    assert data == (tmp_path / "b.jsonl").read_bytes()
    assert data != "".join(lines(60, seed=8)).encode()
    records, broken = [], 0
    for line in data.decode().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            broken += 1
            continue
        if "doi" in record:
            records.append(record)
        else:
            broken += 1
    assert len(records) + broken == 240 and broken <= 6  # about 0.5% of lines are broken on purpose
    assert set(Counter(r["language"] for r in records).values()) <= set(range(54, 61))
    for r in records:
        pls = split_sentences(r["pls"][0]["text"], r["language"])
        assert 8 <= len(pls) <= 25, (r["language"], len(pls))
        if r["language"] == "en":
            abstract = split_sentences(" ".join(s["text"] for s in r["abstract"]), "en")
            assert 20 <= len(abstract) <= 40
    texts = [r["pls"][0]["text"] for r in records if r["language"] == "es"]
    assert len(set(texts)) == len(texts)  # no two reviews share a summary


def test_reader_reconciles_the_broken_lines(tmp_path, capfd):
    data = tmp_path / "reviews.jsonl"
    data.write_text("".join(lines(300, seed=1)), encoding="utf-8")
    raw = data.read_text(encoding="utf-8").splitlines()
    broken = 0
    for line in raw:
        try:
            broken += "doi" not in json.loads(line)
        except json.JSONDecodeError:
            broken += 1
    assert broken > 0
    assert main([*BASE, "cochrane", "--input", str(data), "--output", str(tmp_path / "out")]) == 0
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    read, kept, filtered, rejected = stats["read"], stats["kept"], stats["filtered"], stats["rejected"]
    assert read == len(raw) == kept + filtered + rejected
    assert rejected == broken
    rows = [
        r
        for f in sorted((tmp_path / "out" / "sentences").glob("*.parquet"))
        for r in pq.read_table(f).to_pylist()
    ]
    assert {r["language"] for r in rows} == {"en", "es", "fr", "fa"}
