"""Hangs and unbounded reads (issue 28, items 9, 10, 17): a dead worker, a signal, a device or
a FIFO given as an input, a huge record, a killed `refresh` — each ends in one line and a clean
exit, never a hang, a traceback or an orphan.
"""

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from medsimp.cli import main

ROOT = Path(__file__).resolve().parents[1]
BASE = ["--params", str(ROOT / "params.yaml")]
WORKERS = ("pipelines.jobs.worker", "apache_beam.runners.worker.sdk_worker_main")


def _env():
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def _workers(pid: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            if any(main in part for part in proc.cmdline() for main in WORKERS):
                found.append(proc)
        except psutil.Error:
            continue
    return found


# --- item 9: a dead Beam worker, SIGTERM during a job --------------------------------------


DIE_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    import apache_beam as beam
    from medsimp.cli.app import configure_logging
    from medsimp.errors import MedsimpError
    from medsimp.params_schema import Beam
    from pipelines.jobs.beam_io import new_pipeline

    retries, once, total = int(sys.argv[1]), sys.argv[2], sys.argv[3]

    class Die(beam.DoFn):  # an OOM kill, as the kernel does it: every run, or the first only
        def process(self, x):
            if x == 3 and not os.path.exists(once):
                if once != "always":
                    open(once, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(0.1)
            yield x

    def write_total(n):
        with open(total, "w") as fh:
            fh.write(str(n))

    configure_logging(verbose=False)
    try:
        with new_pipeline(Beam(num_workers=2, retries=retries)) as p:
            (
                p
                | beam.Create(list(range(20)))
                | beam.Reshuffle()
                | beam.ParDo(Die())
                | beam.CombineGlobally(sum)
                | beam.Map(write_total)
            )
    except MedsimpError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    """
)


def _die(tmp_path: Path, retries: int, once: bool) -> subprocess.CompletedProcess:
    script = tmp_path / "die.py"
    script.write_text(DIE_SCRIPT)
    mark = str(tmp_path / "died") if once else "always"
    return subprocess.run(
        [sys.executable, str(script), str(retries), mark, str(tmp_path / "total")],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        cwd=ROOT,
    )


@pytest.mark.slow
def test_sigkilled_worker_fails_the_run_in_one_line(tmp_path):
    """Before: Beam's thread that started the worker raised and the main thread waited forever.
    A worker that dies on every run: `beam.retries` more runs, then one line."""
    start = time.monotonic()
    proc = _die(tmp_path, retries=1, once=False)
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert time.monotonic() - start < 90
    assert proc.stderr.count("running the job again") == 1
    assert (
        "error: a Beam worker process was killed by SIGKILL (out of memory?); the stage stopped and "
        "wrote no output (2 runs, beam.retries: 1)"
    ) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "total").exists()


@pytest.mark.slow
def test_a_sigkilled_worker_is_retried_on_the_local_runner(tmp_path):
    """Issue 55: a worker killed once: the job runs again (params.yaml's beam.retries) and gives
    every element once. Before: the run failed (exit 4)."""
    from medsimp.config import load_params
    from medsimp.params_schema import Beam

    retries = load_params(ROOT / "params.yaml").beam.retries
    assert retries == Beam().retries == 2  # the documented default (docs/refresh.md "Workers and retries")
    proc = _die(tmp_path, retries=retries, once=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "medsimp: an SDK worker died under the Beam job; running the job again (run 2 of 3" in proc.stderr
    assert (tmp_path / "died").exists()  # it did die once
    assert (tmp_path / "total").read_text() == str(sum(range(20)))


def _synth_notes(path: Path, rows: int) -> None:
    assert main([*BASE, "synth", "notes", "--rows", str(rows), "--output", str(path), "--seed", "3"]) == 0


def _start_notes(notes: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        # two worker processes (params.yaml's sample profile runs one in-process): one is killed
        # no retry (beam.retries=0): the killed worker fails the run
        [sys.executable, "-m", "medsimp.cli", *BASE, "--set", "beam.num_workers=2", "--set", "beam.retries=0"]
        + ["notes"]
        + ["--input", str(notes), "--output", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=ROOT,
    )


def _wait_for_workers(proc: subprocess.Popen, timeout: float = 90) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        workers = [w for w in _workers(proc.pid) if w.name().startswith("python")]
        if workers:
            return workers
        time.sleep(0.2)
    raise AssertionError("no Beam worker process appeared")


@pytest.mark.slow
@pytest.mark.parametrize("target", ["worker", "main"])
def test_notes_killed_worker_or_sigterm_exits_cleanly(target, tmp_path):
    """`medsimp notes` on 400,000 synthetic notes: a worker SIGKILLed mid-run is exit 4 and
    one line; SIGTERM to the command is exit 143. Either way no traceback, no output folder,
    no worker left running, and the command ends within seconds."""
    notes, out = tmp_path / "notes.csv", tmp_path / "out"
    _synth_notes(notes, 400_000)
    proc = _start_notes(notes, out)
    try:
        workers = _wait_for_workers(proc)
        time.sleep(1.0)
        if target == "worker":
            workers[0].send_signal(signal.SIGKILL)
        else:
            proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        _, err = proc.communicate(timeout=60)
        elapsed = time.monotonic() - start
    finally:
        if proc.poll() is None:
            for w in _workers(proc.pid):
                w.kill()
            proc.kill()
    assert elapsed < 30
    if proc.returncode == 0:  # the job beat the signal: nothing to check
        pytest.skip("the job finished before the signal")
    lines = [ln for ln in err.splitlines() if ln.startswith("medsimp notes:")]
    assert "Traceback" not in err, err[-3000:]
    if target == "worker":
        assert proc.returncode == 4, err[-2000:]
        assert "a Beam worker process was killed by SIGKILL" in lines[-1]
    else:
        assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
        assert lines[-1] == "medsimp notes: interrupted by SIGTERM"
    assert not out.exists()
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]


@pytest.fixture(scope="module")
def notes_200k(tmp_path_factory) -> Path:
    notes = tmp_path_factory.mktemp("notes") / "notes.csv"
    _synth_notes(notes, 200_000)  # about 14 s of `notes` on one in-process worker
    return notes


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_the_in_process_runner_is_an_interrupt_not_a_crash(signum, notes_200k, tmp_path):
    """Issue 54: on the in-process runner (params.yaml's sample profile, `num_workers: 1`) the
    handler runs inside a DoFn and Beam wraps its KeyboardInterrupt / SystemExit(143) in a
    RuntimeError. Before: "internal error RuntimeError", exit 4. Now: 130 / 143 and the one
    interrupt line, as with worker processes; no traceback, no output, no temp folder."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "medsimp.cli",
            *BASE,
            "notes",
            "--input",
            str(notes_200k),
            "--output",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".out.tmp-*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(3.0)  # the Beam job is running (it needs about 12 s more)
        assert proc.poll() is None, "the job ended before the signal"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("medsimp notes:")]
    assert lines[1:] == [f"medsimp notes: interrupted by {name}"], err[-2000:]
    assert "internal error" not in err and "Traceback" not in err
    assert not out.exists() and not list(tmp_path.glob(".out.*"))


def test_write_error_names_the_fault():
    from medsimp.errors import UsageError
    from pipelines.jobs.pool import write_error

    worker = RuntimeError(
        "OSError: [Errno 28] No space left on device [while running 'Write_sentences/WriteShard']"
    )
    error = write_error(worker)
    assert isinstance(error, UsageError) and error.exit_code == 2
    assert "No space left on device [ENOSPC] (in step Write_sentences/WriteShard)" in str(error)
    try:
        raise RuntimeError("wrapped") from OSError(27, "File too large")
    except RuntimeError as exc:
        assert "[EFBIG]" in str(write_error(exc))
    assert write_error(RuntimeError("OSError: [Errno 2] No such file or directory")) is None
    assert write_error(ValueError("bug")) is None


def _tiny_tmpfs(path: Path) -> bool:
    path.mkdir()
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_full_disk_during_a_beam_write_is_one_line(tmp_path, capfd, workers):
    """A 12 KB tmpfs as the output's parent: before, a Beam traceback and exit 4. With worker
    processes, their own traceback print is quiet too (pipelines/jobs/worker.py)."""
    disk = tmp_path / "disk"
    if not _tiny_tmpfs(disk):
        pytest.skip("needs root to mount a tmpfs")
    try:
        code = main(
            [*BASE, "--set", f"beam.num_workers={workers}", "cochrane", "--input", str(ROOT / "data/sample/cochrane.jsonl"),
             "--output", str(disk / "out")]
        )  # fmt: skip
        err = capfd.readouterr().err
    finally:
        subprocess.run(["umount", str(disk)], check=False)
    assert code == 2, err
    assert "Traceback" not in err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("medsimp cochrane: the job could not write its output: No space")
    )


# --- item 10: bounded reads ---------------------------------------------------------------


def test_evaluate_refuses_a_device_fast(tmp_path, capfd):
    """Before: `--hyp /dev/zero` read 7 GB in 7 s."""
    ref = tmp_path / "ref.txt"
    ref.write_text("a b\n")
    start = time.monotonic()
    code = main([*BASE, "evaluate", "files", "--hyp", "/dev/zero", "--ref", str(ref), "--src", str(ref)])
    err = capfd.readouterr().err
    assert code == 2
    assert time.monotonic() - start < 5
    assert err.strip().splitlines()[-1] == (
        "medsimp evaluate files: --hyp /dev/zero: a device or socket, not a regular file (use `-` for standard input)"
    )


def _in_thread(fn, timeout: float):
    result: list = []
    thread = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "blocked"
    return result[0]


def test_a_fifo_without_a_writer_is_refused_not_waited_on(tmp_path):
    from medsimp.errors import InputError
    from medsimp.inputs import read_lines

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def attempt():
        try:
            read_lines(str(fifo), "--src")
        except InputError as exc:
            return str(exc)
        return "read"

    assert _in_thread(attempt, 5) == f"--src {fifo}: a FIFO, not a regular file (use `-` for standard input)"


def test_process_substitution_is_read_once(tmp_path):
    """`<(cmd)` is a pipe named /dev/fd/N: read once, whole, not refused."""
    from medsimp.inputs import read_lines

    r, w = os.pipe()
    os.write(w, b"one\r\ntwo\nthree")
    os.close(w)
    try:
        assert stat.S_ISFIFO(os.stat(f"/dev/fd/{r}").st_mode)
        assert read_lines(f"/dev/fd/{r}", "--hyp") == ["one", "two", "three"]
    finally:
        os.close(r)


def test_read_lines_size_limit(tmp_path, monkeypatch):
    from medsimp import inputs
    from medsimp.errors import InputError

    monkeypatch.setattr(inputs, "MAX_BYTES", 1000)
    big = tmp_path / "big.txt"
    big.write_text("x\n" * 600)
    with pytest.raises(InputError, match=r"larger than 0 MiB; refused"):
        inputs.read_lines(str(big), "--hyp")
    r, w = os.pipe()  # a pipe has no size: counted while read
    os.write(w, b"y\n" * 600)
    os.close(w)
    try:
        with pytest.raises(InputError, match="refused"):
            inputs.read_lines(f"/dev/fd/{r}", "--hyp")
    finally:
        os.close(r)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("gz", [False, True])
def test_iter_lines_refuses_a_line_over_the_cap_naming_it(tmp_path, monkeypatch, newline, gz):
    """Round two item 4: a streaming reader held any line whole, however long."""
    import gzip

    from medsimp.errors import InputError
    from pipelines.sources import files

    monkeypatch.setattr(files, "MAX_LINE_BYTES", 1000)
    text = newline.join(["short", "y" * 1000, "x" * 1001, "after"]) + newline
    path = tmp_path / ("f.txt.gz" if gz else "f.txt")

    def write(text: str) -> None:
        path.write_bytes(gzip.compress(text.encode(), mtime=0) if gz else text.encode())

    write(text)
    seen = []
    with pytest.raises(InputError, match=r"f\.txt(\.gz)?: line 3 is longer than 0 MiB"):
        for number, line in files.iter_lines(str(path)):
            seen.append((number, len(line)))
    assert seen == [(1, 5), (2, 1000)]  # a line at the cap is still read
    with pytest.raises(InputError, match="line 3 is longer"):
        files.check_lines(str(path))
    write(text.replace("x" * 1001, "x" * 1000))
    files.check_lines(str(path))  # nothing over the cap


def test_a_line_over_64_mib_is_one_line_before_any_work_and_never_held(tmp_path):
    """A 200 MiB single line (a sparse file: NULs after the first MiB of text) after a valid record."""
    import tracemalloc

    from medsimp.errors import InputError
    from pipelines.sources.files import MAX_LINE_BYTES, iter_lines

    sample = (ROOT / "data/sample/cochrane.jsonl").read_text().splitlines()
    src = tmp_path / "reviews.jsonl"
    with open(src, "wb") as fh:
        fh.write(sample[0].encode() + b"\n" + b'{"doi": "' + b"a" * (1 << 20))
        fh.truncate(200 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"reviews\.jsonl: line 2 is longer than 64 MiB"):
            for _ in iter_lines(str(src)):
                pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MAX_LINE_BYTES + (16 << 20)  # before: the whole 200 MiB line, and more
    out = tmp_path / "out"
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *BASE, "cochrane", "--input", str(src), "--output", str(out)],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-800:]
    last = result.stderr.strip().splitlines()[-1]
    assert "reviews.jsonl: line 2 is longer than 64 MiB" in last and "Traceback" not in result.stderr
    assert time.monotonic() - started < 30 and not out.exists()


@pytest.mark.slow
def test_cochrane_huge_record_is_a_dead_letter_fast(tmp_path, capfd):
    """Before: one 20 MB abstract took 251 s and 2.2 GB."""
    from pipelines.sources.cochrane import MAX_RECORD_CHARS

    sample = (ROOT / "data/sample/cochrane.jsonl").read_text().splitlines()
    huge = json.loads(sample[0])
    huge["doi"] = "10.1002/14651858.CD999999"
    huge["abstract"] = [{"heading": "Results", "text": "The trial enrolled many patients. " * 600_000}]
    src = tmp_path / "reviews.jsonl"
    src.write_text("\n".join([sample[0], json.dumps(huge), *sample[1:]]) + "\n")
    assert len(json.dumps(huge)) > 20_000_000 > MAX_RECORD_CHARS
    out = tmp_path / "out"
    start = time.monotonic()
    code = main([*BASE, "--set", "beam.num_workers=1", "cochrane", "--input", str(src), "--output", str(out)])
    assert code == 0, capfd.readouterr().err
    assert time.monotonic() - start < 60
    letters = [
        json.loads(ln) for f in (out / "dead_letter").glob("*.jsonl") for ln in f.read_text().splitlines()
    ]
    huge_letters = [d for d in letters if d["reason"] == "record_too_large"]
    assert [d["locator"] for d in huge_letters] == ["reviews.jsonl:2"]
    assert "limit 1000000" in huge_letters[0]["detail"]


def test_devaraj_line_over_the_cap_is_a_dead_letter(tmp_path):
    from pipelines.sources.cochrane import MAX_RECORD_CHARS, FormatError, read_devaraj

    (tmp_path / "t.doi").write_text("10.1002/x.CD1\n10.1002/x.CD2\n")
    (tmp_path / "t.source").write_text("a" * (MAX_RECORD_CHARS + 1) + "\nshort\n")
    (tmp_path / "t.target").write_text("b\nc\n")
    records = list(read_devaraj(str(tmp_path / "t")))
    assert isinstance(records[0][1], FormatError) and records[0][1].reason == "record_too_large"
    assert not isinstance(records[1][1], FormatError)


@pytest.mark.parametrize("reader", ["cochrane", "plaba", "msd"])
def test_job_input_that_is_a_pipe_is_refused_not_sniffed(reader, tmp_path, capfd):
    """Before: format sniffing consumed `<(cmd)` and the job called it "not JSON Lines"."""
    r, w = os.pipe()
    os.write(w, b'{"doi": "10.1/x"}\n')
    os.close(w)
    try:
        code = main([*BASE, reader, "--input", f"/dev/fd/{r}", "--output", str(tmp_path / "o")])
    finally:
        os.close(r)
    err = capfd.readouterr().err
    assert code == 2
    assert err.strip().splitlines()[-1] == (
        f"medsimp {reader}: /dev/fd/{r}: a pipe or device, not a file "
        "(a job reads its input more than once; save it to a file first)"
    )


# --- tracebacks -> one line, exit 2 -------------------------------------------------------


@pytest.mark.parametrize(
    "reader,source", [("cochrane", "cochrane.jsonl"), ("plaba", "plaba.json"), ("notes", "NOTEEVENTS.csv")]
)
def test_input_name_that_is_not_utf8(reader, source, tmp_path, capfd):
    """Before: a UnicodeEncodeError inside Beam's coder, exit 4."""
    name = os.fsdecode(b"in\xff" + source.encode())
    target = tmp_path / name
    target.write_bytes((ROOT / "data/sample" / source).read_bytes())
    code = main(
        [
            *BASE,
            "--set",
            "beam.num_workers=1",
            reader,
            "--input",
            str(target),
            "--output",
            str(tmp_path / "o"),
        ]
    )
    err = capfd.readouterr().err
    assert code == 2
    assert err.strip().splitlines()[-1] == (
        f"medsimp {reader}: --input: the name holds byte 0xff (at character {len(str(tmp_path)) + 4}) "
        "that is not UTF-8; rename the file"
    )
    assert not (tmp_path / "o").exists()


def test_a_listed_file_name_that_is_not_utf8(tmp_path, capfd):
    """Names from a folder listing (Devaraj triples, a notes glob) reach the same refusal."""
    folder = tmp_path / "dv"
    folder.mkdir()
    for ext in ("source", "target", "doi"):
        (folder / os.fsdecode(b"t\xff." + ext.encode())).write_text("x\n")
    code = main(
        [
            *BASE,
            "--set",
            "beam.num_workers=1",
            "cochrane",
            "--input",
            str(folder),
            "--output",
            str(tmp_path / "o"),
        ]
    )
    assert code == 2
    assert "a file name holds a byte that is not UTF-8" in capfd.readouterr().err
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / os.fsdecode(b"n\xff.csv")).write_bytes((ROOT / "data/sample/NOTEEVENTS.csv").read_bytes())
    code = main([*BASE, "notes", "--input", str(notes / "*.csv"), "--output", str(tmp_path / "o")])
    assert code == 2
    assert "a file name holds a byte that is not UTF-8" in capfd.readouterr().err


def test_report_figure_with_dollar_signs():
    """A `$` in a name from the data is text, not matplotlib math (before: a mathtext error)."""
    from medsimp.report.data import figure_png

    side = {"_lengths": [3, 5, 8], "_fkgl": [4.0, 6.5, 9.1]}
    st = {
        "sides": {"complex": side, "simple": side},
        "overlap_r": None,
        "alignment_types": {"1$^$1": 3, "$x": 1},
    }
    assert figure_png("cfg$1", st, 5)[:4] == b"\x89PNG"


# --- item 17: SIGKILL of refresh ends its `dvc repro` -------------------------------------


GROUP_PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from medsimp.refresh.dvc import guarded
    stage = [sys.executable, "-c",
             "import subprocess, time; p = subprocess.Popen(['sleep', '300']); print(p.pid, flush=True); time.sleep(300)"]
    proc = subprocess.Popen(guarded(stage, 3.0), start_new_session=True, stdout=subprocess.PIPE, text=True)
    print(proc.pid, proc.stdout.readline().strip(), flush=True)
    time.sleep(300)
    """
)


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_sigkill_of_the_parent_ends_the_guarded_group(tmp_path):
    """`refresh` runs `dvc repro` in its own session; before, SIGKILL of refresh left DVC and its
    stage running. The guard ends the whole group (here: a stage that spawned `sleep`)."""
    script = tmp_path / "parent.py"
    script.write_text(GROUP_PARENT)
    parent = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=_env(), cwd=ROOT
    )
    assert parent.stdout is not None
    leader, grandchild = (int(x) for x in parent.stdout.readline().split())
    assert not _gone(leader) and not _gone(grandchild)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not (_gone(leader) and _gone(grandchild)):
        time.sleep(0.1)
    assert _gone(leader) and _gone(grandchild)


def test_guard_passes_the_exit_status_through():
    from medsimp.refresh.dvc import guarded

    assert (
        subprocess.run(
            guarded([sys.executable, "-c", "raise SystemExit(3)"]), start_new_session=True
        ).returncode
        == 3
    )
    killed = subprocess.run(
        guarded([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]),
        start_new_session=True,
    )
    assert killed.returncode == -signal.SIGTERM
