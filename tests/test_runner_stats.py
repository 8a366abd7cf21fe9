"""stats.json does not depend on the runner (issue 36 item 3): counters are read as committed
values; a runner that gives none (no metrics, or attempted values only, which a retried bundle
counts twice) gets stats counted from what was written, which agree with the counters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apache_beam.metrics.execution import MetricKey, MetricResult
from apache_beam.metrics.metricbase import MetricName

from medsimp.params_schema import Beam, Cochrane
from pipelines.jobs import beam_io, cochrane
from pipelines.jobs.runtime import JobSpec, Table, dead_letter_table, finish

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # one cochrane job


class _Results:
    """A finished job's result as a runner reports it: `metrics()` answers with these counters,
    or raises NotImplementedError like a runner without metrics (Beam's Dask runner)."""

    def __init__(self, counters: list[MetricResult] | None):
        self._counters = counters

    def metrics(self):
        if self._counters is None:
            raise NotImplementedError("this runner has no metrics")
        counters = self._counters

        class _Query:
            def query(self, _filter=None):
                return {"counters": counters}

        return _Query()


def _counter(name: str, committed: int | None, attempted: int | None) -> MetricResult:
    return MetricResult(MetricKey("step", MetricName("cochrane", name)), committed, attempted)


def test_counters_are_committed_values_or_none():
    both = _Results([_counter("read", 3, 5)])  # a retried bundle: attempted counts it twice
    assert beam_io.counters(both, "cochrane") == {"read": 3}
    assert beam_io.counters(_Results([_counter("read", None, 5)]), "cochrane") is None
    assert beam_io.counters(_Results(None), "cochrane") is None


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("cochrane")
    stats = cochrane.run(
        str(ROOT / "data/sample/cochrane.jsonl"),
        str(out),
        Cochrane(),
        Beam(running_mode="in_memory"),
        [],
        None,
    )
    return out, stats


def _spec() -> JobSpec:
    from medsimp.schemas import COCHRANE_SENTENCES

    tables = {
        "sentences": Table(
            "sentences", COCHRANE_SENTENCES, lambda r: r["doc_id"], lambda r: r, counter="sentences"
        ),
        "dead": dead_letter_table(),
    }
    return JobSpec("cochrane", tables, ("cochrane",), num_shards=2)


def _copy(job, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(job[0], tmp_path / "out"))


def test_without_committed_counters_stats_count_the_rows_written(job, tmp_path):
    _, committed = job
    out = _copy(job, tmp_path)
    stats = finish(_Results(None), _spec(), str(out), None)
    assert stats["counted_from"] == "outputs"
    assert stats["sentences"] == committed["sentences"] == 273
    assert stats["rejected"] == committed["rejected"] == 5
    assert stats["rejected_by"] == committed["rejected_by"]
    assert json.loads((out / "stats.json").read_text())["counted_from"] == "outputs"


def test_committed_counters_that_the_outputs_contradict_fail_the_job(job, tmp_path):
    from medsimp.errors import StageFailed

    _, committed = job
    out = _copy(job, tmp_path)
    counted = [_counter(k, v, None) for k, v in committed.items() if isinstance(v, int)]
    counted = [c if c.key.metric.name != "sentences" else _counter("sentences", 274, None) for c in counted]
    with pytest.raises(StageFailed, match="273 rows written to sentences but the job counted 274"):
        finish(_Results(counted), _spec(), str(out), None)


def test_threads_sharing_a_worker_split_the_same_sentences(job, tmp_path):
    """Beam's multi_threading mode (and an SDK harness that runs bundles in threads): the
    sentence splitter is per thread, so two threads no longer cut each other's sentences
    (the sample lost 30-43 of its 273 sentences before)."""
    out, _ = job
    threaded = tmp_path / "threads"
    stats = cochrane.run(
        str(ROOT / "data/sample/cochrane.jsonl"),
        str(threaded),
        Cochrane(),
        Beam(running_mode="multi_threading", num_workers=2),
        [],
        None,
    )
    assert stats["sentences"] == 273
    for part in sorted((out / "sentences").glob("part-*.parquet")):
        assert (threaded / "sentences" / part.name).read_bytes() == part.read_bytes()
