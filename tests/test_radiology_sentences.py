"""Radiology findings sentences: extraction rules, metadata, de-duplication, and the Beam job
on the embedded MIMIC-III sample plus a MIMIC-IV-Note radiology fixture."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from medsimp.cli import main
from medsimp.params_schema import Radiology
from pipelines.sources.noteevents import Note
from pipelines.text.radiology import RadiologyExtractor, dedup_key, merge_duplicates

ROOT = Path(__file__).resolve().parents[1]
REPORT = """EXAMINATION: CHEST (PA AND LAT)
INDICATION: ___ with cough
TECHNIQUE: Chest PA and lateral.
FINDINGS:
Two views of the chest were obtained.  There are new bilateral
pleural effusions.  And mild atelectasis.  No pneumothorax.
The heart size is normal.

IMPRESSION:
Small bilateral pleural effusions, left greater than right.  Fractured ___ rib.
"""


def _note(note_id: str, text: str = REPORT) -> Note:
    return Note(
        note_id, 1, None, "Radiology", "CHEST (PA AND LAT)", "2180-01-01", text, f"radiology.csv@{note_id}"
    )


def test_extracts_findings_and_impression_sentences_with_metadata():
    rows, counts = RadiologyExtractor(Radiology()).rows(_note("7"))
    got = [(r["section"], r["sentence_index"], r["text"]) for r in rows]
    assert got == [
        ("FINDINGS", 1, "There are new bilateral pleural effusions."),
        ("FINDINGS", 3, "No pneumothorax."),
        ("IMPRESSION", 5, "Small bilateral pleural effusions, left greater than right."),
    ]
    assert dict(counts) == {
        "sentences": 7,
        "filtered_no_finding": 2,
        "filtered_fragment": 1,
        "filtered_placeholder": 1,
    }
    first, neg = rows[0], rows[1]
    assert first["sentence_id"] == "radiology:7:complex:en:1"
    assert first["body_parts"] == ["chest"] and first["finding_words"] == ["effusion"]
    assert not first["negated"] and neg["negated"] and neg["finding_words"] == ["pneumothorax"]
    assert first["exam"] == "CHEST (PA AND LAT)"
    # no other heading (TECHNIQUE, INDICATION) leaks into the kept sections
    assert all("Chest PA" not in r["text"] for r in rows)


def test_duplicates_keep_the_first_note_in_numeric_order():
    a, b, c = (
        {"doc_id": d, "sentence_index": i, "text": "No pneumothorax."}
        for d, i in (("10", 0), ("9", 3), ("9", 1))
    )
    merged = merge_duplicates([a, b, c])
    assert (merged["doc_id"], merged["sentence_index"]) == ("9", 1)
    assert merged["n_duplicates"] == 2 and merged["duplicate_doc_ids"] == ["9", "10"]
    assert dedup_key("No  Pneumothorax. ") == dedup_key("no pneumothorax")


@pytest.fixture(scope="module")
def mimic4(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("m4") / "radiology.csv.gz"
    header = "note_id,subject_id,hadm_id,note_type,note_seq,charttime,storetime,text\n"
    rows = [
        f'10000032-RR-{n},10000032,22595853,RR,{n},2180-05-{n:02d} 10:00:00,,"{REPORT}"\n' for n in (14, 15)
    ]
    path.write_bytes(gzip.compress((header + "".join(rows)).encode()))
    return path


def _run(out: Path, mimic4: Path) -> dict:
    rc = main(
        [
            "--params",
            str(ROOT / "params.yaml"),
            "--set",
            "beam.num_workers=1",
            "radiology",
            "--input",
            str(ROOT / "data/sample/NOTEEVENTS.csv"),
            "--input",
            str(mimic4),
            "--output",
            str(out),
            "--metrics",
            str(out) + ".json",
        ]
    )
    assert rc == 0
    return json.loads((out / "stats.json").read_text())


def test_job_on_mimic3_sample_and_mimic4_fixture(tmp_path, mimic4):
    stats = _run(tmp_path / "a", mimic4)
    table = pq.read_table(tmp_path / "a" / "sentences").to_pylist()
    ids = [r["sentence_id"] for r in table]
    # MIMIC-III sample: 4 radiology notes, 7 distinct finding sentences (5 copies); MIMIC-IV:
    # the same report twice, 3 sentences each, of which "No pneumothorax." is also in the sample
    assert "radiology:9:complex:en:1" in ids and "radiology:10000032-RR-14:complex:en:1" in ids
    assert not any("RR-15" in i for i in ids)
    assert stats["sentences_kept"] == len(table) == 7 + 2 and stats["sentences_duplicate"] == 5 + 4
    no_ptx = next(r for r in table if r["text"] == "No pneumothorax.")
    assert no_ptx["sentence_id"] == "radiology:9:complex:en:3"
    assert no_ptx["duplicate_doc_ids"] == ["12", "10000032-RR-14", "10000032-RR-15"]
    assert (
        stats["sentences"]
        == stats["sentences_kept"] + stats["sentences_duplicate"] + stats["sentences_filtered"]
    )
    assert stats["read"] == stats["kept"] + stats["filtered"] + stats["rejected"]
    assert stats["kept"] == 6
    dup = next(r for r in table if r["sentence_id"] == "radiology:10000032-RR-14:complex:en:5")
    assert dup["duplicate_doc_ids"] == ["10000032-RR-15"]
    dead = (tmp_path / "a" / "dead_letter" / "part-00000-of-00001.jsonl").read_text()
    assert "effusion" not in dead.lower()
    _run(tmp_path / "b", mimic4)
    for f in ("sentences/part-00000-of-00001.parquet", "stats.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


def test_same_report_file_in_two_folders_dead_letters_duplicate_ids(tmp_path, mimic4):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / mimic4.name).write_bytes(mimic4.read_bytes())
    out = tmp_path / "out"
    rc = main(
        [
            "--params",
            str(ROOT / "params.yaml"),
            "--set",
            "beam.num_workers=1",
            "radiology",
            "--input",
            str(tmp_path / "a"),
            "--input",
            str(tmp_path / "b"),
            "--output",
            str(out),
        ]
    )
    assert rc == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["rejected_by"] == {"duplicate_id": 2} and stats["kept"] == 2
    assert stats["read"] == stats["kept"] + stats["filtered"] + stats["rejected"]
    assert (
        stats["sentences"]
        == stats["sentences_kept"] + stats["sentences_duplicate"] + stats["sentences_filtered"]
    )
    assert stats["sentences_filtered_by"]["duplicate_note"] > 0
    letters = [
        json.loads(x) for x in (out / "dead_letter" / "part-00000-of-00001.jsonl").read_text().splitlines()
    ]
    assert {r["locator"].split("@")[0] for r in letters} == {f"b/{mimic4.name}"}
    table = pq.read_table(out / "sentences").to_pylist()
    assert len({r["sentence_id"] for r in table}) == len(table)
    assert not any(d.startswith("b/") for r in table for d in r["duplicate_doc_ids"])
