"""Issue 54: a command's outputs are checked one by one and as a set before any work, and each
is held (its lock) from the check to the swap.

- Every output flag of every command (the leaves of the real parser), given a hostile path:
  a parent that is a file, a place under /proc, /sys or /dev, a name longer than the file
  system allows, an empty value: exit 2, one line naming the flag, no work (no announce line,
  nothing written). Before, most failed after the work with an internal error, or (empty) were
  silently ignored.
- Two flags naming one path, or one output inside another: refused (before, one output was
  lost with exit 0). `evaluate stage --plots` in an impossible place: refused before the
  metrics are written.
- A second command on an output another command holds is refused in one line while the first
  runs; `align train` holds its model folder from its checks on (before, two runs both exited
  0 and the last writer won).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from medsimp.cli.app import OUTPUT_FILE_FLAGS, OUTPUT_FOLDER_FLAGS, build_parser, command_leaves, main

ROOT = Path(__file__).resolve().parents[1]
LEAVES = {" ".join(path): parser for path, parser in command_leaves(build_parser())}
OUTPUTS = ("output", *OUTPUT_FOLDER_FLAGS, *OUTPUT_FILE_FLAGS)


def _actions(command: str) -> list[argparse.Action]:
    return [
        a
        for a in LEAVES[command]._actions
        if a.nargs != 0 and not a.dest.startswith("_g") and not isinstance(a, argparse._HelpAction)
    ]


def _argv(command: str, outputs: dict[str, str]) -> list[str]:
    """`command` with `outputs` (dest -> value) and a placeholder for each required argument."""
    out = command.split()
    for action in _actions(command):
        if action.dest in outputs:
            value = outputs[action.dest]
        elif action.required or not action.option_strings:
            value = str(next(iter(action.choices))) if action.choices else "1" if action.type is int else "x"
        else:
            continue
        out += [action.option_strings[0], value] if action.option_strings else [value]
    return out


def _output_dests(command: str) -> list[str]:
    return [a.dest for a in _actions(command) if a.dest in OUTPUTS and a.type in (None, str)]


CASES = [(c, d) for c in sorted(LEAVES) for d in _output_dests(c)]


def _refused(argv: list[str], cwd: Path, capsys, says: str) -> str:
    """Run `medsimp --params <empty> *argv` in-process in `cwd`: exit 2, one line saying `says`."""
    (cwd / "params.yaml").write_text("{}\n")
    here = os.getcwd()
    os.chdir(cwd)
    try:
        code = main(["--params", str(cwd / "params.yaml"), *argv])
    finally:
        os.chdir(here)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err[-1500:]
    assert len(lines) == 1 and says in lines[0], err[-1500:]  # no announce line: no work began
    return lines[0]


def _hostile(tmp_path: Path, kind: str) -> str:
    if kind == "parent-is-a-file":
        (tmp_path / "afile").write_text("mine\n")
        return str(tmp_path / "afile" / "out")
    if kind == "proc":
        return "/proc/self/medsimp-out"
    if kind == "sys":
        return "/sys/medsimp-out"
    if kind == "dev":
        return "/dev/null/medsimp-out"  # never creatable: a failing run writes nothing in /dev
    if kind == "name-too-long":
        return str(tmp_path / ("n" * 250))
    if kind == "path-too-long":
        return str(tmp_path / "/".join(["d" * 200] * 21))
    return ""


SAYS = {
    "parent-is-a-file": "is a file, not a folder",
    "proc": "is under /proc",
    "sys": "is under /sys",
    "dev": "is under /dev",
    "name-too-long": "longer than this file system allows",
    "path-too-long": "longer than this system allows",
    "empty": "is empty",
}


@pytest.mark.parametrize("kind", list(SAYS))
@pytest.mark.parametrize(("command", "dest"), CASES, ids=[f"{c}--{d}" for c, d in CASES])
def test_every_output_flag_in_an_impossible_place_is_refused_before_any_work(
    command, dest, kind, tmp_path, capsys
):
    value = _hostile(tmp_path, kind)
    before = sorted([*(p.name for p in tmp_path.iterdir()), "params.yaml"])
    line = _refused(_argv(command, {dest: value}), tmp_path, capsys, SAYS[kind])
    assert f"--{dest.replace('_', '-')}" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


@pytest.mark.parametrize("flag", ["--input", "--json", "--gold", "--output"])
def test_an_empty_value_is_refused_not_ignored(flag, tmp_path, capsys):
    command = next(
        c
        for c in sorted(LEAVES)
        if flag in LEAVES[c]._option_string_actions and LEAVES[c]._option_string_actions[flag].nargs != 0
    )
    dest = LEAVES[command]._option_string_actions[flag].dest
    _refused(_argv(command, {dest: ""}), tmp_path, capsys, f"{flag} is empty")


PAIRS = [
    (c, a, b)
    for c in sorted(LEAVES)
    for i, a in enumerate(_output_dests(c))
    for b in _output_dests(c)[i + 1 :]
    if not (a == "output" and c.startswith("synth"))
]


@pytest.mark.parametrize(("command", "a", "b"), PAIRS, ids=[f"{c}-{a}-{b}" for c, a, b in PAIRS])
def test_two_flags_naming_one_path_are_refused(command, a, b, tmp_path, capsys):
    """Before: `--metrics m.json --json m.json` wrote one of the two and exited 0."""
    same = str(tmp_path / "same.json")
    _refused(_argv(command, {a: same, b: same}), tmp_path, capsys, "name one path")
    _refused(
        _argv(command, {a: str(tmp_path / "o"), b: str(tmp_path / "o" / "x.json")}),
        tmp_path,
        capsys,
        "is inside",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def test_evaluate_stage_plots_is_checked_before_the_metrics_are_written(tmp_path, capsys):
    (tmp_path / "afile").write_text("mine\n")
    metrics = tmp_path / "metrics"
    argv = ["evaluate", "stage", "--metrics", str(metrics), "--plots", str(tmp_path / "afile" / "p.json")]
    _refused(argv, tmp_path, capsys, "--plots")
    assert not metrics.exists()


# --- one output, two writers ------------------------------------------------------------------

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from medsimp.atomic import hold
    out, ready, go = map(Path, sys.argv[1:4])
    with hold(out):
        ready.write_text("holding")
        deadline = time.time() + 120
        while not go.exists() and time.time() < deadline:
            time.sleep(0.02)
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


@pytest.mark.parametrize("way", ["flag", "params"])
def test_align_train_on_an_output_another_command_holds_is_refused_before_training(way, tmp_path, capsys):
    """The model folder named by --output or by params (align.model) is locked from the checks
    on: refused in one line within seconds, not after minutes of training."""
    out, ready, go = tmp_path / "model", tmp_path / "ready", tmp_path / "go"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out), str(ready), str(go)], cwd=ROOT, env=_env()
    )
    try:
        deadline = time.time() + 60
        while not ready.exists() and time.time() < deadline:
            time.sleep(0.02)
        assert ready.exists(), "the holder never started"
        argv = ["--params", str(ROOT / "params.yaml"), "--set", "align.self_training.enabled=false"]
        argv += ["align", "train", "--output", str(out)] if way == "flag" else [f"--set=align.model={out}"]
        if way == "params":
            argv = [*argv[:4], argv[-1], "align", "train"]
        start = time.monotonic()
        code = main(argv)
        elapsed = time.monotonic() - start
    finally:
        go.write_text("go")
        assert holder.wait(timeout=60) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert "being written by another medsimp command" in err[-1] and f"{out}" in err[-1]
    assert elapsed < 10  # no encoder loaded, no training (about 35 s on the sample)
    assert not out.exists() and not list(tmp_path.glob(".model*"))


@pytest.mark.slow
def test_two_align_train_runs_on_one_output_the_second_is_refused(tmp_path):
    """Two real `align train` runs on one output: the second is refused in one line while the
    first trains, and the first's model stands (before: both exited 0, the last writer won)."""
    out = tmp_path / "model"
    argv = [sys.executable, "-m", "medsimp.cli", "--params", str(ROOT / "params.yaml")]
    argv += ["--set", "align.self_training.enabled=false", "align", "train", "--output", str(out)]
    first = subprocess.Popen(argv, cwd=ROOT, env=_env(), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        while not (tmp_path / ".model.medsimp-lock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        second = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
        _, first_err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, first_err[-1500:]
    assert second.returncode == 2, second.stderr[-1500:]
    last = second.stderr.strip().splitlines()[-1]
    assert "being written by another medsimp command" in last and "Traceback" not in second.stderr
    assert (out / "stats.json").exists() and not list(tmp_path.glob(".model.*"))
