"""Each exit code of the README's table, from a real `python -m medsimp.cli.app` process:
0 ok, 2 usage or bad input, 3 nothing to do or refused, 4 stage failed, 75 lock held."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from medsimp.errors import EXIT_FAILED, EXIT_LOCKED, EXIT_OK, EXIT_REFUSED, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[1]


def medsimp(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _one_line_error(done: subprocess.CompletedProcess, command: str) -> None:
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"medsimp {command}: ")


@pytest.fixture()
def sentences(tmp_path: Path) -> Path:
    path = tmp_path / "sentences.txt"
    path.write_text(
        "The pt had CHF and HTN and was seen in the clinic today for a check .\n", encoding="utf-8"
    )
    return path


def test_0_ok(tmp_path, sentences):
    done = medsimp(tmp_path, "select", str(sentences))
    assert done.returncode == EXIT_OK, done.stderr
    assert '"keep"' in done.stdout


@pytest.mark.parametrize(
    "argv, command",
    [
        (["cochrane", "--no-such-flag"], None),  # argparse
        (["--set", "notes.no_such_key=1", "select", "-"], "select"),  # params
        (["select", "missing.txt"], "select"),  # a named file that is not there
        (["notes", "--input", "nowhere/*.csv", "--output", "o"], "notes"),  # bad input
    ],
)
def test_2_usage_or_bad_input(tmp_path, argv, command):
    done = medsimp(tmp_path, *argv)
    assert done.returncode == EXIT_USAGE, done.stderr
    if command:
        _one_line_error(done, command)
    assert not (tmp_path / "o").exists()


def test_3_refused(tmp_path):
    folder = tmp_path / "built"
    folder.mkdir()
    (folder / "README.md").write_text("---\n---\n", encoding="utf-8")
    done = medsimp(tmp_path, "publish", str(folder), "--repo-id", "user/data")
    assert done.returncode == EXIT_REFUSED, done.stderr
    _one_line_error(done, "publish")
    assert "no Parquet data" in done.stderr


def test_4_stage_failed(tmp_path):
    from medsimp.selfcorrect.fake_server import FakeChatServer

    source = tmp_path / "sents.jsonl"
    source.write_text('{"sentence_id": "r:0", "text": "Small left pleural effusion."}\n', encoding="utf-8")
    with FakeChatServer(fail_always=True) as server:
        (tmp_path / "params.yaml").write_text(
            "simplify:\n  enabled: true\n  backend: openai\n  max_rounds: 1\n"
            f'  openai: {{base_url: "{server.url}", model: m, backoff: 0.01, max_retries: 1, timeout: 5}}\n'
            f'cache: {{dir: "{tmp_path / "cache"}"}}\n',
            encoding="utf-8",
        )
        done = medsimp(tmp_path, "simplify", "--input", str(source), "--output", "out")
    assert done.returncode == EXIT_FAILED, done.stderr
    _one_line_error(done, "simplify")


def test_75_lock_held(tmp_path):
    from filelock import FileLock

    (tmp_path / "params.yaml").write_text("refresh:\n  lock: held.lock\n", encoding="utf-8")
    (tmp_path / ".dvc").mkdir()  # a DVC repository (refresh refuses to run outside one)
    with FileLock(str(tmp_path / "held.lock"), timeout=0):
        done = medsimp(tmp_path, "refresh")
    assert done.returncode == EXIT_LOCKED, done.stdout + done.stderr
    assert "another refresh is running" in done.stdout
