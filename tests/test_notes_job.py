"""The notes Beam job on the embedded sample: outputs, reconciliation, determinism; and the
`medsimp select` / `medsimp synth notes` commands."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from medsimp.cli import main
from medsimp.schemas import NOTES_SENTENCES

ROOT = Path(__file__).resolve().parents[1]
PARAMS = str(ROOT / "params.yaml")


def run_notes(out: Path, workers: int) -> Path:
    rc = main(
        [
            "--params",
            PARAMS,
            "--set",
            f"beam.num_workers={workers}",
            "--set",
            "notes.batch_notes=4",
            "notes",
            "--input",
            str(ROOT / "data/sample/NOTEEVENTS.csv"),
            "--output",
            str(out / "notes"),
            "--metrics",
            str(out / "metrics.json"),
        ]
    )
    assert rc == 0
    return out / "notes"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, monkeypatch_module):
    monkeypatch_module.chdir(ROOT)  # lexicon paths in params are relative to the repo root
    one = run_notes(tmp_path_factory.mktemp("one"), workers=1)
    two = run_notes(tmp_path_factory.mktemp("two"), workers=2)
    return one, two


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_outputs_identical_across_runs_and_worker_counts(runs):
    one, two = runs
    a, b = files(one), files(two)
    assert sorted(a) == [
        ".medsimp-output",
        "dead_letter/part-00000-of-00001.jsonl",
        "sentences/part-000-000-00000.parquet",
        "sentences/part-000-000-00001.parquet",
        "sentences/part-000-000-00002.parquet",
        "stats.json",
    ]
    assert a == b


def test_stats_reconcile_on_sample(runs):
    stats = json.loads((runs[0] / "stats.json").read_text())
    assert stats["read"] == 28 == stats["kept"] + stats["filtered"] + stats["rejected"]
    assert (stats["kept"], stats["filtered_by"]) == (10, {"category": 12, "iserror": 1})
    assert stats["rejected_by"] == {
        "bad_utf8": 1,
        "missing_text": 1,
        "unparseable": 2,
        "wrong_field_count": 1,
    }
    assert stats["rejected"] == 5 and stats["filtered"] == 13
    assert stats["sentences"] == stats["sentences_selected"] + stats["sentences_not_selected"] > 0
    assert stats["notes_with_sections"] == 10 and stats["sections"] == 20
    headline = json.loads((runs[0].parent / "metrics.json").read_text())  # `dvc metrics show`
    assert set(headline) == {"read", "kept", "filtered", "rejected"}  # one column set for every data stage
    assert headline == {k: stats[k] for k in headline}


def test_sentence_table(runs):
    table = pq.read_table(runs[0] / "sentences")
    assert table.schema.equals(NOTES_SENTENCES)
    rows = table.to_pylist()
    stats = json.loads((runs[0] / "stats.json").read_text())
    assert len(rows) == stats["sentences"] and sum(r["keep"] for r in rows) == stats["sentences_selected"]
    assert {r["section"] for r in rows} == {
        "History of Present Illness",
        "Brief Hospital Course",
        "Brief Summary of Hospital Course",
    }
    by_note: dict[str, list[int]] = {}
    for r in rows:
        assert r["sentence_id"] == f"notes:{r['doc_id']}:complex:en:{r['sentence_index']}"
        assert r["char_end"] - r["char_start"] == len(r["text"]) and r["text"] == r["text"].strip()
        assert r["keep"] == (r["n"] >= 10 and 0.1 <= r["ratio"] <= 0.5)
        assert "[**" not in r["text"] or r["text"].count("[**") == r["text"].count("**]")
        by_note.setdefault(r["doc_id"], []).append(r["sentence_index"])
    assert all(v == list(range(len(v))) for v in by_note.values())
    hand = [r for r in rows if r["doc_id"] == "20"]
    assert hand[0]["text"].startswith("Mr. [**Known lastname 4321**] is a 71 yo man")
    assert hand[0]["subject_id"] == 20260 and hand[0]["category"] == "Discharge summary"
    assert [r["hadm_id"] for r in rows if r["doc_id"] == "28"][0] is None


def test_dead_letters(runs):
    lines = (runs[0] / "dead_letter" / "part-00000-of-00001.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    assert [r["reason"] for r in records] == [
        "unparseable",
        "unparseable",
        "bad_utf8",
        "missing_text",
        "wrong_field_count",
    ]
    assert all(
        r["source"] == "NOTEEVENTS.csv" and r["locator"].startswith("NOTEEVENTS.csv@") for r in records
    )
    assert "pain" not in "".join(lines)  # the broken rows' text never reaches the dead letters


def test_select_command(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    (tmp_path / "a.txt").write_text("CHF\nPt\n")
    (tmp_path / "t.txt").write_text("the\nbe\nstart\non\nwith\na\npatient\n")
    (tmp_path / "s.txt").write_text("The patient with CHF was started on lasix.\n\npt was seen.\n")
    assert (
        main(
            [
                "--params",
                PARAMS,
                "select",
                str(tmp_path / "s.txt"),
                "--abbreviations",
                str(tmp_path / "a.txt"),
                "--common-words",
                str(tmp_path / "t.txt"),
            ]
        )
        == 0
    )
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    # Algorithm 1's pseudocode: "." counts in n; CHF (not in T) counts in abb and unc
    assert out == [
        {
            "text": "The patient with CHF was started on lasix.",
            "n": 9,
            "abb": 1,
            "unc": 2,
            "ratio": 3 / 9,
            "keep": False,
        },
        {"text": "pt was seen.", "n": 4, "abb": 0, "unc": 2, "ratio": 0.5, "keep": False},
    ]
    assert (
        main(
            [
                "--params",
                PARAMS,
                "select",
                str(tmp_path / "s.txt"),
                "--abbreviations",
                str(tmp_path / "a.txt"),
                "--common-words",
                str(tmp_path / "t.txt"),
                "--case-insensitive",
            ]
        )
        == 0
    )
    assert [json.loads(x)["abb"] for x in capsys.readouterr().out.splitlines()] == [1, 1]


def test_synth_notes_is_deterministic(tmp_path):
    for name in ("a.csv.gz", "b.csv.gz"):
        assert (
            main(
                [
                    "--params",
                    PARAMS,
                    "synth",
                    "notes",
                    "--rows",
                    "300",
                    "--seed",
                    "5",
                    "--output",
                    str(tmp_path / name),
                ]
            )
            == 0
        )
    assert (tmp_path / "a.csv.gz").read_bytes() == (tmp_path / "b.csv.gz").read_bytes()
    text = gzip.decompress((tmp_path / "a.csv.gz").read_bytes())
    from pipelines.sources.noteevents import iter_records

    assert len(list(iter_records(str(tmp_path / "a.csv.gz"), categories=None))) == 300
    assert text.startswith(b'"ROW_ID","SUBJECT_ID"')
