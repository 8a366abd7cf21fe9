"""The local runner's worker processes: forked warm from a zygote while a command runs, started
cold without one, and nothing left behind afterwards."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
import pytest

from medsimp.pipelines import beam_worker

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the zygote forks (POSIX)")


def _worker_parents(out: Path) -> list[list[str]]:
    """Run a 2-worker pipeline on the local runner; the command line of each worker's parent."""
    import apache_beam as beam

    from medsimp.pipelines.beam_io import new_pipeline

    def report(i, folder=str(out)):
        import json as j
        import os as o

        import psutil as ps

        with open(o.path.join(folder, f"{i}.json"), "w") as fh:
            j.dump({"pid": o.getpid(), "parent": ps.Process(o.getppid()).cmdline()}, fh)
        return i

    with new_pipeline({"num_workers": 2}) as p:
        _ = p | beam.Create(range(8)) | beam.Reshuffle() | beam.Map(report)
    reports = [json.loads(f.read_text()) for f in sorted(out.glob("*.json"))]
    assert len(reports) == 8
    return [r["parent"] for r in reports]


def test_workers_fork_from_the_zygote_and_nothing_is_left_after(tmp_path):
    assert beam_worker.ZYGOTE_ENV not in os.environ
    with beam_worker.zygote():
        address = os.environ[beam_worker.ZYGOTE_ENV]
        (zygote,) = [c for c in psutil.Process().children() if "--zygote" in c.cmdline()]
        parents = _worker_parents(tmp_path)
    assert parents and all("--zygote" in cmd for cmd in parents)
    assert beam_worker.ZYGOTE_ENV not in os.environ
    assert not os.path.exists(os.path.dirname(address))
    assert not zygote.is_running()
    assert not [
        c for c in psutil.Process().children(recursive=True) if "beam_worker" in " ".join(c.cmdline())
    ]


def test_without_a_zygote_workers_start_cold(tmp_path, monkeypatch):
    # A socket nobody listens on: the worker command runs the harness itself.
    monkeypatch.setenv(beam_worker.ZYGOTE_ENV, str(tmp_path / "nobody"))
    with beam_worker.zygote():  # a zygote is already set: nothing new starts
        assert os.environ[beam_worker.ZYGOTE_ENV] == str(tmp_path / "nobody")
        (tmp_path / "out").mkdir()
        parents = _worker_parents(tmp_path / "out")
    assert parents and not any("--zygote" in cmd for cmd in parents)


def test_disabled_zygote_starts_nothing():
    with beam_worker.zygote(enabled=False):
        assert beam_worker.ZYGOTE_ENV not in os.environ
        assert not [c for c in psutil.Process().children() if "--zygote" in c.cmdline()]


@pytest.mark.parametrize(
    ("beam", "args", "expected"),
    [
        ({}, [], True),  # the default: FnApiRunner on 2 processes
        ({"num_workers": 1}, [], False),
        ({"num_workers": 4, "running_mode": "multi_threading"}, [], False),
        ({"runner": "DirectRunner", "num_workers": 3}, [], True),
        ({"runner": "FlinkRunner"}, [], False),
        ({}, ["--runner=PortableRunner", "--job_endpoint=embed"], False),
        ({}, ["--direct_num_workers=1"], False),
        ({"options": ["--environment_type=LOOPBACK"]}, [], False),
    ],
)
def test_which_runs_start_worker_processes(beam, args, expected):
    assert beam_worker.runs_worker_processes(beam, args) is expected
