"""Hostile params (issue 28, items 8, 12, 13 and the params tracebacks): alias bombs, missing
files, duplicate keys, deep nesting, non-UTF-8, folders and out-of-range values are each one
line and exit 2, quickly; never defaults silently, never a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import fuzz_params
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
PARAMS = ROOT / "params.yaml"

# 9 levels of 9 aliases: 9^9 (387 million) strings from a few hundred bytes
BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip([None, *"abcdefgh"], "abcdefghi")
)
BOMB_ONE_LINE = (
    "["
    + ", ".join(
        f"&{n} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['x'] * 9)}]"
        for p, n in zip([None, *"abcdefgh"], "abcdefghi")
    )
    + "]"
)


def _cli(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **(env or {})}
    if env is None or "MEDSIMP_PARAMS" not in env:
        full.pop("MEDSIMP_PARAMS", None)
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *argv],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _error(path: Path | str, overrides: list[str] | None = None) -> str:
    from medsimp.config import ParamsError, load_params

    with pytest.raises(ParamsError) as err:
        load_params(path, overrides)
    assert err.value.exit_code == 2
    message = str(err.value)
    assert "\n" not in message and len(message) < 400, message
    return message


def test_alias_bomb_in_a_file_and_in_set_is_refused_fast(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    assert len(BOMB) < 700
    start = time.perf_counter()
    assert "aliases expand past" in _error(bomb)
    assert "aliases expand past" in _error(PARAMS, [f"notes.categories={BOMB_ONE_LINE}"])
    assert "aliases expand past" in _error(PARAMS, [f"notes.headers.x={BOMB_ONE_LINE}"])
    recursive = _error(PARAMS, ["notes.categories=&a [*a]"])
    assert "recursive alias" in recursive
    assert time.perf_counter() - start < 5


def test_bad_value_errors_never_format_a_large_value(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("notes:\n  categories: [" + ", ".join(["[1, 2, 3]"] * 5000) + "]\n")
    message = _error(big)
    assert message.startswith(f"{big}: param 'notes.categories[0]' must be a string, got [1, 2, 3]")


def test_missing_params_file_is_an_error_unless_it_is_the_implicit_default(tmp_path, monkeypatch):
    from medsimp.config import load_params

    assert "not found" in _error(tmp_path / "pararms.yaml")
    monkeypatch.chdir(tmp_path)
    assert load_params().filter.threshold == 0.5  # no params.yaml here: the defaults
    res = _cli(
        "--params", str(tmp_path / "nope.yaml"), "filter", "--input", "x", "--output", str(tmp_path / "o")
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "params file" in res.stderr and "not found" in res.stderr
    res = _cli(
        "filter",
        "--input",
        "x",
        "--output",
        str(tmp_path / "o"),
        env={"MEDSIMP_PARAMS": str(tmp_path / "x.yaml")},
    )
    assert res.returncode == 2 and "not found" in res.stderr and "Traceback" not in res.stderr


def test_an_explicit_params_yaml_must_exist_too(tmp_path):
    """`--params params.yaml` (or MEDSIMP_PARAMS=params.yaml) names a file: before, the name
    alone decided, and a missing ./params.yaml given explicitly ran on defaults."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("MEDSIMP_PARAMS", None)
    argv = [sys.executable, "-m", "medsimp.cli", "filter", "--input", "x", "--output", str(tmp_path / "o")]
    for extra, more_env in ((["--params", "params.yaml"], {}), ([], {"MEDSIMP_PARAMS": "params.yaml"})):
        res = subprocess.run(
            argv[:3] + extra + argv[3:], cwd=tmp_path, env={**env, **more_env}, capture_output=True, text=True
        )
        assert res.returncode == 2 and "not found" in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_duplicate_keys_name_the_key(tmp_path):
    dup = tmp_path / "dup.yaml"
    dup.write_text("filter:\n  threshold: 0.5\n  threshold: 0.9\n")
    assert _error(dup) == f"{dup}: duplicate key 'threshold' (line 3)"
    dup.write_text("filter: {}\nnotes: {}\nfilter: {threshold: 0.1}\n")
    assert "duplicate key 'filter'" in _error(dup)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a: " + "[" * 3000 + "]" * 3000 + "\n", "nested deeper than"),
        ("notes: {categories: " + "[" * 80 + "]" * 80 + "}\n", "nested deeper than"),
        ("filter: [1,\n", "not valid YAML (line 2)"),
        ("- 1\n- 2\n", "must hold a mapping at top level"),
    ],
)
def test_unusable_files_are_one_line(tmp_path, text, expected):
    bad = tmp_path / "p.yaml"
    bad.write_text(text)
    assert expected in _error(bad)


def test_non_utf8_file_and_a_folder(tmp_path):
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("notes: {input: caf\xe9}\n".encode("latin-1"))
    assert _error(latin) == f"{latin}: not UTF-8 text"
    assert "is a folder" in _error(tmp_path)


@pytest.mark.parametrize(
    "override, message",
    [
        ("filter.threshold=.nan", "param 'filter.threshold' must be a finite number, got nan"),
        ("filter.threshold=.inf", "param 'filter.threshold' must be a finite number, got inf"),
        ("filter.threshold=-5", "param 'filter.threshold' must be a number from 0 to 1, got -5"),
        ("filter.threshold=1.5", "param 'filter.threshold' must be a number from 0 to 1, got 1.5"),
        ("notes.max_text_chars=-1", "param 'notes.max_text_chars' must be an integer >= 1, got -1"),
        ("notes.batch_notes=0", "param 'notes.batch_notes' must be an integer >= 1, got 0"),
        ("cochrane.num_shards=0", "param 'cochrane.num_shards' must be an integer >= 1, got 0"),
        ("beam.num_workers=-2", "param 'beam.num_workers' must be an integer >= 1, got -2"),
        ("notes.min_ratio=0.9", "param 'notes.min_ratio' must not exceed 'notes.max_ratio', got 0.9 > 0.5"),
        ("radiology.min_tokens=100", "param 'radiology.min_tokens' must not exceed 'radiology.max_tokens'"),
        ("annotate.port=99999", "param 'annotate.port' must be an integer <= 65535, got 99999"),
    ],
)
def test_out_of_range_values_are_refused(override, message):
    assert re.escape(message) and message in _error(PARAMS, [override])


def test_out_of_range_in_a_file_names_the_file(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("notes: {min_ratio: 0.6, max_ratio: 0.2}\nfilter: {threshold: .nan}\n")
    assert _error(bad).startswith(f"{bad}: param 'notes.min_ratio' must not exceed 'notes.max_ratio'")


def test_exponent_floats_are_numbers():
    from medsimp.config import load_params

    params = load_params(PARAMS, ["train.lr=5e-5", "train.head_lr=1E-3"])
    assert params.train.lr == 5e-5 and params.train.head_lr == 1e-3
    assert load_params(PARAMS, ["simplify.openai.model=5e5"]).simplify.openai.model == "5e5"


def test_hostile_params_through_the_cli_are_one_line_exit_2(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    start = time.perf_counter()
    for argv in (
        ["--params", str(bomb), "filter"],
        ["--set", f"notes.categories={BOMB_ONE_LINE}", "notes"],
        ["--params", str(tmp_path), "filter"],
        ["--set", "filter.threshold=.nan", "filter"],
    ):
        res = _cli(*argv, "--output", str(tmp_path / "o"))
        assert res.returncode == 2, (argv, res.stderr)
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert time.perf_counter() - start < 40


@pytest.mark.slow  # a 100-example fuzz: out of the fast loop
@settings(max_examples=100, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.none(), fuzz_params.params_files()), st.one_of(st.just([]), fuzz_params.overrides()))
def test_fuzzed_params_load_or_fail_in_one_line(data, sets):
    """The fast profile of `scripts/fuzz.py --params` (in-process; the script drives the CLI)."""
    assert fuzz_params.load_case(data, sets) in fuzz_params.HOLDS


@pytest.mark.parametrize("command", sorted(fuzz_params.CLI_COMMANDS))
def test_the_params_fuzz_reaches_every_command_it_names(command):
    """scripts/fuzz.py --params runs each example on one of these commands: each holds the
    property on a bomb file with a bad --set, and on a duplicate key."""
    bomb_file = ("x: " + fuzz_params.bomb(9, 9) + "\n").encode()
    assert fuzz_params.cli_case(bomb_file, ["filter.threshold=.nan"], command=command) == "exit2"
    assert fuzz_params.cli_case(b"seed: 1\nseed: 2\n", [], command=command) == "exit2"
