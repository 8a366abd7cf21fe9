"""The local runner's worker processes: forked warm from a zygote while a command runs (in the
command's folder, with its Ctrl-C handling, reporting their status), started cold without one,
and nothing left behind afterwards."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from medsimp.pipelines import beam_worker

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the zygote forks (POSIX)")


def _worker_reports(out: Path) -> list[dict]:
    """Run a 2-worker pipeline on the local runner; what each worker saw: its parent's command
    line, its folder and its SIGINT handler."""
    import apache_beam as beam

    from medsimp.pipelines.beam_io import new_pipeline

    def report(i, folder=str(out)):
        import json as j
        import os as o
        import signal as s

        import psutil as ps

        handler = s.getsignal(s.SIGINT)
        with open(o.path.join(folder, f"{i}.json"), "w") as fh:
            j.dump(
                {
                    "parent": ps.Process(o.getppid()).cmdline(),
                    "cwd": o.getcwd(),
                    "sigint": "ignored" if handler == s.SIG_IGN else getattr(handler, "__name__", "?"),
                },
                fh,
            )
        return i

    with new_pipeline({"num_workers": 2}) as p:
        _ = p | beam.Create(range(8)) | beam.Reshuffle() | beam.Map(report)
    reports = [json.loads(f.read_text()) for f in sorted(out.glob("*.json"))]
    assert len(reports) == 8
    return reports


def _zygotes() -> list[psutil.Process]:
    return [c for c in psutil.Process().children() if "--zygote" in c.cmdline()]


def test_workers_fork_from_the_zygote_and_nothing_is_left_after(tmp_path, monkeypatch):
    assert beam_worker.ZYGOTE_ENV not in os.environ
    with beam_worker.zygote():
        address = os.environ[beam_worker.ZYGOTE_ENV]
        (zygote,) = _zygotes()
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")  # workers run where the command is now
        reports = _worker_reports(tmp_path)
    assert all("--zygote" in r["parent"] for r in reports)
    assert {r["cwd"] for r in reports} == {str(tmp_path / "elsewhere")}
    assert {r["sigint"] for r in reports} == {"default_int_handler"}
    assert beam_worker.ZYGOTE_ENV not in os.environ
    assert not os.path.exists(os.path.dirname(address))
    assert not zygote.is_running()
    assert not [
        c for c in psutil.Process().children(recursive=True) if "beam_worker" in " ".join(c.cmdline())
    ]


def test_workers_keep_a_command_s_ignored_ctrl_c(tmp_path):
    # A command started with SIGINT ignored (in the background, by a supervisor) keeps running
    # through Ctrl-C; so do its forked workers.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with beam_worker.zygote():
            reports = _worker_reports(tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert all("--zygote" in r["parent"] for r in reports)
    assert {r["sigint"] for r in reports} == {"ignored"}


def test_without_a_zygote_workers_start_cold(tmp_path, monkeypatch):
    # A socket nobody listens on: the worker command runs the harness itself.
    monkeypatch.setenv(beam_worker.ZYGOTE_ENV, str(tmp_path / "nobody"))
    with beam_worker.zygote():  # a zygote is already set: nothing new starts
        assert os.environ[beam_worker.ZYGOTE_ENV] == str(tmp_path / "nobody")
        assert not _zygotes()
        (tmp_path / "out").mkdir()
        reports = _worker_reports(tmp_path / "out")
    assert not any("--zygote" in r["parent"] for r in reports)


def test_a_garbled_request_is_dropped_without_keeping_the_streams_sent(tmp_path):
    with beam_worker.zygote():
        (zygote,) = _zygotes()
        (tmp_path / "a").mkdir()
        _worker_reports(tmp_path / "a")  # the zygote is warm and has served two workers
        held = zygote.num_fds()
        for _ in range(3):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(os.environ[beam_worker.ZYGOTE_ENV])
                socket.send_fds(sock, [b"{"], [0, 1, 2])
                sock.sendall(b"garbage\n")
        (tmp_path / "b").mkdir()
        reports = _worker_reports(tmp_path / "b")  # served after the garbled ones, in order
        assert zygote.num_fds() == held
    assert all("--zygote" in r["parent"] for r in reports)


def test_a_run_without_worker_processes_starts_no_zygote():
    with beam_worker.zygote({"num_workers": 1}):
        assert beam_worker.ZYGOTE_ENV not in os.environ
        assert not _zygotes()


def test_a_failing_harness_is_one_line_and_its_status(tmp_path):
    # No runner to connect to: the forked worker's harness fails; the worker command says so in
    # one line and exits with the worker's status.
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_SERVICE_DESCRIPTOR")}
    with beam_worker.zygote():
        env[beam_worker.ZYGOTE_ENV] = os.environ[beam_worker.ZYGOTE_ENV]
        done = subprocess.run(
            [sys.executable, "-m", "medsimp.pipelines.beam_worker"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert done.stderr.strip() == "medsimp beam worker: the SDK harness failed (KeyError)"


def test_the_zygote_ends_itself_when_the_command_dies(tmp_path):
    # Its stdin ends with the main process: it leaves and removes its socket's folder.
    folder = tmp_path / "z"
    folder.mkdir()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(folder / "zygote"))
        listener.listen(1)
        proc = subprocess.Popen(
            [sys.executable, "-m", "medsimp.pipelines.beam_worker", "--zygote", str(listener.fileno())],
            stdin=subprocess.PIPE,
            pass_fds=[listener.fileno()],
        )
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    assert not folder.exists()


@pytest.mark.parametrize(
    ("beam", "args", "expected"),
    [
        ({}, [], True),  # the default: FnApiRunner on 2 processes
        ({"num_workers": 1}, [], False),
        ({"num_workers": 4, "running_mode": "multi_threading"}, [], False),
        ({"runner": "DirectRunner", "num_workers": 3}, [], False),  # Beam's own worker command
        ({"runner": "FlinkRunner"}, [], False),
        ({}, ["--runner=PortableRunner", "--job_endpoint=embed"], False),
        ({}, ["--direct_num_workers=1"], False),
        ({"options": ["--environment_type=LOOPBACK"]}, [], False),
    ],
)
def test_which_runs_start_worker_processes(beam, args, expected):
    assert beam_worker.runs_worker_processes(beam, args) is expected
