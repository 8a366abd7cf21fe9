"""`medsimp build radiology` on a tiny synthetic fixture: deterministic, loads offline, MIMIC-guarded."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml

from medsimp.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "builders" / "radiology"
SPLIT = {"seed": 13, "validation": 0.2, "test": 0.2}


def _params(tmp: Path, sentences: Path) -> Path:
    path = tmp / "params.yaml"
    path.write_text(
        yaml.safe_dump({"build": {"radiology": {"sentences": str(sentences), "split": SPLIT}}}),
        encoding="utf-8",
    )
    return path


def _build(params: Path, out: Path) -> dict:
    metrics = out.parent / f"{out.name}-metrics.json"
    assert (
        main(["--params", str(params), "build", "radiology", "--output", str(out), "--metrics", str(metrics)])
        == 0
    )
    return json.loads((out / "stats.json").read_text(encoding="utf-8"))  # metrics: the headline


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _card(folder: Path) -> dict:
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8")[4:].split("\n---\n")[0])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("radiology")
    return tmp / "radiology", _build(_params(tmp, FIXTURE), tmp / "radiology")


def test_build_twice_gives_identical_files(built, tmp_path):
    folder, stats = built
    again = _build(_params(tmp_path, FIXTURE), tmp_path / "again")
    assert _digest(tmp_path / "again") == _digest(folder) and again == stats
    assert stats["read"] == 8 == stats["kept"] + stats["filtered"] + stats["rejected"]
    assert stats["rejected"] == 1 and stats["notes"] == 5 and stats["duplicates_merged"] == 3
    dead = json.loads((folder / "dead_letter" / "part-00000.jsonl").read_text().splitlines()[0])
    assert dead == {
        "source": "radiology",
        "locator": "synthetic.csv@500",
        "reason": "missing_field",
        "detail": "text",
    }


def test_findings_loads_offline_split_by_note(built, tmp_path):
    from datasets import load_dataset

    folder, stats = built
    meta = _card(folder)
    assert meta["medsimp"]["builder"] == "radiology" and meta["medsimp"]["mimic_derived"] is True
    assert "PhysioNet Credentialed Health Data" in (folder / "README.md").read_text()
    ds = load_dataset(str(folder), "findings", cache_dir=str(tmp_path))
    assert set(ds) == {"train", "validation", "test"}
    notes = [set(ds[s]["doc_id"]) for s in ds]
    assert all(notes) and not (notes[0] & notes[1] or notes[0] & notes[2] or notes[1] & notes[2])
    assert {s: ds[s].num_rows for s in ds} == stats["splits"]["findings"]
    rows = [r for s in ds for r in ds[s]]
    first = next(r for r in rows if r["sentence_id"] == "radiology:1:complex:en:0")
    assert first["n_duplicates"] == 2 and first["duplicate_doc_ids"] == ["6", "7"]
    assert first["finding_words"] == ["effusion"] and first["body_parts"] == ["chest"]
    assert sum(r["negated"] for r in rows) == 1


def test_small_input_keeps_only_non_empty_splits(tmp_path):
    table = pq.read_table(FIXTURE)
    small = tmp_path / "small"
    small.mkdir()
    pq.write_table(
        table.filter(pc.is_in(table["doc_id"], value_set=pa.array(["1", "2"]))), small / "part-00000.parquet"
    )
    stats = _build(_params(tmp_path, small), tmp_path / "out")
    counts = stats["splits"]["findings"]  # note 1 has two sentences, note 2 one
    assert counts["validation"] == 0 and sorted([counts["train"], counts["test"]]) == [1, 2]
    configs = _card(tmp_path / "out")["configs"]
    assert [f["split"] for f in configs[0]["data_files"]] == ["train", "test"]


@pytest.mark.parametrize("flags", [(), ("--private",)])
def test_publish_refuses_radiology_whatever_the_flags(built, flags, tmp_path, monkeypatch, capsys):
    folder, _ = built
    target = tmp_path / "radiology"
    shutil.copytree(folder, target)
    with socket.socket() as hub:  # a hub endpoint that records whether anyone connected
        hub.bind(("127.0.0.1", 0))
        hub.listen()
        hub.setblocking(False)
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{hub.getsockname()[1]}")
        monkeypatch.setenv("HF_TOKEN", "hf_fake")
        assert main(["publish", str(target), "--repo-id", "me/radiology", *flags]) == 3
        with pytest.raises(BlockingIOError):
            hub.accept()
    err = capsys.readouterr().err
    assert "derives from MIMIC" in err and "never published" in err
