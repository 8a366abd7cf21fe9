"""Issue 54: environment errors are the user's, in one line naming the place and what is wrong,
never "internal error" (exit 4): a full or closed standard output, an unusable `cache.dir`, an
unwritable refresh report folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from medsimp.cli import main

ROOT = Path(__file__).resolve().parents[1]
SENTENCE = "The patient has acute MI and takes aspirin.\n"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def _medsimp(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", "--params", str(ROOT / "params.yaml"), *args],
        cwd=ROOT,
        env=_env(),
        text=True,
        timeout=120,
        **kwargs,
    )


def _one_line(stderr: str, says: str) -> None:
    lines = [ln for ln in stderr.strip().splitlines() if "score sentences with" not in ln]  # the announce
    assert len(lines) == 1 and says in lines[0], stderr[-2000:]
    assert "Traceback" not in stderr and "Exception ignored" not in stderr and "internal error" not in stderr


@pytest.mark.parametrize(
    "argv", [["select", "-"], ["--version"], ["--help"]], ids=["select", "version", "help"]
)
def test_a_full_standard_output_is_one_line_exit_2(argv):
    """`medsimp select - > /dev/full`: before, an internal error OSError (exit 4), or (--version)
    a traceback."""
    with open("/dev/full", "w") as full:
        result = _medsimp(*argv, input=SENTENCE, stdout=full, stderr=subprocess.PIPE)
    assert result.returncode == 2, result.stderr[-2000:]
    _one_line(result.stderr, "standard output cannot be written (No space left on device)")


@pytest.mark.parametrize("argv", [["select", "-"], ["--version"]], ids=["select", "version"])
def test_a_closed_standard_output_is_one_line_exit_2(argv):
    """`medsimp select - >&-`: before, the JSON lines went nowhere and the exit was 0."""
    result = _medsimp(*argv, input=SENTENCE, stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1))
    assert result.returncode == 2, result.stderr[-2000:]
    _one_line(result.stderr, "standard output is closed")


def _refused_fast(argv: list[str], capsys, says: str, code: int = 2) -> str:
    start = time.monotonic()
    got = main(argv)
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err.strip().splitlines()
    assert got == code, err
    assert says in err[-1] and "internal error" not in "\n".join(err), err
    assert elapsed < 15  # refused before the work (align train: about 35 s on the sample)
    return err[-1]


@pytest.mark.parametrize("where", ["a-file", "below-a-file", "proc", "sys"])
def test_an_unusable_cache_dir_is_one_line_before_any_work(where, tmp_path, capsys):
    """Before: below a file, an internal error NotADirectoryError after the encoder loaded;
    under /proc, "not found: /proc/..."."""
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    folder, says = {
        "a-file": (afile, "is not a folder"),
        "below-a-file": (afile / "cache", f"{afile} is a file, not a folder"),
        "proc": (Path("/proc/medsimp-cache"), "is under /proc"),
        "sys": (Path("/sys/medsimp-cache"), "is under /sys"),
    }[where]
    argv = ["--params", str(ROOT / "params.yaml"), "--set", f"cache.dir={folder}"]
    argv += ["--set", "align.self_training.enabled=false", "align", "train", "--output", str(tmp_path / "m")]
    line = _refused_fast(argv, capsys, says)
    assert f"cache.dir {folder}" in line
    assert afile.read_text() == "mine\n" and not (tmp_path / "m").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_cache_dir_is_one_line_before_any_work(tmp_path, capsys):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o500)
    argv = ["--params", str(ROOT / "params.yaml"), "--set", f"cache.dir={folder}"]
    argv += ["--set", "align.self_training.enabled=false", "align", "train", "--output", str(tmp_path / "m")]
    _refused_fast(argv, capsys, f"cache.dir {folder}: cannot write in it")


@pytest.mark.parametrize("way", ["flag", "params"])
def test_an_unusable_refresh_report_folder_is_one_line_before_any_stage(way, tmp_path, capsys, monkeypatch):
    """Before: the stages ran (hours), then writing the report was an internal error."""
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    reports = afile / "reports"
    monkeypatch.chdir(tmp_path)  # a DVC repository (refresh refuses to run outside one) with nothing to run
    (tmp_path / ".dvc").mkdir()
    (tmp_path / "params.yaml").write_text("{}\n")
    argv = ["--params", str(tmp_path / "params.yaml"), "refresh"]
    if way == "flag":
        argv += ["--report-dir", str(reports)]
        _refused_fast(argv, capsys, f"--report-dir {reports}: {afile} is a file, not a folder")
    else:
        argv[2:2] = ["--set", f"refresh.report_dir={reports}"]
        _refused_fast(argv, capsys, f"refresh.report_dir {reports}: {afile} is a file, not a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".dvc", "afile", "params.yaml"]
    assert list((tmp_path / ".dvc").iterdir()) == []  # nothing written, not even DVC's lock
