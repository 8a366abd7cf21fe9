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
    from medsimp.corpora.writer import code_hash

    assert meta["medsimp"]["code_sha256"] == code_hash() and "code_sha256" in body
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
    assert "Test DOIs: " in body and "MC-CLEAN (Joseph et al. 2023)" in body


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
    assert mc_clean_split(path, n_validation=1, seed=13) == {
        "10.1/CD1": "validation",
        "10.1/CD2": "test",
        "10.1/CD3": "test",
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


def test_row_chunks_give_the_parquet_bytes_of_one_table(monkeypatch):
    """A builder holds rows as Arrow chunks; the table it writes is the one from all rows."""
    import io

    import pyarrow.parquet as pq

    from medsimp.corpora import common
    from medsimp.corpora.multicochrane import SCHEMA
    from medsimp.corpora.writer import PARQUET_SETTINGS

    monkeypatch.setattr(common, "CHUNK_ROWS", 3)
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
            "language": "en",
            "complex_text": "Asthma is common." * (i % 3),
            "complex_ids": [f"s{i}", f"s{i + 1}"][: 1 + i % 2],
            "keep": None if i % 5 == 0 else bool(i % 2),
            "complex_concepts": [concept] * (i % 2),
            "overlap_r": i / 10,
        }
        for i in range(11)  # three full chunks and a partial one
    ]
    chunks = common.RowChunks(SCHEMA)
    for row in rows:
        chunks.append(row)
    assert len(chunks) == 11 and len(chunks.chunks) == 3

    def parquet(table):
        sink = io.BytesIO()
        pq.write_table(table, sink, **PARQUET_SETTINGS)
        return sink.getvalue()

    assert parquet(chunks.table()) == parquet(common.table_from_rows(rows, SCHEMA))
