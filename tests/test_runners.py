"""Every Beam job gives byte-identical outputs on the default runner, on the PortableRunner in
LOOPBACK mode (the job-service path Flink and Spark use), and on a cluster on this machine:
medsimp's job server (Beam's, running as many SDK workers as asked) and an EXTERNAL worker pool
started from another folder, whose medsimp is the wheel built from this checkout (installed with
--no-deps into a folder first on the workers' path), not the checkout (issue 36 item 4; the
recipe is docs/refresh.md's). Run through the CLI. On the cluster, two SDK workers run at once,
and a worker killed mid-job is retried with the same bytes out (issue 55 section 3).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loopback import free_port, wait_for_port

from medsimp.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PORTABLE = [
    "--beam-arg=--runner=PortableRunner",
    "--beam-arg=--job_endpoint=embed",
    "--beam-arg=--environment_type=LOOPBACK",
]
# the default runner with its worker processes (params.yaml's sample profile runs one in-process)
BASE = [
    "--params",
    str(ROOT / "params.yaml"),
    "--set",
    "align.crf.encoder={kind: e5}",
    "--set",
    "beam.num_workers=2",
]
# job -> its command line (R = the runner's output root, S = shared inputs built once)
JOBS = {
    "notes": ["notes", "--input", str(ROOT / "data/sample/NOTEEVENTS.csv"), "--output", "R/notes"],
    "radiology": [
        "radiology",
        "--input",
        str(ROOT / "data/sample/NOTEEVENTS.csv"),
        "--output",
        "R/radiology",
    ],
    "cochrane": ["cochrane", "--output", "R/cochrane"],
    "msd": ["msd", "--output", "R/msd"],
    "plaba": ["plaba", "--output", "R/plaba"],
    "link": ["link", "--input", "R/cochrane", "--output", "R/linked", "--index", "S/umls"],
    "align": ["align", "corpus", "--input", "R/cochrane", "--output", "R/align", "--model", "S/model"],
    "filter": ["filter", "--input", "R/align", "--output", "R/filter"],
}


def _wheel_site(tmp: Path) -> Path:
    """The medsimp wheel built from a copy of this checkout, installed with --no-deps into a
    folder (the workers' first path entry; their third-party packages are the pinned set)."""
    src = tmp / "src"
    skip = {".git", ".venv", ".cache", ".dvc", "out", "build", "builders", "medsimp.egg-info", "node_modules"}
    shutil.copytree(
        ROOT,
        src,
        ignore=lambda d, names: [n for n in names if n == "__pycache__" or (Path(d) == ROOT and n in skip)],
    )
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run(
        pip + ["wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp), str(src)], check=True, cwd=tmp
    )
    site = tmp / "site"
    wheel = next(tmp.glob("medsimp-*.whl"))
    subprocess.run(pip + ["install", "--no-deps", "--target", str(site), str(wheel)], check=True, cwd=tmp)
    return site


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """medsimp's job server and an EXTERNAL worker pool (2 workers per job) on loopback; yields
    the --beam-arg flags that send a job there and the workers' environment."""
    tmp = tmp_path_factory.mktemp("cluster")
    site = _wheel_site(tmp)
    home = tmp / "workers"  # the workers' current folder: not the launcher's, not the checkout
    home.mkdir()
    from medsimp.numerics import PINNED_ENV

    env = {
        # a cluster's workers do not inherit the launcher's pinned kernels: their environment
        # sets them, as docker/worker.Dockerfile and docs/refresh.md's recipe do
        **{k: v for k, v in os.environ.items() if k not in PINNED_ENV},
        **PINNED_ENV,
        "PYTHONPATH": str(site),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    pool_port, job_port = free_port(), free_port()
    services = {
        "pool": ["apache_beam.runners.worker.worker_pool_main", f"--service_port={pool_port}"],
        # medsimp's job server: Beam's, running the SDK workers a job asks for
        "jobs": ["pipelines.jobs.job_server", f"--port={job_port}", "--worker_connect_seconds=60"],
    }
    with _serving(services, {"pool": pool_port, "jobs": job_port}, home, env, tmp) as procs:
        # 2 SDK workers per job: BASE's beam.num_workers, which medsimp passes as --sdk_worker_parallelism
        yield {
            "flags": _cluster_flags(job_port, pool_port),
            "env": env,
            "site": site,
            "home": home,
            "pool_port": pool_port,
            "pool_pid": procs["pool"].pid,
        }


def _cluster_flags(job_port: int, pool_port: int) -> list[str]:
    return [
        "--beam-arg=--runner=PortableRunner",
        f"--beam-arg=--job_endpoint=localhost:{job_port}",
        "--beam-arg=--environment_type=EXTERNAL",
        f"--beam-arg=--environment_config=localhost:{pool_port}",
    ]


@contextlib.contextmanager
def _serving(services: dict[str, list[str]], ports: dict[str, int], home: Path, env: dict, logs: Path):
    """`python -P -m <argv>` of each service, from `home` with `env`, logging to `logs/<name>.log`,
    each waited for on its port; stopped (terminate, then kill) on the way out."""
    procs: dict[str, subprocess.Popen] = {}
    try:
        for name, argv in services.items():
            log = logs / f"{name}.log"
            with open(log, "wb") as sink:
                procs[name] = subprocess.Popen(
                    [sys.executable, "-P", "-m", *argv],
                    cwd=home,
                    env=env,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            wait_for_port(ports[name], procs[name], log)
        yield procs
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cluster):
    tmp = tmp_path_factory.mktemp("runners")
    shared = tmp / "shared"
    gold = tmp / "gold.jsonl"  # two documents of the embedded gold keep training short
    sample = (ROOT / "data/sample/align_gold.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    gold.write_text("".join(sample[2:4]), encoding="utf-8")
    assert main(BASE + ["umls-index", "--output", str(shared / "umls")]) == 0
    assert (
        main(
            BASE
            + [
                "--set",
                "align.crf.epochs=20",
                "--set",
                "align.self_training.enabled=false",
                "--set",
                f"cache.dir={tmp / 'cache-train'}",
                "align",
                "train",
                "--gold",
                str(gold),
                "--output",
                str(shared / "model"),
            ]
        )
        == 0
    )
    roots = {}
    for runner, extra in (("default", []), ("portable", PORTABLE), ("cluster", cluster["flags"])):
        root = tmp / runner
        for job, argv in JOBS.items():
            argv = [a.replace("R/", f"{root}/").replace("S/", f"{shared}/") for a in argv]
            # a cache per runner, so both runs compute every document
            code = main(BASE + ["--set", f"cache.dir={tmp / ('cache-' + runner)}"] + argv + extra)
            assert code == 0, f"{job} on {runner}"
        roots[runner] = root
    return roots


@pytest.mark.parametrize("runner", ["portable", "cluster"])
@pytest.mark.parametrize("job", list(JOBS))
def test_every_runner_matches_the_default_runner(runs, job, runner):
    out = JOBS[job][JOBS[job].index("--output") + 1].removeprefix("R/")
    default, other = _files(runs["default"] / out), _files(runs[runner] / out)
    assert any(name.endswith((".parquet", ".jsonl")) for name in default)
    assert default.keys() == other.keys()
    differ = [name for name in default if default[name] != other[name]]
    assert not differ, f"{job}: {differ} differ between the default runner and {runner}"


def test_relative_paths_on_the_command_line_reach_the_cluster_workers(runs, cluster, tmp_path):
    """The CLI makes the paths a job's workers open absolute: a relative --input and --output,
    given in a folder that is not the workers', give the default runner's bytes."""
    import shutil

    shutil.copy(ROOT / "data/sample/cochrane.jsonl", tmp_path / "cochrane.jsonl")
    result = _cli(
        ["cochrane", "--input", "cochrane.jsonl", "--output", "rel/cochrane", *cluster["flags"]], tmp_path
    )
    assert result.returncode == 0, result.stderr[-1500:]
    assert _files(tmp_path / "rel" / "cochrane") == _files(runs["default"] / "cochrane")


def test_the_cluster_workers_run_the_wheel_not_the_checkout(cluster):
    where = subprocess.run(
        ["python", "-c", "import medsimp, pipelines; print(medsimp.__file__); print(pipelines.__file__)"],
        cwd=cluster["home"],
        env=cluster["env"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert where and all(Path(p).is_relative_to(cluster["site"]) for p in where), where


def _cli(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *BASE, *argv],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.parametrize("dead", ["job endpoint", "external worker pool"])
def test_a_service_that_is_not_there_is_one_line_and_nothing_published(cluster, dead, tmp_path):
    port = free_port()  # nothing listens there
    flags = [
        f.replace(f"localhost:{f.rsplit(':', 1)[1]}", f"localhost:{port}")
        if (dead == "job endpoint" and "job_endpoint" in f)
        or (dead != "job endpoint" and "environment_config" in f)
        else f
        for f in cluster["flags"]
    ]
    started = time.monotonic()
    result = _cli(["cochrane", "--output", "out/cochrane", *flags], tmp_path)
    assert result.returncode == 2, result.stderr[-1500:]
    last = result.stderr.strip().splitlines()[-1]
    assert f"the {dead} localhost:{port} did not answer" in last and "Traceback" not in result.stderr
    assert time.monotonic() - started < 120
    assert not (tmp_path / "out" / "cochrane").exists()


def test_workers_that_write_elsewhere_fail_the_job_instead_of_publishing_empty_tables(
    cluster, tmp_path, monkeypatch
):
    """A job given a relative output folder (a caller of `run()` that is not the CLI, which
    makes worker paths absolute): the workers write below their own current folder, and the
    launcher, which counts the rows it can see, refuses the job instead of filling empty shards."""
    from medsimp.errors import StageFailed
    from medsimp.params_schema import Beam, Cochrane
    from pipelines.jobs import cochrane

    monkeypatch.chdir(tmp_path)
    beam_args = [f.removeprefix("--beam-arg=") for f in cluster["flags"]]
    with pytest.raises(StageFailed, match="rows were lost"):
        cochrane.run(str(ROOT / "data/sample/cochrane.jsonl"), "rel/out", Cochrane(), Beam(), beam_args, None)
    assert (cluster["home"] / "rel" / "out" / "sentences").is_dir()  # where the workers wrote


def _worker_connected(pool_pid: int) -> bool:
    import psutil

    try:
        workers = psutil.Process(pool_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return False
    for worker in workers:
        with contextlib.suppress(psutil.Error):
            if any(c.status == psutil.CONN_ESTABLISHED for c in worker.net_connections(kind="tcp")):
                return True
    return False


def _worker_spawned(pool_pid: int) -> bool:
    import psutil

    try:
        return bool(psutil.Process(pool_pid).children(recursive=True))
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize(
    "moment", [_worker_spawned, _worker_connected], ids=["worker-started", "worker-connected"]
)
def test_a_worker_pool_killed_mid_run_is_one_line_and_nothing_published(cluster, tmp_path, moment):
    """Its own pool, killed (SIGKILL, with its workers) once it has started a worker for the
    job (which may not have reached the job server yet: Beam then waits minutes or forever, and
    medsimp's watch of the pool cancels the job), or once a worker is connected to the job
    server (Beam reports the closed channel): either way the job fails in bounded time with one
    line, no runner traceback, and no output folder."""
    import signal

    port = free_port()
    log = tmp_path / "pool.log"
    with open(log, "wb") as sink:
        pool = subprocess.Popen(
            [
                sys.executable,
                "-P",
                "-m",
                "apache_beam.runners.worker.worker_pool_main",
                f"--service_port={port}",
            ],
            cwd=cluster["home"],
            env=cluster["env"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_port(port, pool, log)
        flags = [
            f"--beam-arg=--environment_config=localhost:{port}" if "environment_config" in f else f
            for f in cluster["flags"]
        ]
        started = time.monotonic()
        job = subprocess.Popen(
            [sys.executable, "-m", "medsimp.cli", *BASE, "cochrane", "--output", "out/cochrane", *flags],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        while not moment(pool.pid):
            assert job.poll() is None and time.monotonic() - started < 120, log.read_text()[-2000:]
            time.sleep(0.05)
        os.killpg(pool.pid, signal.SIGKILL)
        _, err = job.communicate(timeout=180)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pool.pid, signal.SIGKILL)
        pool.wait(timeout=30)
    assert job.returncode == 4, err[-2000:]
    assert (
        err.strip().splitlines()[-1].startswith("medsimp cochrane: the Beam job failed on the PortableRunner")
    )
    assert "Traceback" not in err
    assert time.monotonic() - started < 180
    assert not (tmp_path / "out" / "cochrane").exists()


# A job whose DoFn records, for every element, the worker process that ran it and when (a side
# channel in a folder the test owns: the outputs stay the job's). Run as a script so that its
# DoFn is pickled by value: the cluster's workers import only Beam and the medsimp wheel.
BUSY_SCRIPT = """
import json, os, sys, time
import apache_beam as beam
from medsimp.cli.app import configure_logging
from medsimp.errors import MedsimpError
from medsimp.params_schema import Beam
from pipelines.jobs.beam_io import new_pipeline

folder = sys.argv[1]

class Busy(beam.DoFn):
    def process(self, x):
        start = time.time()
        time.sleep(0.5)
        with open(os.path.join(folder, f"{x}.json"), "w") as fh:
            json.dump({"pid": os.getpid(), "start": start, "end": time.time()}, fh)
        yield x

configure_logging(verbose=False)
try:
    with new_pipeline(Beam(num_workers=2), sys.argv[2:]) as p:
        p | beam.Create(list(range(16))) | beam.Reshuffle() | beam.ParDo(Busy())
except MedsimpError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
"""


def test_two_workers_are_busy_at_once_on_the_external_pool(cluster, tmp_path):
    """`beam.num_workers: 2` on the PortableRunner with an EXTERNAL pool: two SDK worker
    processes each run elements, at the same time. Before: Beam's job server ran every job on
    one worker (its FnApiRunner never reads a worker count), so one pid did all 16 elements."""
    import json

    script, folder = tmp_path / "busy.py", tmp_path / "busy"
    script.write_text(BUSY_SCRIPT, encoding="utf-8")
    folder.mkdir()
    flags = [f.removeprefix("--beam-arg=") for f in cluster["flags"]]
    result = subprocess.run(
        [sys.executable, str(script), str(folder), *flags],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    runs = [json.loads(p.read_text()) for p in folder.glob("*.json")]
    assert len(runs) == 16
    by_pid: dict[int, list] = {}
    for run in runs:
        by_pid.setdefault(run["pid"], []).append((run["start"], run["end"]))
    assert len(by_pid) == 2, sorted(by_pid)
    first, second = by_pid.values()
    overlapping = [(a, b) for a in first for b in second if a[0] < b[1] and b[0] < a[1]]
    assert overlapping, "the two workers never ran an element at the same time"


def _pool_children(pool_pid: int) -> list:
    import psutil

    try:
        return psutil.Process(pool_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _live_workers(pool_pid: int, earlier: frozenset[int] = frozenset()) -> list:
    """The pool's SDK worker processes that are running and connected (not the zombies of earlier
    jobs, nor a process in `earlier`: another job's)."""
    import psutil

    live = []
    for proc in _pool_children(pool_pid):
        if proc.pid in earlier:
            continue
        with contextlib.suppress(psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE and any(
                c.status == psutil.CONN_ESTABLISHED for c in proc.net_connections(kind="tcp")
            ):
                live.append(proc)
    return live


def _kill_one_worker_mid_job(cluster, tmp_path: Path, extra: list[str]) -> tuple[subprocess.Popen, str]:
    """`medsimp cochrane` on the cluster; once its two SDK workers are connected, one of them
    is SIGKILLed (as the kernel's OOM killer would): one that has its control channel open (the
    job server fails what it owes at once) or one still opening it (the job server fails it after
    --worker_connect_seconds), whichever the kill lands on. Returns the finished command and stderr."""
    import signal

    earlier = frozenset(proc.pid for proc in _pool_children(cluster["pool_pid"]))
    job = subprocess.Popen(
        [sys.executable, "-m", "medsimp.cli", *BASE, *extra, "cochrane", "--output", "out/cochrane"]
        + cluster["flags"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.monotonic()
    try:
        while len(workers := _live_workers(cluster["pool_pid"], earlier)) < 2:
            assert job.poll() is None and time.monotonic() - started < 120, "no two workers connected"
            time.sleep(0.05)
        workers[0].send_signal(signal.SIGKILL)
        _, err = job.communicate(timeout=240)
    finally:
        if job.poll() is None:
            job.kill()
    return job, err


def test_a_killed_worker_is_retried_and_gives_the_same_bytes(cluster, tmp_path):
    """One of the job's two SDK workers SIGKILLed mid-job: Beam's job server would have waited
    forever for the bundle it had sent (its control channel's reader ends without failing the
    bundle); medsimp's job server fails the job at once and the launcher runs it again
    (beam.retries), which gives the in-process runner's bytes."""
    default = tmp_path / "default"
    assert main(BASE + ["--set", "beam.num_workers=1", "cochrane", "--output", str(default)]) == 0
    job, err = _kill_one_worker_mid_job(cluster, tmp_path, [])
    assert job.returncode == 0, err[-2000:]
    assert "an SDK worker died under the Beam job; running the job again (run 2 of 3" in err
    assert "Traceback" not in err
    assert _files(tmp_path / "out" / "cochrane") == _files(default)


def test_a_killed_worker_past_the_retry_limit_is_one_line_and_nothing_published(cluster, tmp_path):
    job, err = _kill_one_worker_mid_job(cluster, tmp_path, ["--set", "beam.retries=0"])
    assert job.returncode == 4, err[-2000:]
    assert err.strip().splitlines()[-1] == (
        "medsimp cochrane: the Beam job failed on the PortableRunner: an SDK worker died "
        "(beam.retries: 0); nothing is published (check the worker pool's log: out of memory?)"
    )
    assert "Traceback" not in err and "running the job again" not in err
    assert not (tmp_path / "out" / "cochrane").exists()


def test_a_worker_that_never_connects_fails_the_job_in_bounded_time_and_is_retried(cluster, tmp_path):
    """A pool whose workers die before they open their control channel (its container
    executable is `true`: it starts and exits at once). Beam's job server waits forever for the
    channel; medsimp's fails the job after --worker_connect_seconds, the launcher runs it again
    (beam.retries), and past the limit it is one line, exit 4, nothing published."""
    true = shutil.which("true")
    assert true
    ports = {"pool": free_port(), "jobs": free_port()}
    services = {
        "pool": [
            "apache_beam.runners.worker.worker_pool_main",
            f"--service_port={ports['pool']}",
            f"--container_executable={true}",
        ],
        "jobs": ["pipelines.jobs.job_server", f"--port={ports['jobs']}", "--worker_connect_seconds=3"],
    }
    with _serving(services, ports, cluster["home"], cluster["env"], tmp_path):
        started = time.monotonic()
        job = subprocess.run(
            [sys.executable, "-m", "medsimp.cli", *BASE, "--set", "beam.retries=1", "cochrane"]
            + ["--output", "out/cochrane", *_cluster_flags(ports["jobs"], ports["pool"])],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=240,
        )
        elapsed = time.monotonic() - started
    err = job.stderr
    assert job.returncode == 4, err[-2000:]
    assert "an SDK worker died under the Beam job; running the job again (run 2 of 2" in err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("medsimp cochrane: the Beam job failed on the PortableRunner: an SDK worker died (2 runs")
    ), err[-2000:]
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "cochrane").exists()
    assert elapsed < 120
    assert "did not open its control channel within 3 s" in (tmp_path / "jobs.log").read_text()
