"""`medsimp build` on tiny upstream fixtures: deterministic folders that `datasets` loads offline."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from medsimp.cli import main

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "builders"))
import upstream  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NAMES = ("multicochrane", "medlane", "msd", "plaba")
SPLIT = {"seed": 13, "validation": 0.2, "test": 0.2}


@pytest.fixture(scope="module")
def params_file(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("out")
    medlane_dir = root / "medlane"
    shutil.copytree(REPO / "tests" / "fixtures" / "builders" / "medlane", medlane_dir)
    build = {
        "multicochrane": {**upstream.write_cochrane(root), "split": SPLIT},
        "medlane": {
            "input": str(medlane_dir),
            "validation_size": 2,
            "candidates": upstream.write_notes(root),
        },
        "msd": {**upstream.write_msd(root), "split": SPLIT},
        "plaba": {**upstream.write_plaba(root), "split": SPLIT},
    }
    path = root / "params.yaml"
    path.write_text(yaml.safe_dump({"build": build}), encoding="utf-8")
    return path


def _build(params: Path, name: str, out: Path) -> dict:
    metrics = out.parent / f"{out.name}-metrics.json"
    assert (
        main(["--params", str(params), "build", name, "--output", str(out), "--metrics", str(metrics)]) == 0
    )
    headline = json.loads(metrics.read_text(encoding="utf-8"))  # what `dvc metrics show` lists
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    assert set(headline) == {"read", "kept", "filtered", "rejected"}
    assert headline == {k: stats[k] for k in headline}
    return stats


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _card(folder: Path) -> tuple[dict, str]:
    text = (folder / "README.md").read_text(encoding="utf-8")
    head, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body


@pytest.fixture(scope="module")
def built(params_file, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("builders")
    for name in NAMES:
        _build(params_file, name, out / name)
    return {name: out / name for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_build_twice_gives_identical_files(name, params_file, built, tmp_path):
    stats = _build(params_file, name, tmp_path / name)
    assert _digest(tmp_path / name) == _digest(built[name])
    assert stats["read"] == stats["kept"] + stats["filtered"] + stats["rejected"]


@pytest.mark.parametrize("name", NAMES)
def test_every_config_loads_offline_with_documented_features(name, built, tmp_path):
    from datasets import load_dataset

    meta, body = _card(built[name])
    stats = json.loads((built[name] / "stats.json").read_text(encoding="utf-8"))
    assert meta["medsimp"]["builder"] == name
    assert meta["medsimp"]["mimic_derived"] is (name == "medlane")
    assert meta["medsimp"]["params_section"] == f"build.{name}"
    assert len(meta["medsimp"]["params_hash"]) == 16
    # the card records the code it was built with (builders/README.md, issue 29) as a content
    # hash, so a fresh clone's rerun is byte-identical; the git revision is in the run record
    from medsimp.corpora import builder_module
    from medsimp.corpora.writer import code_hash

    assert meta["medsimp"]["code_sha256"] == code_hash(builder_module(name)) and "code_sha256" in body
    run = json.loads((built[name].parent / f"{name}-metrics.json.run.json").read_text(encoding="utf-8"))
    assert run["git_revision"]
    for entry in meta["configs"]:
        ds = load_dataset(str(built[name]), entry["config_name"], cache_dir=str(tmp_path))
        assert {f["split"] for f in entry["data_files"]} == set(ds)
        for split, part in ds.items():
            assert part.num_rows == stats["splits"][entry["config_name"]][split] > 0
            for column in part.column_names:
                assert f"| `{column}` |" in body
            row = f"| `{entry['config_name']}` |"
            assert row in body


def test_multicochrane_configs_splits_and_annotations(built, tmp_path):
    meta, _ = _card(built["multicochrane"])
    assert sorted(c["config_name"] for c in meta["configs"]) == [
        "en",
        "en-filtered",
        "es",
        "es-filtered",
        "fr",
        "fr-filtered",
    ]
    from datasets import load_dataset

    def load(config: str):
        return load_dataset(str(built["multicochrane"]), config, cache_dir=str(tmp_path))

    es, es_filtered, en = load("es"), load("es-filtered"), load("en")
    for split in es:
        # the paper filters the training set only: evaluation splits are the unfiltered ones
        wanted = {r["pair_id"] for r in es[split] if r["keep"] or split != "train"}
        assert set(es_filtered[split]["pair_id"]) == wanted
        assert set(es[split]["doi"]) == set(en[split]["doi"])  # review-level split
    assert any(not r["keep"] for s in ("validation", "test") for r in load("en-filtered")[s])
    dois = [set(es[s]["doi"]) for s in es]
    assert not (dois[0] & dois[1] or dois[0] & dois[2] or dois[1] & dois[2])
    multi = next(r for r in en["train"] if len(r["complex_ids"]) == 2)
    for c in multi["complex_concepts"]:
        assert multi["complex_text"][c["start"] : c["end"]] == c["term"]
    assert len(multi["complex_readability"]) == 2
    stats = json.loads((built["multicochrane"] / "stats.json").read_text(encoding="utf-8"))
    assert stats["rejected"] == 1
    # the filter's cost, counted on the splits it filters (train) from the rows themselves
    train = [r for lang in ("en", "es", "fr") for r in load(lang)["train"]]
    dropped = [r for r in train if not r["keep"]]
    assert dropped and stats["overlap_dropped"] == len(dropped)
    assert stats["overlap_dropped_aligner_sure"] == sum(r["crf_score"] >= 0.5 for r in dropped)
    _, body = _card(built["multicochrane"])
    es_train = load("es")["train"]
    es_drop = sum(not r["keep"] for r in es_train)
    assert f"Overlap filter, es (train): drops {es_drop} of {len(es_train)} pairs" in body
    dead = (built["multicochrane"] / "dead_letter" / "part-00000.jsonl").read_text().splitlines()
    assert json.loads(dead[0])["reason"] == "unknown_sentence_id"


def _mc_human(dois: list[str], splits: dict[str, str] | None = None) -> list[dict]:
    """mc_human.json in the reader's layout: sentences and gold [complex, simple] pairs."""
    return [
        {
            "doi": d,
            "abstract": [f"Complex one of {d}.", f"Complex two of {d}."],
            "pls": [f"Plain one of {d}.", f"Plain two of {d}."],
            "alignments": [[0, 0], [1, 1]],
            **({"split": splits[d]} if splits and d in splits else {}),
        }
        for d in dois
    ]


def test_multicochrane_mc_clean_split(params_file, tmp_path):
    data = yaml.safe_load(params_file.read_text(encoding="utf-8"))
    mc = tmp_path / "mc_human.json"
    clean = [
        "10.1002/14651858.CD000002.pub3",
        "https://doi.org/10.1002/14651858.CD000004",
        "10.1002/14651858.CD000005",
    ] + [f"10.1002/14651858.CD9{i:05d}" for i in range(3)]
    mc.write_text(json.dumps(_mc_human(clean, {"10.1002/14651858.CD000005": "test"})))
    data["build"]["multicochrane"].update({"mc_human": str(mc), "mc_clean_validation": 1, "mc_clean_test": 3})
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(data), encoding="utf-8")
    stats = _build(params, "multicochrane", tmp_path / "mc")
    from datasets import load_dataset

    en = load_dataset(str(tmp_path / "mc"), "en", cache_dir=str(tmp_path / "cache"))
    held = set(en["test"]["doi"]) | set(en["validation"]["doi"])
    assert len(set(en["test"]["doi"])) == 3 and len(set(en["validation"]["doi"])) == 1
    assert "10.1002/14651858.CD000005" in set(en["test"]["doi"])
    # held-out splits hold the human alignments only, never the automatic ones
    assert set(en["test"]["method"]) == set(en["validation"]["method"]) == {"gold"}
    assert len(en["test"]) == 2 * 3
    # the other MC-CLEAN reviews are training data (gold rows), with the MC-NOISY reviews
    train_gold = {r["doi"] for r in en["train"] if r["method"] == "gold"}
    assert len(train_gold) == 2 and not (train_gold & held)
    assert "crf" in set(en["train"]["method"])
    assert stats["mc_clean_reviews"] == 6 and stats["gold_pairs"] == 12
    assert stats["read"] == stats["kept"] + stats["filtered"] + stats["rejected"]
    _meta, body = _card(tmp_path / "mc")
    assert "Test reviews: " in body and "MC-CLEAN (Joseph et al. 2023)" in body


def test_mc_clean_split_paper_sizes():
    """101 MC-CLEAN reviews -> 22 test, 5 validation, 74 train (the old code gave 96 test, 5
    validation, no training)."""
    import tempfile

    from medsimp.corpora.multicochrane import mc_clean_split

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "mc.json"
        path.write_text(json.dumps([{"doi": f"10.1002/14651858.CD{i:06d}"} for i in range(101)]))
        split = mc_clean_split(path, n_validation=5, seed=13)
    counts = {s: sum(v == s for v in split.values()) for s in ("train", "validation", "test")}
    assert counts == {"train": 74, "validation": 5, "test": 22}


def test_mc_human_without_gold_alignments_is_a_clear_error(params_file, tmp_path, capsys):
    data = yaml.safe_load(params_file.read_text(encoding="utf-8"))
    mc = tmp_path / "mc_human.json"
    mc.write_text(json.dumps([{"doi": "10.1002/14651858.CD000002"}]))
    data["build"]["multicochrane"].update({"mc_human": str(mc)})
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["--params", str(params), "build", "multicochrane", "--output", str(tmp_path / "mc")]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # the stage's announce line, then the error
    assert (
        len(err) == 2
        and err[1].startswith("medsimp build multicochrane: ")
        and "no gold alignments" in err[1]
    )


def test_seeded_split_says_it_is_not_mc_clean(built):
    _meta, body = _card(built["multicochrane"])
    assert "NOT MC-CLEAN: no gold alignments were given" in body


def test_mc_clean_reviews_are_found_in_any_layout(tmp_path):
    from medsimp.corpora.multicochrane import mc_clean_split

    path = tmp_path / "mc.json"
    path.write_text(
        json.dumps(
            {
                "en": {
                    "validation": [{"doi": "10.1/CD1.pub2", "gold": "x"}],
                    "test": {"10.1/CD2": {"pairs": []}},
                },
                "es": [{"doi": "https://doi.org/10.1/CD3"}, {"doi": "10.1/CD1"}],
            }
        )
    )
    assert mc_clean_split(path, n_validation=1, seed=13) == {  # keyed by review (CD number)
        "CD1": "validation",
        "CD2": "test",
        "CD3": "test",
    }


def test_medlane_builder_is_flagged_and_splits_a_single_eval_file(built, tmp_path):
    from datasets import load_dataset

    meta, body = _card(built["medlane"])
    assert meta["medsimp"]["mimic_derived"] is True
    assert "PhysioNet" in body and "Data Use Agreement" in body
    ds = load_dataset(str(built["medlane"]), "annotated", cache_dir=str(tmp_path))
    # the fixture has no validation.txt: its 3 eval records split 2 (validation_size) / 1
    assert (ds["validation"].num_rows, ds["test"].num_rows) == (2, 1)
    assert ds["test"][0]["reference_labels"] == [1, 3]
    cand = load_dataset(str(built["medlane"]), "mimic-candidates", cache_dir=str(tmp_path))
    assert cand["train"].num_rows == 5


def test_msd_groups_and_paired_test_documents(built, tmp_path):
    from datasets import load_dataset

    sentences = load_dataset(str(built["msd"]), "sentences", cache_dir=str(tmp_path))
    groups = load_dataset(str(built["msd"]), "groups", cache_dir=str(tmp_path))
    assert "test-1" in set(sentences["test"]["doc_id"]) and "test-1" in set(groups["test"]["doc_id"])
    for split in groups:  # a document's sentences and groups share a split
        assert set(groups[split]["doc_id"]) <= set(sentences[split]["doc_id"])
    row = next(r for r in groups["test"] if r["pcio"] == "test_pair")
    c = row["simple_concepts"][0]
    assert row["simple_text"][c["start"] : c["end"]].lower() == "hypertension"
    assert {r["label"] for r in sentences["train"]} == {0, 1}


def test_missing_input_is_a_clear_error(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump(
            {"build": {"msd": {"sentences": str(tmp_path / "nope"), "linked": str(tmp_path / "nope")}}}
        )
    )
    assert main(["--params", str(params), "build", "msd", "--output", str(tmp_path / "o")]) == 2
    assert "no parquet files" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_cover_splits_never_moves_a_fixed_key_but_counts_it():
    from medsimp.corpora.common import cover_splits

    split_of = {"a": "test", "b": "test", "c": "test"}
    out = cover_splits(split_of, {"en": {"a", "b", "c"}}, 13, fixed={"a", "b"})
    assert out["a"] == out["b"] == "test" and out["c"] == "train"


def test_cover_splits_gives_small_languages_train_then_test_then_validation():
    from medsimp.corpora.common import cover_splits, seeded_split

    en = {f"d{i}" for i in range(60)}
    base = seeded_split(en, 0.1, 0.1, 13)
    val, test = (sorted(d for d in en if base[d] == s) for s in ("validation", "test"))
    groups = {"en": en, "es": {val[0], test[0]}, "fr": {val[0], val[1], test[1]}}
    covered = cover_splits(base, groups, 13)
    assert {covered[d] for d in groups["es"]} == {"train", "test"}
    assert {covered[d] for d in groups["fr"]} == {"train", "validation", "test"}
    assert {covered[d] for d in en} == {"train", "validation", "test"}
    big = seeded_split({f"r{i}" for i in range(200)}, 0.1, 0.1, 13)
    assert cover_splits(big, {"en": set(big)}, 13) == big


def test_seeded_split_is_stable_when_keys_are_added():
    from medsimp.corpora.common import seeded_split

    before = seeded_split({f"10.1002/CD{i:06d}" for i in range(300)}, 0.1, 0.1, 13)
    after = seeded_split(set(before) | {"10.1002/CD999999"}, 0.1, 0.1, 13)
    assert {k: after[k] for k in before} == before
    shares = {s: sum(v == s for v in before.values()) / 300 for s in ("train", "validation", "test")}
    assert 0.7 < shares["train"] < 0.9 and 0.05 < shares["test"] < 0.15


def test_rebuilt_folder_never_loads_stale_cached_rows(params_file, tmp_path):
    from datasets import load_dataset

    data = yaml.safe_load(params_file.read_text(encoding="utf-8"))
    folder, cache = tmp_path / "medlane", str(tmp_path / "cache")
    sizes = []
    for validation_size in (2, 1):
        data["build"]["medlane"]["validation_size"] = validation_size
        params = tmp_path / f"params-{validation_size}.yaml"
        params.write_text(yaml.safe_dump(data), encoding="utf-8")
        _build(params, "medlane", folder)
        sizes.append(load_dataset(str(folder), "annotated", cache_dir=cache)["validation"].num_rows)
    assert sizes == [2, 1]


def test_a_streamed_split_writes_the_bytes_of_one_table(monkeypatch, tmp_path):
    """A split streamed in chunks that do not tile its row groups is written as the one table of
    all its rows would be: same bytes, same name, and the card's facts from the stream."""
    import io

    import pyarrow.parquet as pq

    from medsimp.corpora import writer
    from medsimp.corpora.common import StreamedSplit, chunked_tables, table_from_rows
    from medsimp.corpora.multicochrane import SCHEMA

    monkeypatch.setattr(writer, "ROW_GROUP_SIZE", 4)
    monkeypatch.setattr("medsimp.corpora.common.CHUNK_ROWS", 3)
    concept = {
        "cui": "C0004096",
        "term": "asthma",
        "start": 0,
        "end": 6,
        "similarity": 1.0,
        "semtypes": ["T047"],
    }
    rows = [
        {
            "pair_id": f"10.1/x:en:{i}",
            "doi": f"10.1/x{i % 4}",
            "language": ["en", "es"][i % 2],
            "complex_text": "Asthma is common." * (i % 3),
            "complex_ids": [f"s{i}", f"s{i + 1}"][: 1 + i % 2],
            "keep": None if i % 5 == 0 else bool(i % 2),
            "complex_concepts": [concept] * (i % 2),
            "overlap_r": i / 10,
        }
        for i in range(11)  # chunks of 3 rows, row groups of 4
    ]
    streamed = StreamedSplit(SCHEMA, lambda: chunked_tables(rows, SCHEMA))
    written = writer.write_split(streamed, tmp_path, "en/train", {})
    sink = io.BytesIO()
    pq.write_table(table_from_rows(rows, SCHEMA), sink, row_group_size=4, **writer.PARQUET_SETTINGS)
    assert (tmp_path / written.path).read_bytes() == sink.getvalue()
    assert (
        written.path.startswith("en/train-") and pq.ParquetFile(tmp_path / written.path).num_row_groups == 3
    )
    assert (written.rows, written.languages) == (11, frozenset({"en", "es"}))
    assert written.first_row["pair_id"] == "10.1/x:en:0"
    empty = writer.write_split(StreamedSplit(SCHEMA, lambda: iter(())), tmp_path, "en/test", {})
    assert (empty.rows, empty.path) == (0, None)
    assert sorted(p.name for p in (tmp_path / "en").iterdir()) == [Path(written.path).name]
    writer.write_split(StreamedSplit(SCHEMA, lambda: iter(())), tmp_path, "fr/test", {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["en"]  # no folder for a config without rows


def test_scratch_gives_rows_back_in_order_and_values_unchanged():
    from contextlib import ExitStack

    import pyarrow as pa

    from medsimp.corpora.scratch import LOOKUP_IDS, Scratch, number_key

    assert sorted(["10", "2", "x", "002", "1"], key=number_key) == ["x", "1", "2", "002", "10"]
    with ExitStack() as resources:
        scratch = Scratch(resources)
        folder = Path(scratch.db.execute("PRAGMA database_list").fetchone()[2]).parent
        value = {"r": 0.1 + 0.2, "nan": float("nan"), "text": "é\u2028\x00 ok", "ids": ["a"], "none": None}
        for doc, number, part in [("b", "2", 0), ("a", "10", 0), ("a", "9", 0), ("a", "9", 0), ("", "", 1)]:
            scratch.add_row(
                "en/train",
                {**value, "key": [doc, number, part]},
                doc=doc,
                number=number,
                item=f"{doc}:{number}",
                part=part,
                flag=number == "9",
            )
        scratch.add_row("es/train", value)
        got = list(scratch.rows("en/train"))
        assert [r["key"] for r in got] == [
            ["a", "9", 0],
            ["a", "9", 0],
            ["a", "10", 0],
            ["b", "2", 0],
            ["", "", 1],
        ]
        assert got[0]["r"] == 0.1 + 0.2 and got[0]["nan"] != got[0]["nan"] and got[0]["text"] == value["text"]
        assert len(list(scratch.rows("en/train", flagged_only=True))) == 2
        n = LOOKUP_IDS * 2 + 7
        scratch.add_texts(
            [pa.table({"sentence_id": [f"s{i}" for i in range(n)], "text": [f"t{i}" for i in range(n)]})]
        )
        assert scratch.texts(f"s{i}" for i in range(0, n + 5)) == {f"s{i}": f"t{i}" for i in range(n)}
    assert not folder.exists()  # the scratch folder goes with its owner


def test_multicochrane_rejects_a_pair_without_its_keys_and_leaves_no_scratch(
    params_file, tmp_path, monkeypatch
):
    """Pairs split over two part files, one without a doi: the pair is a dead letter (counts
    reconcile), the others come out in build order, and no scratch folder is left behind."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    data = yaml.safe_load(params_file.read_text(encoding="utf-8"))
    pairs = Path(data["build"]["multicochrane"]["pairs"])
    table = pa.concat_tables(pq.read_table(f) for f in sorted(pairs.glob("*.parquet")))
    first_id = table.column("pair_id")[0].as_py()
    doi = table.column("doi").to_pylist()
    doi[0] = None
    broken = table.set_column(table.schema.get_field_index("doi"), "doi", pa.array(doi, pa.string()))
    moved = tmp_path / "pairs"
    moved.mkdir()
    half = broken.num_rows // 2
    pq.write_table(broken.slice(half), moved / "part-00000.parquet")  # later reviews first
    pq.write_table(broken.slice(0, half), moved / "part-00001.parquet")
    data["build"]["multicochrane"]["pairs"] = str(moved)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(data), encoding="utf-8")
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))
    stats = _build(params, "multicochrane", tmp_path / "mc")
    assert stats["read"] == table.num_rows
    assert stats["read"] == stats["kept"] + stats["filtered"] + stats["rejected"]
    dead = [
        json.loads(line)
        for line in (tmp_path / "mc" / "dead_letter" / "part-00000.jsonl").read_text().splitlines()
    ]
    assert {"locator": first_id, "reason": "missing_field", "detail": "doi"}.items() <= next(
        d for d in dead if d["reason"] == "missing_field"
    ).items()
    train = pq.read_table(next((tmp_path / "mc" / "en").glob("train-*.parquet")))
    keys = [
        (d, int(p.rsplit(":", 1)[1]))
        for d, p in zip(train.column("doi").to_pylist(), train.column("pair_id").to_pylist())
    ]
    assert keys == sorted(keys)
    assert list(scratch_root.iterdir()) == []


def test_multicochrane_leaves_no_scratch_on_errors_and_sweeps_a_killed_builds(
    params_file, tmp_path, monkeypatch, capsys
):
    """The scratch folder goes when the build fails after making it (a missing input), when the
    write fails, and a killed build's folder (its process gone) is swept by the next build; a
    corpus whose every pair is rejected is a one-line error, not an empty dataset."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from medsimp.corpora import writer

    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))
    killed = scratch_root / "medsimp-build-999999999-abcd1234"  # a build whose process is gone
    killed.mkdir()
    (killed / "scratch.sqlite").write_bytes(b"")
    kept = {
        "medsimp-build-1-abcd1234": "scratch.sqlite",  # pid 1 runs: not ours to judge
        "medsimp-build-2024-01-05": "my-notes.txt",  # a user's folder of that name
        "medsimp-build-999999999-abcd5678": "my-notes.txt",  # holds more than a scratch database
        "medsimp-build-99999999999-abcd1234": "scratch.sqlite",  # no process has that number
    }
    for name, file in kept.items():
        (scratch_root / name).mkdir()
        (scratch_root / name / file).write_bytes(b"")
    data = yaml.safe_load(params_file.read_text(encoding="utf-8"))
    section = data["build"]["multicochrane"]

    def run(name: str, **changes) -> int:
        params = tmp_path / f"{name}.yaml"
        params.write_text(
            yaml.safe_dump({"build": {"multicochrane": {**section, **changes}}}), encoding="utf-8"
        )
        return main(["--params", str(params), "build", "multicochrane", "--output", str(tmp_path / name)])

    assert run("missing", linked=str(tmp_path / "nowhere")) == 2
    assert "no parquet files at" in capsys.readouterr().err
    assert sorted(p.name for p in scratch_root.iterdir()) == sorted(kept)

    import sqlite3

    from medsimp.corpora.scratch import Scratch

    def full(*args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as m:  # the index is built (a sort on disk) while writing
        m.setattr(Scratch, "rows", full)
        assert run("full") == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.endswith("database or disk is full (set TMPDIR to a folder with room)"), last
    assert sorted(p.name for p in scratch_root.iterdir()) == sorted(kept)

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(writer, "write_split", fail)
        assert run("nospace") != 0
    assert sorted(p.name for p in scratch_root.iterdir()) == sorted(kept)
    assert not (tmp_path / "nospace").exists()

    pairs = tmp_path / "no-doi"
    pairs.mkdir()
    table = pa.concat_tables(pq.read_table(f) for f in sorted(Path(section["pairs"]).glob("*.parquet")))
    no_doi = table.set_column(
        table.schema.get_field_index("doi"), "doi", pa.nulls(table.num_rows, pa.string())
    )
    pq.write_table(no_doi, pairs / "part-00000.parquet")
    assert run("rejected", pairs=str(pairs)) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        f"no usable pair ({table.num_rows} read, {table.num_rows} rejected: {table.num_rows} missing_field)"
        in last
    )
    assert sorted(p.name for p in scratch_root.iterdir()) == sorted(kept)


# --- issue 53 §1 / issue 54: standard splits, one review identity, no leakage ---

# the fixture's reviews respelled as benchmark reviews: CD000001 as MC-CLEAN test review
# CD000255 (lower case), CD000002 as the calibration's dev review CD003300 (a version suffix)
BENCHMARK = {
    "10.1002/14651858.CD000001": "10.1002/14651858.cd000255",
    "10.1002/14651858.CD000002": "10.1002/14651858.Cd003300.PUB2",
}


def _params_with(tmp_path: Path, rename=None, input_split=None, **options) -> Path:
    root = tmp_path / "up"
    section = {**upstream.write_cochrane(root, rename, input_split), "split": SPLIT, **options}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"build": {"multicochrane": section}}), encoding="utf-8")
    return params


def _review_splits(folder: Path, tmp_path: Path) -> dict[str, set[str]]:
    from datasets import load_dataset

    out: dict[str, set[str]] = {}
    for lang in ("en", "es", "fr"):
        ds = load_dataset(str(folder), lang, cache_dir=str(tmp_path / "cache"))
        for split in ds:
            for doi in ds[split]["doi"]:
                out.setdefault(doi, set()).add(split)
    return out


def test_benchmark_reviews_spelled_another_way_land_in_test_and_validation(tmp_path):
    """The 22 MC-CLEAN test reviews go to test and the calibration's dev reviews to validation
    in every language, matched by `review_key` (case, version): the seeded hash put them anywhere."""
    params = _params_with(tmp_path, BENCHMARK)
    _build(params, "multicochrane", tmp_path / "mc")
    splits = _review_splits(tmp_path / "mc", tmp_path)
    assert splits["10.1002/14651858.cd000255"] == {"test"}
    assert splits["10.1002/14651858.Cd003300.PUB2"] == {"validation"}
    # the placed reviews count for a small corpus's cover of every split, and never move
    stats = json.loads((tmp_path / "mc" / "stats.json").read_text(encoding="utf-8"))
    assert all(stats["splits"][lang]["train"] > 0 for lang in ("en", "es", "fr"))
    _meta, body = _card(tmp_path / "mc")
    assert "test: 1 from MC-CLEAN's released English test reviews" in body
    assert "validation: 1 from the dev reviews the aligner's calibration is fitted on" in body


def test_the_inputs_own_split_comes_before_the_hash_and_the_card_counts_each_source(tmp_path):
    """The input's own split (the sentence table's `split` column: Devaraj's train/val/test
    files, a canonical `split` field) comes before the hash; the card says per split how many
    reviews came from each source."""
    given = {
        "10.1002/14651858.CD000003": "validation",
        "10.1002/14651858.CD000004": "test",
        "10.1002/14651858.CD000005": "train",
    }
    params = _params_with(tmp_path, BENCHMARK, {**given, "10.1002/14651858.cd000255": "test"})
    _build(params, "multicochrane", tmp_path / "mc")
    splits = _review_splits(tmp_path / "mc", tmp_path)
    assert splits["10.1002/14651858.CD000003"] == {"validation"}
    assert splits["10.1002/14651858.CD000004"] == {"test"}
    assert splits["10.1002/14651858.CD000005"] == {"train"}
    _meta, body = _card(tmp_path / "mc")
    line = next(x for x in body.splitlines() if x.startswith("- Reviews per split"))
    assert "train: 1 from the input's own split" in line
    assert "test: 1 from MC-CLEAN's released English test reviews, 1 from the input's own split" in line


def test_a_planted_leak_is_refused_in_one_line_naming_the_review(tmp_path, capsys):
    """An input split putting an MC-CLEAN test review in train, or a review in two of the input's
    files, is refused before any output is written; the named override builds it, benchmark
    first, and the card records it."""
    leak = {"10.1002/14651858.cd000255": "train", "10.1002/14651858.CD000003": "train/test"}
    params = _params_with(tmp_path, BENCHMARK, leak)
    out = tmp_path / "mc"
    assert main(["--params", str(params), "build", "multicochrane", "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "leakage refused" in err[1]
    assert "2 review(s) in two splits or a benchmark test review outside test" in err[1]
    assert "CD000003 (input test, input train)" in err[1]
    assert "CD000255 (mc_clean_test test, input train)" in err[1] and "allow_split_conflicts" in err[1]
    assert not out.exists()
    params = _params_with(tmp_path, BENCHMARK, leak, allow_split_conflicts=True)
    _build(params, "multicochrane", out)
    assert _review_splits(out, tmp_path)["10.1002/14651858.cd000255"] == {"test"}
    _meta, body = _card(out)
    assert "Override: build.multicochrane.allow_split_conflicts is on; 2 review(s)" in body
    assert "CD000255 (mc_clean_test test, input train)" in body


def test_split_conflicts_are_refused_by_default_in_params():
    from medsimp.config import load_params

    assert load_params(REPO / "params.yaml", []).build.multicochrane.allow_split_conflicts is False


def test_check_leakage_names_a_review_in_two_splits_and_a_test_review_outside_test():
    from medsimp.corpora.common import BuildError
    from medsimp.corpora.multicochrane import check_leakage

    with pytest.raises(BuildError, match=r"two splits: CD000007.*outside test: CD000255"):
        check_leakage(
            {
                "10.1002/14651858.CD000007": "train",
                "https://doi.org/10.1002/14651858.cd000007": "test",
                "10.1002/14651858.CD000255.pub3": "validation",
            }
        )


def test_mc_clean_gold_training_pairs_go_through_the_overlap_filter(tmp_path):
    """Joseph et al. filter the MC-CLEAN training pairs too (Table 1: 1,136 -> 329 English):
    gold rows carry r and keep; `en-filtered/train` holds those that pass, `en/train` all. The
    threshold is the one the filter stage recorded beside the pairs, else the params'."""
    from datasets import load_dataset

    from alignment.overlap import overlap_r

    data = yaml.safe_load(_params_with(tmp_path).read_text(encoding="utf-8"))
    mc = tmp_path / "mc_human.json"
    doi = "10.1002/14651858.CD000002"
    mc.write_text(
        json.dumps(
            [
                {
                    "doi": doi,
                    "abstract": ["Aspirin reduced the risk of stroke in adults.", "Headache was common."],
                    "pls": ["Aspirin reduced stroke risk in adults.", "Doctors should talk to families."],
                    "alignments": [[0, 0], [1, 1]],
                },
                *_mc_human(
                    ["10.1002/14651858.CD900000", "10.1002/14651858.CD900001"],
                    {"10.1002/14651858.CD900000": "validation", "10.1002/14651858.CD900001": "test"},
                ),
            ]
        )
    )
    data["build"]["multicochrane"].update({"mc_human": str(mc), "mc_clean_validation": 1, "mc_clean_test": 1})
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(data), encoding="utf-8")
    _build(params, "multicochrane", tmp_path / "mc")
    en = load_dataset(str(tmp_path / "mc"), "en", cache_dir=str(tmp_path / "cache"))
    filtered = load_dataset(str(tmp_path / "mc"), "en-filtered", cache_dir=str(tmp_path / "cache"))
    gold = [r for r in en["train"] if r["method"] == "gold" and r["doi"] == doi]
    assert [r["keep"] for r in gold] == [True, False]
    assert gold[1]["overlap_r"] == overlap_r("Headache was common.", "Doctors should talk to families.")
    kept = {r["pair_id"] for r in filtered["train"] if r["method"] == "gold"}
    assert gold[0]["pair_id"] in kept and gold[1]["pair_id"] not in kept
    _meta, body = _card(tmp_path / "mc")
    assert "MC-CLEAN gold pairs go through the overlap filter as the paper's do (r > 0.5" in body
    assert "from the params' filter section): 5 of 6 English gold pairs pass" in body
    # what the filter stage recorded wins: r = 1.0 does not exceed 1.0
    stats = Path(data["build"]["multicochrane"]["pairs"]).parent / "stats.json"
    stats.write_text(json.dumps({"threshold": 1.0, "comparison": "gt", "read": 1}), encoding="utf-8")
    _build(params, "multicochrane", tmp_path / "mc2")
    en = load_dataset(str(tmp_path / "mc2"), "en", cache_dir=str(tmp_path / "cache2"))
    assert [r["keep"] for r in en["train"] if r["method"] == "gold" and r["doi"] == doi] == [False, False]
    _meta, body = _card(tmp_path / "mc2")
    assert "(r > 1.0, from stats.json of the filter stage)" in body


def test_the_card_gives_the_share_of_identical_and_near_copy_pairs_per_config_and_split(tmp_path):
    """Issue 53: 113 identical pairs (6.7% of en-filtered) and 181 near copies went unreported.
    The card names the definition and gives each config's and split's share; stats.json counts
    them. The numbers equal `copy_kind` over the rows the parquet files hold."""
    import pyarrow.parquet as pq

    from medsimp.text.copies import copy_kind

    root = tmp_path / "up"
    paths = upstream.write_cochrane(root)
    for part in sorted(Path(paths["pairs"]).glob("*.parquet")):  # make the first English pair a copy
        rows = pq.read_table(part).to_pylist()
        en = next((r for r in rows if r["language"] == "en"), None)
        if en is not None:
            en["simple_text"] = en["complex_text"]
            pq.write_table(pa_table(rows, part), part)
            break
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump({"build": {"multicochrane": {**paths, "split": SPLIT}}}), encoding="utf-8"
    )
    out = tmp_path / "mc"
    assert main(["--params", str(params), "build", "multicochrane", "--output", str(out)]) == 0
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "*identical* = the same words in the same order" in card and "at least 0.9 of itself" in card
    stats = json.loads((out / "stats.json").read_text())
    identical = 0
    for config in ("en", "en-filtered"):
        parts = []
        for split in ("train", "validation", "test"):
            rows = [
                r
                for f in sorted((out / config).glob(f"{split}-*.parquet"))
                for r in pq.read_table(f).to_pylist()
            ]
            if not rows:
                continue
            kinds = [copy_kind(r["complex_text"], r["simple_text"], 0.9) for r in rows]
            same, near = kinds.count("identical"), kinds.count("near_copy")
            identical += same if config == "en" else 0
            parts.append(
                f"{split} {same} identical ({100 * same / len(rows):.1f}%) and {near} near copies "
                f"({100 * near / len(rows):.1f}%) of {len(rows)}"
            )
        assert f"Copies in {config}: {'; '.join(parts)}." in card
    assert identical >= 1 and stats["identical_pairs"] >= identical


def pa_table(rows, like):
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa.Table.from_pylist(rows, schema=pq.read_schema(like))
