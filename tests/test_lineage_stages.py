"""Lineage through the stages that write tables (issue 18 part 2): the notes and radiology jobs
tag the MIMIC release they read, and outputs without a Parquet schema (simplify, train,
human-evaluation forms, dead letters) record the lineage of their inputs in their marker."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsimp import lineage
from medsimp.cli import main
from pipelines.jobs.notes import note_lineage

ROOT = Path(__file__).resolve().parents[1]
PARAMS = str(ROOT / "params.yaml")


def test_release_tags_come_from_the_note_table_header(tmp_path):
    noteevents = str(ROOT / "data/sample/NOTEEVENTS.csv")
    discharge = str(ROOT / "data/sample/mimic4/discharge.csv.gz")
    bad = tmp_path / "headerless.csv"
    bad.write_text("1,2,3\n")
    assert note_lineage([noteevents]) == (lineage.MIMIC_III,)
    assert note_lineage([discharge]) == (lineage.MIMIC_IV_NOTE,)
    assert note_lineage([noteevents, discharge]) == (lineage.MIMIC_III, lineage.MIMIC_IV_NOTE)
    assert note_lineage([str(bad)]) == (lineage.MIMIC,)
    assert all(lineage.is_restricted([t]) for t in ("mimic", "mimic-iii", "mimic-iv-note", "mimic-cxr"))


@pytest.mark.slow
def test_notes_job_stamps_the_mimic_iv_release(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # lexicon paths in params are relative to the repo root
    out = tmp_path / "notes"
    assert (
        main(
            [
                "--params",
                PARAMS,
                "notes",
                "--input",
                str(ROOT / "data/sample/mimic4/discharge.csv.gz"),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    parts = sorted((out / "sentences").glob("*.parquet"))
    assert parts
    for part in parts:
        assert lineage.from_metadata(pq.read_schema(part).metadata) == (lineage.MIMIC_IV_NOTE,)
    assert json.loads((out / ".medsimp-output").read_text())["lineage"] == [lineage.MIMIC_IV_NOTE]
    # dead letters (JSONL, no schema) get the folder's lineage
    assert lineage.read_lineage(out / "dead_letter" / "part-00000.jsonl") == (lineage.MIMIC_IV_NOTE,)


def test_marker_lineage_is_the_union_of_the_tables_written(tmp_path):
    from medsimp.atomic import atomic_dir

    schema = pa.schema([("t", pa.string())])
    with atomic_dir(tmp_path / "a", "t") as tmp:
        pq.write_table(
            pa.table({"t": ["x"]}, schema=lineage.with_lineage(schema, ["msd"])), tmp / "1.parquet"
        )
        pq.write_table(
            pa.table({"t": ["x"]}, schema=lineage.with_lineage(schema, ["mimic-iii"])), tmp / "2.parquet"
        )
    assert json.loads((tmp_path / "a" / ".medsimp-output").read_text())["lineage"] == ["mimic-iii", "msd"]
    with atomic_dir(tmp_path / "b", "t") as tmp:
        pq.write_table(pa.table({"t": ["x"]}), tmp / "1.parquet")  # no lineage: unknown
    assert json.loads((tmp_path / "b" / ".medsimp-output").read_text())["lineage"] is None
    assert lineage.read_lineage(tmp_path / "b") is None
    # an edited marker cannot vouch for a table without lineage
    (tmp_path / "b" / ".medsimp-output").write_text('{"command": "t", "lineage": ["cochrane"]}')
    assert lineage.read_lineage(tmp_path / "b") is None


def test_train_outputs_carry_the_training_data_lineage(tmp_path):
    from medsimp.params_schema import Train, TrainData
    from training.stage import data_lineage

    pairs = tmp_path / "pairs"
    pairs.mkdir()
    schema = lineage.with_lineage(pa.schema([("source", pa.string())]), ["cochrane"])
    pq.write_table(pa.table({"source": ["x"]}, schema=schema), pairs / "part-0.parquet")
    as_pairs = Train(data=TrainData(format="pairs", pairs=str(pairs)))
    assert data_lineage(as_pairs) == ["cochrane"]
    assert data_lineage(Train(data=TrainData(format="medlane"))) == [lineage.MIMIC_III]
    pq.write_table(pa.table({"source": ["x"]}), pairs / "part-1.parquet")
    assert data_lineage(as_pairs) == [lineage.UNKNOWN]


def _variants(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True)
    path = folder / "variants.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["sentence_id", "variant", "source", "output"])
        for item in ("i1", "i2"):
            for system in ("s1", "s2"):
                w.writerow([item, system, f"{text} {item}", f"{system} {item}"])
    return path


@pytest.mark.parametrize(
    "marker,text,expected",
    [
        ({"command": "simplify", "lineage": ["mimic-iii"]}, "Small effusion", ["mimic-iii"]),
        ({"command": "simplify", "lineage": ["cochrane"]}, "The trial", ["cochrane"]),
        (
            {"command": "simplify", "lineage": ["cochrane"]},
            "Seen at [**Hospital1 18**]",
            ["cochrane", "mimic"],
        ),
        (None, "The trial", ["unknown"]),
    ],
)
def test_humaneval_forms_carry_the_lineage_of_their_text(tmp_path, marker, text, expected):
    sim = tmp_path / "simplify"
    variants = _variants(sim, text)
    if marker is not None:
        (sim / ".medsimp-output").write_text(json.dumps(marker))
    params = tmp_path / "params.yaml"
    params.write_text(f"humaneval: {{input: '{variants}', systems: [s1, s2], n_laypeople: 2}}\n")
    forms = tmp_path / "forms"
    assert main(["--params", str(params), "humaneval", "forms", "--output", str(forms)]) == 0
    got = json.loads((forms / ".medsimp-output").read_text())["lineage"]
    assert got == sorted(expected)
    shutil.rmtree(forms)
