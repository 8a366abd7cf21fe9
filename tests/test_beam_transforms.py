"""The jobs' composite transforms, each run alone in a TestPipeline and checked with
assert_that: what every output PCollection holds, dead letters by reason."""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from medsimp.config import load_params, section
from medsimp.pipelines import cochrane, filter_job, notes_job
from medsimp.pipelines.beam_io import WriteSorted
from medsimp.pipelines.selection import load_lexicons

ROOT = Path(__file__).resolve().parents[1]
HEADER = '"ROW_ID","SUBJECT_ID","HADM_ID","CHARTDATE","CHARTTIME","STORETIME","CATEGORY","DESCRIPTION","CGID","ISERROR","TEXT"\n'
NOTE = (
    "History of Present Illness:\nThe patient is a 68 y/o M with h/o OSA and CHF who presented with CP. "
    "He was admitted to the MICU for further management of his CHF.\n\nSocial History:\nLives with wife.\n"
)


def _row(row_id: str, subject: str, category: str, text: str = NOTE) -> str:
    return f'{row_id},{subject},100037,2151-08-11,,,"{category}","Report",,,"{text}"\n'


def _notes_file(tmp_path: Path) -> list[tuple[str, str, int]]:
    path = tmp_path / "NOTEEVENTS.csv"
    path.write_text(
        HEADER
        + _row("1", "20013", "Discharge summary")
        + _row("2", "20014", "Radiology")  # filtered: another category
        + _row("1", "20015", "Discharge summary")  # duplicate ROW_ID
        + _row("3", "abc", "Discharge summary")  # SUBJECT_ID is not a number
        + _row("4", "20016", "Discharge summary", "No target heading here."),
        encoding="utf-8",
    )
    return notes_job.note_files([str(path)], expand_dirs=False)


def test_read_notes_splits_notes_rejects_and_duplicates(tmp_path):
    files = _notes_file(tmp_path)
    with BeamTestPipeline() as p:
        read = p | notes_job.ReadNotes(files, ["Discharge summary"], num_ranges=2)
        ids = read["notes"] | "Ids" >> beam.Map(lambda e: (e[2].note_id, e[2].subject_id))
        assert_that(ids, equal_to([("1", 20013), ("1", 20015), ("4", 20016)]), label="notes")
        reasons = read["rejects"] | "Reasons" >> beam.Map(lambda r: r["reason"])
        assert_that(reasons, equal_to(["bad_field", "duplicate_id"]), label="rejects")
        dupes = read["duplicates"] | "Dupes" >> beam.Map(lambda kv: kv[1])
        assert_that(dupes, equal_to([1]), label="duplicates")


def test_sections_then_selection_write_one_table_per_batch(tmp_path):
    params = section(load_params(ROOT / "params.yaml"), "notes")
    lexicons = load_lexicons(params, ROOT)
    files = _notes_file(tmp_path)
    out = tmp_path / "sentences"
    out.mkdir()
    with BeamTestPipeline() as p:
        read = p | notes_job.ReadNotes(files, ["Discharge summary"], num_ranges=1)
        paths = (
            read["notes"]
            | notes_job.ExtractSections({**params, "batch_notes": 1})
            | notes_job.SelectSentences(params, lexicons, str(out), read["duplicates"])
        )
        assert_that(paths | beam.Map(lambda s: Path(s).name), equal_to(["part-000-000-00000.parquet"]))
    rows = pq.read_table(next(out.iterdir())).to_pylist()
    assert {r["note_id"] for r in rows} == {"1"}  # the duplicate and the note without sections wrote nothing
    assert {r["section"] for r in rows} == {"History of Present Illness"}
    expected = [r["n"] >= 10 and 0.1 <= r["ratio"] <= 0.5 for r in rows]  # Algorithm 1
    assert [r["keep"] for r in rows] == expected and any(expected) and not all(expected)


def _cochrane_file(tmp_path: Path) -> list[tuple[str, str]]:
    def record(doi, lang, **extra):
        return {"doi": doi, "version": 1, "language": lang, "title": "T", **extra}

    abstract = [{"heading": "Background", "text": "Asthma is common. Inhaled steroids help."}]
    pls = [{"heading": "Key messages", "text": "Asthma is common. Steroid inhalers help."}]
    lines = [
        json.dumps(record("10.1002/14651858.CD000001", "en", abstract=abstract, pls=pls)),
        json.dumps(record("10.1002/14651858.CD000001", "es", pls=pls)),
        json.dumps(record("10.1002/14651858.CD000002", "fr", pls=pls)),  # no English abstract
        '{"doi": "10.1002/14651858.CD000003", "version": ',  # truncated line
    ]
    path = tmp_path / "reviews.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return cochrane.input_specs(str(path))


def test_read_and_join_cochrane_records(tmp_path):
    specs = _cochrane_file(tmp_path)
    with BeamTestPipeline() as p:
        parsed = p | cochrane.ReadRecords(specs)
        joined = parsed["records"] | cochrane.JoinReviews()
        assert_that(
            parsed["dead"] | "ParseReasons" >> beam.Map(lambda r: r["reason"]),
            equal_to(["bad_json"]),
            label="parse_dead",
        )
        assert_that(
            joined["dead"] | "JoinReasons" >> beam.Map(lambda r: r["reason"]),
            equal_to(["no_english_abstract"]),
            label="join_dead",
        )
        sides = joined["rows"] | beam.Map(lambda r: (r["doi"][-8:], r["side"], r["language"]))
        assert_that(
            sides,
            equal_to(
                [("CD000001", "complex", "en")] * 2
                + [("CD000001", "simple", lang) for lang in "en en es es".split()]
            ),
            label="rows",
        )


def test_filter_overlap_scores_every_pair_and_keeps_r_above_the_threshold():
    def pair(lang, complex_text, simple_text, pivot_text=""):
        return {
            "language": lang,
            "complex_text": complex_text,
            "simple_text": simple_text,
            "pivot_ids": ["p"] if pivot_text else [],
            "pivot_text": pivot_text,
        }

    rows = [
        pair("en", "The patient has cirrhosis.", "The patient has liver scarring."),  # r = 3/5
        pair("en", "Renal failure.", "Her kidneys stopped working."),  # r = 0
        pair("es", "Renal failure.", "Sus riñones fallaron.", "Renal failure."),  # r = 1 via the pivot
    ]
    with BeamTestPipeline() as p:
        scored = p | beam.Create(rows) | filter_job.FilterOverlap(0.5, "gt")
        assert_that(
            scored["pairs"]
            | "R" >> beam.Map(lambda r: (r["simple_text"], round(r["overlap_r"], 4), r["keep"])),
            equal_to(
                [
                    ("The patient has liver scarring.", 0.6, True),
                    ("Her kidneys stopped working.", 0.0, False),
                    ("Sus riñones fallaron.", 1.0, True),
                ]
            ),
            label="pairs",
        )
        assert_that(
            scored["kept"] | "Kept" >> beam.Map(lambda r: r["language"]),
            equal_to(["en", "es"]),
            label="kept",
        )


def test_write_sorted_writes_sorted_shards_whatever_the_input_order(tmp_path):
    rows = [{"k": k, "v": v} for k, v in [("b", 2), ("a", 3), ("b", 1), ("a", 1)]]
    with BeamTestPipeline() as p:
        written = (
            p
            | beam.Create(rows)
            | WriteSorted(
                str(tmp_path),
                prefix="part",
                num_shards=1,
                shard_key=lambda r: r["k"],
                sort_key=lambda r: (r["k"], r["v"]),
                fmt="jsonl",
            )
        )
        assert_that(written | beam.Map(lambda s: Path(s).name), equal_to(["part-00000-of-00001.jsonl"]))
    lines = (tmp_path / "part-00000-of-00001.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["v"] for line in lines] == [1, 3, 1, 2]


def test_a_file_that_breaks_mid_read_is_one_file_error_dead_letter(tmp_path):
    import gzip

    rows = "".join(
        _row(str(i), str(20000 + i), "Discharge summary", NOTE * (i % 7 + 1)) for i in range(1, 400)
    )
    whole = gzip.compress((HEADER + rows).encode("utf-8"))
    path = tmp_path / "NOTEEVENTS.csv.gz"
    path.write_bytes(whole[: len(whole) * 9 // 10])  # truncated: the header reads, a later row breaks
    files = notes_job.note_files([str(path)], expand_dirs=False)
    with BeamTestPipeline() as p:
        read = p | notes_job.ReadNotes(files, ["Discharge summary"], num_ranges=1)
        assert_that(
            read["rejects"] | beam.Map(lambda r: (r["reason"], r["locator"])),
            equal_to([("file_error", "NOTEEVENTS.csv.gz@0")]),
        )
