"""The jobs' composite transforms, each run alone in a TestPipeline and checked with
assert_that: what every output PCollection holds, dead letters by reason."""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from medsimp.config import load_params
from medsimp.params_schema import Align, Beam, Filter, Link, section_of
from pipelines.jobs import align as align_job
from pipelines.jobs import cochrane
from pipelines.jobs import filter as filter_job
from pipelines.jobs import link as link_job
from pipelines.jobs import msd as msd_job
from pipelines.jobs import notes as notes_job
from pipelines.jobs import plaba as plaba_job
from pipelines.jobs import radiology as radiology_job
from pipelines.jobs.sorted_io import WriteSorted, fill_empty_shards
from pipelines.text.selection import load_lexicons

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
    params = load_params(ROOT / "params.yaml").notes
    lexicons = load_lexicons(params, ROOT)
    files = _notes_file(tmp_path)
    out = tmp_path / "sentences"
    out.mkdir()
    with BeamTestPipeline() as p:
        read = p | notes_job.ReadNotes(files, ["Discharge summary"], num_ranges=1)
        paths = (
            read["notes"]
            | notes_job.ExtractSections(params.model_copy(update={"batch_notes": 1}))
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


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_read_and_join_cochrane_records(tmp_path):
    specs = _cochrane_file(tmp_path)
    with BeamTestPipeline() as p:
        parsed = p | cochrane.ReadRecords(specs)
        joined = parsed["records"] | cochrane.JoinReviews(str(tmp_path / "runs"))
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


def test_group_sorted_gives_what_a_group_by_key_gives_through_run_files(tmp_path, monkeypatch):
    import random

    from pipelines.jobs import sorted_io
    from pipelines.jobs.sorted_io import GroupSorted, delete_runs

    monkeypatch.setattr(sorted_io, "MERGE_FAN_IN", 4)  # the merges take several passes

    pairs = [(f"k{i % 23}", {"v": i, "nested": [str(i)] * (i % 3)}) for i in range(500)]
    random.Random(1).shuffle(pairs)
    expected = {}
    for k, v in pairs:
        expected.setdefault(k, []).append(v["v"])
    runs = tmp_path / "runs"
    runs.mkdir()
    with BeamTestPipeline() as p:
        grouped = (
            p
            | beam.Create(pairs)
            | GroupSorted(str(runs), run_rows=9)  # dozens of runs per shard
            | beam.MapTuple(lambda k, vs: (k, sorted(v["v"] for v in vs)))
        )
        assert_that(grouped, equal_to(sorted((k, sorted(v)) for k, v in expected.items())))
    assert any(f.name.startswith(".group-") for f in runs.iterdir())
    delete_runs(str(runs), "group")
    assert list(runs.iterdir()) == []


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
        scored = p | beam.Create(rows) | filter_job.FilterOverlap(Filter(threshold=0.5, comparison="gt"))
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


def test_filter_overlap_or_aligner_keeps_what_the_crf_is_sure_of():
    rows = [
        {
            "language": "en",
            "complex_text": "Renal failure.",
            "simple_text": "Her kidneys stopped working.",
            "pivot_ids": [],
            "pivot_text": "",
            "crf_score": score,
        }
        for score in (0.95, 0.6)
    ]  # r = 0 for both: the paper's rule drops both
    with BeamTestPipeline() as p:
        scored = (
            p
            | beam.Create(rows)
            | filter_job.FilterOverlap(Filter(threshold=0.5, rule="overlap_or_aligner", aligner_min=0.9))
        )
        assert_that(scored["kept"] | beam.Map(lambda r: r["crf_score"]), equal_to([0.95]))


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_filter_drop_copies_is_off_by_default_and_drops_the_kinds_it_names():
    """Issue 53: identical and near-copy pairs (`alignment.overlap.copy_kind`) are kept by the
    paper's rule (params default `none`); `identical` drops the first kind, `near_copy` both."""
    from medsimp.config import load_params
    from medsimp.text.copies import copy_kind

    same = "Antibiotics reduced the risk of infection after surgery."
    near = "Antibiotics reduced the risk of an infection after surgery."  # 8 of 9 words, 8 of 8
    rewrite = "Antibiotics lowered infection risk after operations."
    assert [copy_kind(same, x, 0.9) for x in (same, " ".join(same.split()), near, rewrite)] == [
        "identical",
        "identical",
        None,  # 8/9 < 0.9: not a near copy at 0.9
        None,
    ]
    assert copy_kind(same, near, 0.85) == "near_copy"
    params = load_params(ROOT / "params.yaml", []).filter
    assert (params.drop_copies, params.copy_overlap) == ("none", 0.9)
    rows = [
        {"language": "en", "complex_text": same, "simple_text": s, "pivot_ids": [], "pivot_text": ""}
        for s in (same, near, rewrite)
    ]
    kept = {}
    for option in ("none", "identical", "near_copy"):
        with BeamTestPipeline() as p:
            scored = (
                p
                | beam.Create(rows)
                | filter_job.FilterOverlap(Filter(drop_copies=option, copy_overlap=0.85))
            )
            kept[option] = scored["kept"] | beam.Map(lambda r: r["simple_text"])
            assert_that(
                kept[option],
                equal_to([s for s in (same, near, rewrite)][{"none": 0, "identical": 1, "near_copy": 2}[option] :]),
            )  # fmt: skip


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


def test_write_sorted_merges_small_runs_into_the_bytes_of_one_in_memory_sort(tmp_path):
    import random

    from pipelines.jobs.sorted_io import stable_shard, table_bytes

    concept = pa.struct([("cui", pa.string()), ("term", pa.string())])
    schema = pa.schema([("k", pa.string()), ("v", pa.int64()), ("c", pa.list_(concept))])
    # nested values that repeat within and across rows (what pickling a run must keep apart)
    rows = [
        {
            "k": f"doc{i % 37}",
            "v": i,
            "c": [{"cui": "C1", "term": "a"}] * (i % 3) + [{"cui": f"C{i}", "term": "a"}],
        }
        for i in range(300)
    ]
    random.Random(3).shuffle(rows)
    with BeamTestPipeline() as p:
        written = (
            p
            | beam.Create(rows)
            | WriteSorted(
                str(tmp_path),
                prefix="part",
                num_shards=3,
                shard_key=lambda r: r["k"],
                sort_key=lambda r: (r["k"], r["v"]),
                schema=schema,
                run_rows=7,  # dozens of runs per shard
            )
        )
        assert_that(
            written | beam.Map(lambda s: Path(s).name),
            equal_to([f"part-0000{i}-of-00003.parquet" for i in range(3)]),
        )
    for i in range(3):
        expected = sorted((r for r in rows if stable_shard(r["k"], 3) == i), key=lambda r: (r["k"], r["v"]))
        assert (tmp_path / f"part-0000{i}-of-00003.parquet").read_bytes() == table_bytes(expected, schema)
    # the runs stay until the pipeline is done (a retried merge reads them again); the
    # after-run step every job calls removes them
    assert any(f.name.endswith(".run") for f in tmp_path.iterdir())
    fill_empty_shards(str(tmp_path), "part", 3, schema)
    assert sorted(f.name for f in tmp_path.iterdir()) == [f"part-0000{i}-of-00003.parquet" for i in range(3)]


def test_merge_runs_bounds_open_files_and_keeps_its_inputs_for_a_retry(tmp_path, monkeypatch):
    import pickle
    import random

    from pipelines.jobs import sorted_io

    monkeypatch.setattr(sorted_io, "MERGE_FAN_IN", 3)
    opened: list[int] = []
    live = {"n": 0}
    real_read_run = sorted_io.read_run

    def counting_read_run(path):
        live["n"] += 1
        opened.append(live["n"])
        try:
            yield from real_read_run(path)
        finally:
            live["n"] -= 1

    monkeypatch.setattr(sorted_io, "read_run", counting_read_run)
    tmp_path = tmp_path / "o[1]"  # a folder named like a glob: its runs are still found and deleted
    tmp_path.mkdir()
    rng = random.Random(5)
    values = list(range(200))
    rng.shuffle(values)
    runs = []
    for j in range(11):  # 11 runs > 3: merged in passes
        path = tmp_path / f".part-00000-{j:02d}.run"
        with path.open("wb") as fh:
            for v in sorted(values[j::11]):
                pickle.dump({"v": v}, fh)
        runs.append(str(path))
    key = lambda r: r["v"]  # noqa: E731
    first = [r["v"] for r in sorted_io.merge_runs(runs, key, str(tmp_path), "part", 0)]
    assert first == sorted(values)
    assert max(opened) <= 3
    # the inputs are still there and no intermediate run is left: a retry gives the same rows
    assert sorted(str(p) for p in tmp_path.iterdir()) == sorted(runs)
    assert [r["v"] for r in sorted_io.merge_runs(runs, key, str(tmp_path), "part", 0)] == first
    sorted_io.fill_empty_shards(str(tmp_path), "part", 1, fmt="jsonl")
    assert [p.name for p in tmp_path.iterdir()] == ["part-00000-of-00001.jsonl"]


@pytest.mark.parametrize("n", [0, 3, 8, 10])
def test_streamed_parquet_is_byte_identical_to_the_in_memory_table(n):
    import io

    from pipelines.jobs.sorted_io import table_bytes, write_parquet_stream

    schema = pa.schema([("k", pa.string()), ("c", pa.list_(pa.string()))]).with_metadata({b"x": b"y"})
    rows = [{"k": f"r{i}", "c": [str(i)] * (i % 3)} for i in range(n)]
    sink = io.BytesIO()
    assert write_parquet_stream(sink, iter(rows), schema, row_group_size=4) == n
    assert sink.getvalue() == table_bytes(rows, schema, row_group_size=4)
    assert pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata.num_row_groups == max(1, -(-n // 4))


@pytest.mark.parametrize(
    ("n", "group", "chunk"), [(0, 6, 2), (5, 6, 2), (13, 6, 2), (13, 6, 4), (60_000, 50_000, 5_000)]
)
def test_streamed_parquet_converts_a_chunk_at_a_time_into_the_same_bytes(n, group, chunk, monkeypatch):
    import io

    from pipelines.jobs import sorted_io

    monkeypatch.setattr(sorted_io, "ARROW_CHUNK", chunk)
    schema = pa.schema([("k", pa.string()), ("c", pa.list_(pa.string())), ("x", pa.float64())])
    # repeated strings (dictionary pages) and a row count past a row group
    rows = [{"k": f"doc{i % 97}", "c": [str(i % 11)] * (i % 3), "x": i / 7} for i in range(n)]
    sink = io.BytesIO()
    assert sorted_io.write_parquet_stream(sink, iter(rows), schema, row_group_size=group) == n
    assert sink.getvalue() == sorted_io.table_bytes(rows, schema, row_group_size=group)


def _doc_file(path: Path, docs: list[tuple[str, int]]) -> str:
    from pipelines.jobs.sorted_io import table_bytes

    schema = pa.schema([("doc_id", pa.string()), ("i", pa.int64()), ("text", pa.string())])
    rows = [{"doc_id": d, "i": i, "text": f"{d} {i}"} for d, n in docs for i in range(n)]
    path.write_bytes(table_bytes(rows, schema))
    return str(path)


def test_read_documents_yields_each_document_once_in_file_order_across_batches(tmp_path):
    from pipelines.sources.tables import read_documents

    path = _doc_file(tmp_path / "a.parquet", [("d2", 3), ("d1", 1), ("d3", 4)])
    docs = list(read_documents(path, ["doc_id"], ["i", "doc_id"], batch_rows=2))  # documents straddle batches
    assert [key for key, _ in docs] == [("d2",), ("d1",), ("d3",)]
    assert docs[2][1] == [{"i": i, "doc_id": "d3"} for i in range(4)]
    assert sum(len(rows) for _, rows in docs) == 8


def test_read_documents_transform_gives_what_a_group_by_key_gives(tmp_path):
    from pipelines.jobs.sorted_io import ReadDocuments
    from pipelines.sources.tables import grouped_by

    files = [
        _doc_file(tmp_path / "a.parquet", [("d1", 2), ("d3", 1)]),
        _doc_file(tmp_path / "b.parquet", [("d2", 3)]),
    ]
    assert grouped_by(files, ["doc_id"], batch_rows=1)
    with BeamTestPipeline() as p:
        docs = p | ReadDocuments(files, ["doc_id"], ["doc_id", "i"])
        assert_that(
            docs | beam.MapTuple(lambda key, rows: (key[0], [r["i"] for r in rows])),
            equal_to([("d1", [0, 1]), ("d3", [0]), ("d2", [0, 1, 2])]),
        )


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_documents_of_one_file_spread_over_every_worker(tmp_path):
    """Parallel by document, not by file (issue 36 item 1): one input file's documents reach
    both worker processes of the local multi-process runner."""
    import os

    from pipelines.jobs.beam_io import new_pipeline
    from pipelines.jobs.sorted_io import ReadDocuments

    files = [_doc_file(tmp_path / "one.parquet", [(f"d{i:02d}", 2) for i in range(24)])]
    beam_params = Beam(runner="FnApiRunner", num_workers=2, running_mode="multi_processing")
    here = os.getpid()

    def two_workers(pids):
        assert len(pids) == 24 and here not in pids, pids
        assert len(set(pids)) == 2, pids  # one worker held the whole file before the Reshuffle

    with new_pipeline(beam_params) as p:
        pids = (
            p
            | ReadDocuments(files, ["doc_id"], ["doc_id", "i"])
            | beam.Map(lambda _: __import__("os").getpid())
        )
        assert_that(pids, two_workers)


def test_grouped_by_refuses_a_document_split_in_one_file_or_across_files(tmp_path):
    from pipelines.sources.tables import grouped_by

    split = _doc_file(tmp_path / "split.parquet", [("d1", 1), ("d2", 1), ("d1", 1)])
    assert not grouped_by([split], ["doc_id"])
    a = _doc_file(tmp_path / "a.parquet", [("d1", 2)])
    b = _doc_file(tmp_path / "b.parquet", [("d1", 1)])
    assert not grouped_by([a, b], ["doc_id"])


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


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_parse_manuals_groups_both_versions_by_pcio_section(tmp_path):
    def manual(audience, sections):
        return json.dumps(
            {
                "topic": "Gout",
                "audience": audience,
                "title": "Gout",
                "sections": [{"heading": h, "text": t} for h, t in sections],
            }
        )

    path = tmp_path / "msd.jsonl"
    lines = [
        manual(
            "professional", [("Etiology", "Gout is caused by urate crystals. Hyperuricemia precedes it.")]
        ),
        manual(
            "consumer",
            [("Causes", "Gout comes from crystals in the joints."), ("Outlook", "It can be managed.")],
        ),
        '{"topic": "Gout", "audience": ',  # truncated line
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    pcio = {"cause": ["Etiology", "Causes"], "prognosis": ["Outlook"]}
    with BeamTestPipeline() as p:
        out = p | msd_job.ParseManuals(msd_job.input_files(str(path)), ["test"], "title_icd9", pcio, "nltk")
        assert_that(
            out["sentences"] | "Sides" >> beam.Map(lambda r: (r["doc_id"], r["side"], r["pcio"])),
            equal_to(
                [("gout", "complex", "cause")] * 2
                + [("gout", "simple", "cause"), ("gout", "simple", "prognosis")]
            ),
            label="sentences",
        )
        assert_that(  # a group needs both versions: prognosis has no professional side
            out["pairs"] | "Groups" >> beam.Map(lambda g: (g["group_id"], g["n_complex"], g["n_simple"])),
            equal_to([("gout:cause", 2, 1)]),
            label="pairs",
        )
        assert_that(
            out["dead"] | "Reasons" >> beam.Map(lambda r: r["reason"]), equal_to(["bad_json"]), label="dead"
        )


def test_parse_plaba_writes_rows_gold_pairs_and_dead_letters(tmp_path):
    data = {
        "101": {
            "question": "Is gout painful?",
            "90000001": {
                "Title": "Gout pain",
                "abstract": {"1": "Gout causes severe arthralgia.", "2": "Colchicine is effective."},
                "translation1": {"1": "Gout makes joints hurt a lot. It comes in attacks.", "2": ""},
            },
        },
        "102": {"question": 5},  # not a string
    }
    path = tmp_path / "plaba.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    plaba_job.check_input(str(path))
    with BeamTestPipeline() as p:
        out = p | plaba_job.ParsePlaba(str(path))
        assert_that(
            out["sentences"] | "Sides" >> beam.Map(lambda r: r["side"]),
            equal_to(["complex", "complex", "simple", "simple"]),
            label="sentences",
        )
        assert_that(
            out["pairs"]
            | "Pairs" >> beam.Map(lambda r: (r["sentence_number"], r["n_simple"], r["alignment"])),
            equal_to([(1, 2, "1-N"), (2, 0, "1-0")]),
            label="pairs",
        )
        assert_that(
            out["dead"] | "Reasons" >> beam.Map(lambda r: r["reason"]),
            equal_to(["bad_question"]),
            label="dead",
        )


@pytest.fixture(scope="module")
def umls_index(tmp_path_factory):
    from pipelines.text.umls import build_index

    umls = ROOT / "data" / "sample" / "umls"
    dest = tmp_path_factory.mktemp("umls") / "index"
    build_index(str(umls / "MRCONSO.RRF"), str(umls / "MRSTY.RRF"), dest, ["ENG"])
    return str(dest)


@pytest.mark.parametrize(
    ("layout", "streamed"), [("consecutive", True), ("consecutive", False), ("split", False)]
)
@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_link_sentences_adds_concepts_and_readability_per_document_side(
    umls_index, tmp_path, layout, streamed
):
    from medsimp.schemas import sentence_schema
    from pipelines.sources.rows import document_rows

    rows = document_rows("msd", "d1", "complex", "en", [("", "Dyspnea and chest pain occurred.")], "t:1")
    rows += document_rows("msd", "d1", "simple", "fa", [("", "آسم یک بیماری شایع است.")], "t:2")
    blank = {**rows[0], "sentence_id": "msd:d1:complex:en:9", "sentence_index": 9, "text": " "}
    # streamed: each document side in consecutive rows (what `cochrane` writes), read a side
    # at a time; otherwise the English side is split around the Farsi one and needs grouping
    rows = [rows[0], blank, rows[1]] if layout == "consecutive" else [*rows, blank]
    path = str(tmp_path / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(rows, schema=sentence_schema()), path)
    assert link_job.document_files([path]) is (layout == "consecutive")
    params = Link(threshold=0.7, similarity_name="jaccard", window=5, min_match_length=3)
    with BeamTestPipeline() as p:
        out = p | link_job.LinkSentences([path], umls_index, params, ["en"], None, streamed=streamed)
        assert_that(
            out["sentences"]
            | "Cuis" >> beam.Map(lambda r: (r["language"], [c["cui"] for c in r["concepts"]])),
            equal_to([("en", ["C0013404", "C0008031"]), ("fa", [])]),
            label="sentences",
        )
        assert_that(
            out["documents"] | "Docs" >> beam.Map(lambda d: (d["doc_key"], d["linked"], d["n_concepts"])),
            equal_to([("msd:d1:complex:en", True, 2), ("msd:d1:simple:fa", False, 0)]),
            label="documents",
        )
        assert_that(
            out["dead"] | "Reasons" >> beam.Map(lambda r: (r["locator"], r["reason"])),
            equal_to([(f"part-0.parquet:{2 if layout == 'consecutive' else 3}", "missing_field")]),
            label="dead",
        )


def test_run_files_are_found_and_removed_in_a_folder_named_like_a_glob(tmp_path):
    from pipelines.jobs.sorted_io import delete_runs, fill_empty_shards, list_run_files

    out = tmp_path / "out[v2]*?"
    out.mkdir()
    (out / ".part-00000-abc.run").write_bytes(b"rows in the clear")
    (out / ".group-00003-def.run").write_bytes(b"rows in the clear")
    assert [Path(p).name for p in list_run_files(str(out), "part")] == [".part-00000-abc.run"]
    fill_empty_shards(str(out), "part", 1, fmt="jsonl")
    delete_runs(str(out), "group")
    assert sorted(p.name for p in out.iterdir()) == ["part-00000-of-00001.jsonl"]


def test_link_reads_a_broken_or_foreign_table_through_the_grouped_path(tmp_path):
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    pq.write_table(pa.table({"doc_id": ["d"]}), tmp_path / "narrow.parquet")
    assert not link_job.document_files([str(tmp_path / "bad.parquet")])
    assert not link_job.document_files([str(tmp_path / "narrow.parquet")])


@pytest.fixture(scope="module")
def crf_model(tmp_path_factory):
    from alignment.crf import CRFAligner
    from alignment.encoders import make_encoder
    from alignment.gold import read_gold
    from medsimp.params_schema import Crf, STSpec

    docs = read_gold(str(ROOT / "data" / "sample" / "align_gold.jsonl"), "auto")
    model = CRFAligner.train(docs[:2], make_encoder(STSpec(kind="minilm")), Crf(epochs=2, seed=13))
    dest = tmp_path_factory.mktemp("crf") / "model"
    model.save(dest)
    return str(dest)


@pytest.mark.slow  # the minilm encoder and a CRF trained for it: about 7 s
def test_align_documents_aligns_english_and_dead_letters_a_document_without_an_abstract(crf_model):
    def sentence(doc, side, i, text):
        return {
            "sentence_id": f"cochrane:{doc}:{side}:en:{i}",
            "doc_id": doc,
            "side": side,
            "language": "en",
            "section": "Background",
            "sentence_index": i,
            "text": text,
        }

    rows = [
        sentence("D1", "complex", 0, "Chronic low back pain is a leading cause of disability."),
        sentence("D1", "complex", 1, "Exercise therapy reduced pain intensity."),
        sentence("D1", "simple", 0, "Back pain that lasts a long time stops many people from working."),
        sentence("D1", "simple", 1, "Exercise made the pain less bad."),
        sentence("D2", "simple", 0, "A summary without its abstract."),
    ]
    params = section_of(Align, {"model": crf_model, "crf": {"encoder": {"kind": "minilm"}}})
    with BeamTestPipeline() as p:
        out = p | beam.Create(rows) | align_job.AlignDocuments(params, None)
        assert_that(
            out["pairs"]
            | "Docs" >> beam.Map(lambda r: (r["doi"], r["language"], r["method"]))
            | beam.Distinct(),
            equal_to([("D1", "en", "crf")]),  # at least one pair, all of D1, in English, by the CRF
            label="pairs",
        )
        assert_that(
            out["dead_letter"] | "Reasons" >> beam.Map(lambda r: (r["locator"], r["reason"])),
            equal_to([("D2", "no_english_complex")]),
            label="dead",
        )


def test_finding_sentences_merges_repeated_findings_and_drops_duplicate_notes(tmp_path):
    from pipelines.text.radiology import load_lexicons

    def report(findings):
        return f"FINDINGS: {findings}\n\nIMPRESSION: No pneumothorax.\n"

    effusion = "Small bilateral pleural effusions are present."
    path = tmp_path / "NOTEEVENTS.csv"
    path.write_text(
        HEADER
        + _row("1", "20013", "Radiology", report(effusion))
        + _row("2", "20014", "Radiology", report(effusion + " Mild cardiomegaly is seen."))
        + _row("1", "20015", "Radiology", report("A right lower lobe consolidation."))  # duplicate ROW_ID
        + _row("3", "20016", "Discharge summary"),
        encoding="utf-8",
    )
    files = notes_job.note_files([str(path)], expand_dirs=False)
    params = load_params(ROOT / "params.yaml").radiology
    with BeamTestPipeline() as p:
        read = p | notes_job.ReadNotes(files, ["Radiology"], num_ranges=1)
        rows = read["notes"] | radiology_job.FindingSentences(params, load_lexicons(), read["duplicates"])
        assert_that(
            rows | beam.Map(lambda r: (r["text"], r["n_duplicates"], r["duplicate_doc_ids"])),
            equal_to(
                [
                    (effusion, 1, ["2"]),
                    ("Mild cardiomegaly is seen.", 0, []),
                    ("No pneumothorax.", 1, ["2"]),
                ]
            ),
        )


def test_a_copy_is_judged_as_the_filter_judges_a_pair():
    """One definition for the filter, the card and the report: a bridged pair is a copy when
    its English pair is (words of two languages are never compared); an empty side never is."""
    from medsimp.text.copies import judged_pair, row_copy_kind

    same = "Antibiotics reduced the risk of infection."
    bridged = {
        "language": "es",
        "complex_text": same,
        "simple_text": "Los antibióticos redujeron el riesgo.",
        "pivot_ids": ["p"],
        "pivot_text": same,
    }
    assert row_copy_kind(bridged, 0.9) == "identical" and judged_pair(bridged) == (same, same)
    english = {"language": "en", "complex_text": same, "simple_text": same, "pivot_ids": []}
    assert row_copy_kind(english, 0.9) == "identical"
    assert row_copy_kind({**english, "simple_text": "  "}, 0.9) is None
    assert row_copy_kind({**english, "complex_text": None, "simple_text": None}, 0.9) is None
    assert row_copy_kind({"source": same, "target": same}, 0.9) == "identical"  # a MedLane row
