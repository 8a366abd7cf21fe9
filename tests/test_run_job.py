"""A Beam job is one composite and one declaration (issue 56 section 3): `run_job` runs the
composite a `JobSpec` declares and owns the rest (stamped tables, the writers, stats.json
reconciled with the counters and the rows written, the summary), so a new job is its
composite, its tables and a few lines of `run()`."""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsimp.params_schema import Beam
from medsimp.stats import CountsMismatch
from pipelines.jobs.common import Counter
from pipelines.jobs.runtime import JobSpec, Table, dead_letter_table, run_job
from pipelines.sources.files import parquet_lineage

BEAM = Beam(running_mode="in_memory")
ROWS = pa.schema([("doc_id", pa.string()), ("n", pa.int64())])


class _KeepEvenFn(beam.DoFn):
    def __init__(self, lie: bool = False):
        self.lie = lie

    def setup(self):
        self.count = Counter("toy")

    def process(self, n):
        self.count.inc("read", 2 if self.lie else 1)
        if n % 2:
            self.count.inc("rejected")
            self.count.inc("rejected.odd")
            yield beam.pvalue.TaggedOutput(
                "dead", {"source": "toy", "locator": f"x:{n}", "reason": "odd", "detail": ""}
            )
            return
        self.count.inc("kept")
        yield {"doc_id": f"d{n}", "n": n}


class _KeepEven(beam.PTransform):
    """Numbers -> 'rows' (the even ones) and 'dead' (the odd ones): a job's whole DAG."""

    def __init__(self, numbers: list[int], lie: bool = False):
        super().__init__()
        self.numbers, self.lie = numbers, lie

    def expand(self, pbegin):
        out = (
            pbegin
            | "Numbers" >> beam.Create(self.numbers)
            | "Keep" >> beam.ParDo(_KeepEvenFn(self.lie)).with_outputs("dead", main="rows")
        )
        return {"rows": out.rows, "dead": out.dead}


TABLES = {
    "rows": Table("rows", ROWS, lambda r: r["doc_id"], lambda r: r["n"], counter="kept"),
    "dead": dead_letter_table(),
}


def _rows(folder: Path) -> list[dict]:
    return [row for part in sorted(folder.glob("part-*.parquet")) for row in pq.read_table(part).to_pylist()]


def test_a_job_is_a_composite_and_a_declaration(tmp_path, capsys):
    after: list[str] = []
    spec = JobSpec(
        "toy",
        TABLES,
        ("cochrane",),
        num_shards=2,
        zero=("filtered",),
        extra={"threshold": 0.5},
        notes=lambda stats: [f"{stats['kept']} even numbers kept"],
        after_run=after.append,
    )
    stats = run_job(spec, _KeepEven([1, 2, 3, 4, 6]), str(tmp_path), BEAM, [], str(tmp_path / "m.json"))
    assert stats == {
        "filtered": 0,
        "kept": 3,
        "read": 5,
        "rejected": 2,
        "rejected_by": {"odd": 2},
        "threshold": 0.5,
    }
    assert json.loads((tmp_path / "stats.json").read_text()) == stats
    assert json.loads((tmp_path / "m.json").read_text()) == {
        "filtered": 0,
        "kept": 3,
        "read": 5,
        "rejected": 2,
    }
    assert sorted(p.name for p in (tmp_path / "rows").iterdir()) == [
        "part-00000-of-00002.parquet",
        "part-00001-of-00002.parquet",
    ]
    assert sorted(r["n"] for r in _rows(tmp_path / "rows")) == [2, 4, 6]
    assert parquet_lineage(str(tmp_path / "rows")) == ("cochrane",)  # stamped with the spec's lineage
    assert len((tmp_path / "dead_letter" / "part-00000-of-00001.jsonl").read_text().splitlines()) == 2
    assert after == [str(tmp_path)]
    err = capsys.readouterr().err
    assert "medsimp toy" in err and "3 even numbers kept" in err


def test_counters_that_do_not_reconcile_publish_no_stats(tmp_path):
    spec = JobSpec("toy", TABLES, ("cochrane",))
    with pytest.raises(CountsMismatch, match="read=6 but kept=1"):  # the DoFn counts each read twice
        run_job(spec, _KeepEven([1, 2, 3], lie=True), str(tmp_path), BEAM, [], None)
    assert not (tmp_path / "stats.json").exists()


def test_a_table_without_keys_is_the_composites_own_and_gets_one_empty_part(tmp_path):
    """The notes' sentences: the composite writes the files, `run_job` attaches no writer and
    leaves one empty part with the stamped schema when the job wrote none."""
    tables = {"rows": Table("rows", ROWS, counter="kept"), "dead": dead_letter_table()}
    spec = JobSpec("toy", tables, ("msd",))
    stats = run_job(spec, _KeepEven([1]), str(tmp_path), BEAM, [], None)
    assert stats["kept"] == 0 and stats["rejected"] == 1
    assert [p.name for p in (tmp_path / "rows").iterdir()] == ["part-00000-of-00001.parquet"]
    empty = pq.read_table(tmp_path / "rows" / "part-00000-of-00001.parquet")
    assert empty.num_rows == 0 and parquet_lineage(str(tmp_path / "rows")) == ("msd",)
