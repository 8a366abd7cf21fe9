"""The refresh plan's cost model (`medsimp.refresh.plan`): CPU = a + b x work, fitted on a
stage's runs here; one run is scaled up or bounds a smaller one. The whole dry run against the
runs that follow is `tests/test_refresh_dvc.py::test_the_dry_run_forecasts_each_stage_s_cpu_within_2x_of_the_run_that_follows`."""

from __future__ import annotations

import json

import pytest

from medsimp.refresh.plan import cpu_for, fit
from medsimp.stats import HISTORY_RUNS, run_history, write_metrics


def test_the_fit_recovers_start_up_and_per_document_cost():
    a, b = fit([(0, 5.0), (10, 7.0), (20, 9.0)])
    assert (a, b) == pytest.approx((5.0, 0.2))
    assert fit([(3, 1.0), (3, 2.0)]) is None  # one work value: nothing to fit
    assert fit([(1, 4.0), (2, 3.0)]) == (3.5, 0.0)  # cheaper with more work: the mean, no slope
    a, b = fit([(10, 1.0), (20, 4.0)])  # a line below 0 at no work: through the origin
    assert a == 0 and b == pytest.approx(0.18)


def test_one_run_is_scaled_up_or_bounds_a_smaller_run():
    history = [{"work": 10, "cpu_seconds": 20.0}]
    assert cpu_for(history, 15)[0] == 30.0 and cpu_for(history, 15)[2] is False
    cpu, basis, bound = cpu_for(history, 2)
    assert (cpu, bound) == (20.0, True) and "one run gives no start-up cost" in basis
    assert cpu_for([], 5) == (None, "no record of an earlier run here", False)
    cpu, basis, bound = cpu_for([*history, {"work": 0, "cpu_seconds": 6.0}], 5)
    assert cpu == pytest.approx(13.0) and basis.startswith("fit of 2 runs here") and not bound


def test_a_run_record_keeps_the_last_runs_and_starts_afresh_from_a_foreign_file(tmp_path):
    path = tmp_path / "metrics.json"
    for n in range(HISTORY_RUNS + 2):
        write_metrics(path, {"read": n, "cache_hits": 1, "cache_misses": n}, ["read"])
    history = json.loads((tmp_path / "metrics.json.run.json").read_text())["history"]
    assert [p["work"] for p in history] == list(range(2, HISTORY_RUNS + 2))  # misses: the work
    assert all(p["documents"] == p["work"] for p in history)
    (tmp_path / "other.json.run.json").symlink_to(tmp_path / "metrics.json.run.json")
    assert run_history(tmp_path / "other.json.run.json", {"documents": 3}) == [
        {"cpu_seconds": None, "documents": 3, "work": 3}
    ]


def test_odd_run_records_give_no_figure_rather_than_a_wrong_one():
    """Review of issue 55's plan: a run that computed nothing bounds nothing; figures that are not
    finite, negative or bools are not measurements; a portable run (its record sees the launcher's
    CPU only) is not fitted with local ones."""
    assert cpu_for([{"work": 0, "cpu_seconds": 2.0}], 10_000) == (
        None,
        "no run here computed a document: no cost per document to go on",
        False,
    )
    assert cpu_for([{"work": 0, "cpu_seconds": 2.0}], 0)[0] == 2.0  # nothing new: as the last run
    odd = [{"work": w, "cpu_seconds": 1.0} for w in (float("nan"), float("inf"), -1, True)]
    assert cpu_for(odd, 5)[0] is None
    assert fit([(1e-200, 1.0), (2e-200, 2.0)]) is None  # too close to tell apart: no division by 0
    mixed = [
        {"work": 10, "cpu_seconds": 30.0, "runner": "FnApiRunner"},
        {"work": 20, "cpu_seconds": 1.0, "runner": "PortableRunner"},
    ]
    assert cpu_for(mixed, 20) == (1.0, "the last run here (1 s) scaled by the work", False)  # not a fit
