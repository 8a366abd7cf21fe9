"""The shared spine: params overrides, atomic outputs, reconciliation, cache, deterministic writes."""

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsimp.atomic import atomic_dir
from medsimp.config import ParamsError, apply_overrides, load_params, params_hash
from medsimp.doccache import DocCache, content_key
from medsimp.params_schema import Beam
from medsimp.stats import CountsMismatch, check_reconciles


def test_overrides_parse_yaml_values_and_nest():
    params = {"notes": {"min_tokens": 10, "categories": ["Discharge summary"]}}
    out = apply_overrides(params, ["notes.min_tokens=12", "align.method=crf", "notes.flag=true"])
    assert out["notes"]["min_tokens"] == 12
    assert out["notes"]["flag"] is True
    assert out["align"] == {"method": "crf"}
    assert params["notes"]["min_tokens"] == 10  # the original is untouched
    with pytest.raises(ParamsError):
        apply_overrides(params, ["no-equals-sign"])


def test_params_hash_is_order_independent(tmp_path):
    a = tmp_path / "a.yaml"
    a.write_text("cochrane: {num_shards: 1}\nfilter: {threshold: 0.5, num_shards: 1}\n")
    b = tmp_path / "b.yaml"
    b.write_text("filter: {num_shards: 1, threshold: 0.5}\ncochrane: {num_shards: 1}\n")
    assert params_hash(load_params(a)) == params_hash(load_params(b))
    assert params_hash(load_params(a, ["cochrane.num_shards=2"])) != params_hash(load_params(a))


def test_atomic_dir_keeps_previous_output_on_failure(tmp_path):
    final = tmp_path / "out"
    with atomic_dir(final) as tmp:
        (tmp / "a.txt").write_text("first")
    with pytest.raises(RuntimeError):
        with atomic_dir(final) as tmp:
            (tmp / "a.txt").write_text("half")
            raise RuntimeError("killed")
    assert (final / "a.txt").read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_check_reconciles():
    check_reconciles({"read": 5, "kept": 3, "rejected": 2}, "read", ["kept", "rejected"])
    with pytest.raises(CountsMismatch, match="read=5"):
        check_reconciles({"read": 5, "kept": 3}, "read", ["kept", "rejected"])


def test_doccache_roundtrip_and_counts(tmp_path):
    cache = DocCache(tmp_path, "embed/test")
    key = content_key("some text", "model-a")
    assert key != content_key("some text", "model-b")
    assert cache.get(key) is None
    cache.put(key, {"v": [1, 2]})
    assert DocCache(tmp_path, "embed/test").get(key) == {"v": [1, 2]}
    assert (cache.hits, cache.misses) == (0, 1)
    disabled = DocCache(None, "x")
    disabled.put(key, 1)
    assert disabled.get(key) is None


def _run_write(out_dir: Path) -> dict[str, str]:
    import apache_beam as beam

    from pipelines.jobs.beam_io import pipeline_options
    from pipelines.jobs.sorted_io import WriteSorted, fill_empty_shards

    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    rows = [{"k": f"doc{i % 7}", "v": i} for i in range(60)]
    with beam.Pipeline(options=pipeline_options(Beam(num_workers=1))) as p:
        _ = (
            p
            | beam.Create(rows)
            | beam.Reshuffle()
            | WriteSorted(
                str(out_dir),
                prefix="part",
                num_shards=4,
                shard_key=lambda r: r["k"],
                sort_key=lambda r: (r["k"], r["v"]),
                schema=schema,
            )
        )
    fill_empty_shards(str(out_dir), "part", 4, schema)
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out_dir.iterdir())}


def test_write_sorted_is_deterministic_and_complete(tmp_path):
    first = _run_write(tmp_path / "a")
    second = _run_write(tmp_path / "b")
    assert first == second
    assert len(first) == 4
    table = pq.read_table(tmp_path / "a")
    assert sorted(table.column("v").to_pylist()) == list(range(60))


def test_cli_help_lists_stages(capsys):
    from medsimp.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    assert "COMMAND" in capsys.readouterr().out
