"""The cochrane / msd / plaba Beam jobs on the embedded samples: tables, dead letters, counts."""

import json
from pathlib import Path

import pyarrow.parquet as pq

from medsimp.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures" / "sources"
BASE = ["--params", str(ROOT / "params.yaml"), "--set", "beam.num_workers=1"]


def run_job(name: str, input_path: Path, out: Path) -> dict:
    assert (
        main(
            BASE
            + [
                name,
                "--input",
                str(input_path),
                "--output",
                str(out),
                "--metrics",
                str(out.parent / f"{out.name}.json"),
            ]
        )
        == 0
    )
    stats = json.loads((out / "stats.json").read_text())
    headline = json.loads((out.parent / f"{out.name}.json").read_text())  # `dvc metrics show`
    assert {"read", "kept", "rejected"} <= set(headline) and headline == {k: stats[k] for k in headline}
    assert stats["read"] == stats["kept"] + stats["filtered"] + stats["rejected"]
    return stats


def table(path: Path) -> list[dict]:
    return [r for f in sorted(path.glob("part-*.parquet")) for r in pq.read_table(f).to_pylist()]


def dead(out: Path) -> list[dict]:
    return [
        json.loads(line)
        for line in (out / "dead_letter" / "part-00000-of-00001.jsonl").read_text().splitlines()
    ]


def test_cochrane_sample(tmp_path):
    out = tmp_path / "cochrane[v2]"  # a name that is also a glob: its run files must still go
    stats = run_job("cochrane", ROOT / "data/sample/cochrane.jsonl", out)
    # the join's and the writers' run files (rows in the clear) never reach the output
    assert not [p for p in out.rglob("*") if p.name.endswith(".run")]
    assert (stats["read"], stats["kept"], stats["filtered"], stats["rejected"]) == (33, 27, 1, 5)
    assert {d["reason"] for d in dead(out)} == {
        "bad_json",
        "missing_doi",
        "bad_language",
        "empty_record",
        "no_english_abstract",
    }
    assert all(d["locator"].startswith("cochrane.jsonl:") for d in dead(out))
    rows = table(out / "sentences")
    assert stats["sentences"] == len(rows)
    doi = "10.1002/14651858.CD900001"
    review = [r for r in rows if r["doi"] == doi]
    assert {r["language"] for r in review if r["side"] == "simple"} == {"en", "es", "fr", "fa"}
    assert {r["language"] for r in review if r["side"] == "complex"} == {"en"}
    abstract = sorted((r for r in review if r["side"] == "complex"), key=lambda r: r["sentence_index"])
    assert abstract[0]["section"] == "Background" and abstract[-1]["section"] == "Authors' conclusions"
    assert any(
        r["text"].endswith("(RR 1.02; 95% 0.71 to 1.46; 4 trials, 980 participants).") for r in abstract
    )
    assert abstract[0]["sentence_id"] == f"cochrane:{doi}:complex:en:0"
    versions = {r["version"] for r in rows if r["doi"] == "10.1002/14651858.CD900002"}
    assert versions == {3}  # .pub2 superseded by .pub3


def test_cochrane_devaraj_and_determinism(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    stats = run_job("cochrane", FIX / "devaraj", a)
    run_job("cochrane", FIX / "devaraj" / "val", b)
    assert (stats["read"], stats["kept"], stats["rejected"]) == (4, 2, 2)
    for f in sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    texts = [r["text"] for r in table(a / "sentences")]
    assert "Pain fell (MD -1.2, 95% CI -2.0 to -0.4; 3 trials, 300 participants)." in texts


def test_cochrane_rows_carry_the_inputs_own_split(tmp_path):
    """Issue 53: Devaraj's file name (train/val/test) and a canonical `split` field reach the
    sentence table's `split` column, which the builder's splits follow; an unknown split is a
    dead letter `bad_split`; a record without one gives null."""
    run_job("cochrane", FIX / "devaraj", tmp_path / "d")
    assert {r["split"] for r in table(tmp_path / "d" / "sentences")} == {"validation"}
    records = [
        {"doi": "10.1002/14651858.CD900001", "language": "en", "abstract": "A long abstract here.",
         "pls": "A summary.", "split": "Val"},
        {"doi": "10.1002/14651858.CD900002", "language": "en", "abstract": "Another abstract.", "pls": "Plain."},
        {"doi": "10.1002/14651858.CD900003", "language": "en", "abstract": "Third abstract.", "split": "holdout"},
    ]  # fmt: skip
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    run_job("cochrane", src, tmp_path / "c")
    splits = {r["doc_id"]: r["split"] for r in table(tmp_path / "c" / "sentences")}
    assert splits == {"10.1002/14651858.CD900001": "validation", "10.1002/14651858.CD900002": None}
    assert [d["reason"] for d in dead(tmp_path / "c")] == ["bad_split"]


def test_msd_sample_and_dataset_format(tmp_path):
    out = tmp_path / "msd"
    stats = run_job("msd", ROOT / "data/sample/msd.jsonl", out)
    assert (stats["read"], stats["kept"], stats["filtered"], stats["rejected"]) == (11, 7, 1, 3)
    groups = table(out / "pairs")
    assert "asthma:symptoms" in {g["group_id"] for g in groups}
    assert {g["pcio"] for g in groups} >= {"cause", "symptoms", "diagnosis", "treatment"}
    assert {r["side"] for r in table(out / "sentences")} == {"complex", "simple"}
    out2 = tmp_path / "msd2"
    stats = run_job("msd", FIX / "msd_test.jsonl", out2)
    assert (stats["read"], stats["kept"], stats["rejected"]) == (5, 2, 3)
    assert sorted(d["reason"] for d in dead(out2)) == ["bad_label", "bad_pair", "bad_pair"]


def test_plaba_sample(tmp_path):
    out = tmp_path / "plaba"
    stats = run_job("plaba", ROOT / "data/sample/plaba.json", out)
    assert (stats["read"], stats["kept"], stats["rejected"]) == (7, 4, 3)
    assert stats["pairs_by"] == {"1-0": 4, "1-1": 17, "1-N": 7}
    pairs = table(out / "pairs")
    deleted = [p for p in pairs if p["pair_id"] == "101:90000001:6"][0]
    assert deleted["alignment"] == "1-0" and deleted["simple_ids"] == []
    sentences = {r["sentence_id"]: r for r in table(out / "sentences")}
    for p in pairs:
        assert all(sid in sentences for sid in p["simple_ids"]) and p["complex_id"] in sentences


def test_bad_input_path_is_a_clear_error(tmp_path, capsys):
    code = main(BASE + ["cochrane", "--input", str(tmp_path / "missing"), "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()  # the stage's announce line, then the error
    assert code == 2
    assert "Traceback" not in "\n".join(err) and len(err) == 2
    assert err[1].startswith("medsimp cochrane: ") and "missing" in err[1]
    assert not (tmp_path / "o").exists()


def test_msd_versions_whose_keys_differ_are_counted_one_sided(tmp_path):
    """Title + ICD-9 pairing: a consumer version without the code gets the topic key, so the two
    versions do not meet; each is kept, and stats say how many documents have one side only."""
    lines = [
        {"topic": "Asthma (Professional)", "audience": "professional", "title": "Asthma", "icd9": "493.0"},
        {"topic": "Asthma in Adults", "audience": "consumer", "title": "Asthma"},
        {"topic": "Gout", "audience": "professional"},
        {"topic": "Gout", "audience": "consumer"},
    ]
    path = tmp_path / "msd.jsonl"
    path.write_text(
        "".join(
            json.dumps({**r, "sections": [{"heading": "Symptoms", "text": "Joints swell. It hurts."}]}) + "\n"
            for r in lines
        ),
        encoding="utf-8",
    )
    stats = run_job("msd", path, tmp_path / "out")
    assert (stats["read"], stats["kept"], stats["documents_one_sided"]) == (4, 4, 2)
    assert {g["doc_id"] for g in table(tmp_path / "out" / "pairs")} == {"gout"}
