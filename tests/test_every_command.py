"""The standing suite of issue 28: each class of hostile input over every command.

The commands are the leaves of the real CLI parser (`medsimp.cli.app.build_parser`, which reads
the `COMMANDS` registry), so a new command is covered by construction. Per class:

- destroy: the main input inside the `--output` folder (or file): refused before any work,
  exit 2, the input intact;
- silent acceptance: a mistyped key in the command's own params section, in a params file and in
  `--set`: exit 2 naming the key (an unknown flag: tests/test_cli_grammar.py, per command too);
- hang: a FIFO without a writer as every path argument: the command ends within the timeout;
- memory: `/dev/zero` as every path argument: it ends, never growing past `MEMORY_LIMIT`;
- leak: a file of marked text (invalid UTF-8, not JSON, not CSV) as every path argument: the
  mark is in no terminal output and no file the run wrote.

Each run is one line on stderr and never a traceback. Required arguments that are not paths
get a placeholder (the first choice, `1`, `x`), so a command may refuse for another reason
first; the properties hold whatever it refuses.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from medsimp.cli.app import build_parser, command_leaves, main
from medsimp.cli.args import NOT_PATHS, OUTPUT_DESTS

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 30.0  # seconds a hostile run may take before it counts as a hang
MEMORY_LIMIT = 2 << 30  # resident bytes of the command and its children
# Outputs that replace what is there (medsimp.atomic). `--save-dir` (annotate serve) and
# `--report-dir` (refresh) are folders written into, never replaced: tests/test_destroy.py.
FOLDER_OUTPUTS = ("output",)
# Options taking a value that is not a path (names, codes, languages, lists of names).
NOT_FILES = NOT_PATHS | {
    "beam_arg", "language", "src_lang", "tgt_lang", "lang", "select", "host", "repo_id", "targets",
    "split", "mode", "config", "method", "gold_format", "rouge_tokenizer", "backend", "batch",
}  # fmt: skip
MARK = "LEAKMARK-every-command-7f3a"


LEAVES = {" ".join(path): parser for path, parser in command_leaves(build_parser())}


def _valued(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if a.nargs != 0 and not a.dest.startswith("_g") and not isinstance(a, argparse._HelpAction)
    ]


def _is_path(action: argparse.Action) -> bool:
    return (
        action.dest not in NOT_FILES
        and action.dest not in OUTPUT_DESTS
        and not action.choices
        and action.type in (None, str)
    )


def argv(
    command: str, path_value: str, outputs: dict[str, str] | None = None, every: bool = True
) -> list[str]:
    """`command` with every path argument (`every`, else only the first: the main input) set to
    `path_value`, required others to a placeholder, and `outputs` (dest -> value) for the output
    options it has."""
    out: list[str] = command.split()
    outputs = outputs or {}
    paths = [a for a in _valued(LEAVES[command]) if _is_path(a)]
    main_input = next((a for a in paths if a.required or not a.option_strings), paths[0] if paths else None)
    for action in _valued(LEAVES[command]):
        if action.dest in outputs:
            value = outputs[action.dest]
        elif _is_path(action) and (every or action is main_input):
            value = path_value
        elif action.required or not action.option_strings:
            value = str(next(iter(action.choices))) if action.choices else "1" if action.type is int else "x"
        else:
            continue
        out += [action.option_strings[0], value] if action.option_strings else [value]
    return out


def _has_input(command: str) -> bool:
    return any(_is_path(a) for a in _valued(LEAVES[command]))


def _folder_output(command: str) -> str | None:
    dests = {a.dest for a in _valued(LEAVES[command])}
    return next((d for d in FOLDER_OUTPUTS if d in dests), None)


def _run(args: list[str], cwd: Path) -> tuple[int | None, str, int]:
    """(exit code or None on a timeout, stderr then stdout, peak resident bytes) of `medsimp *args`."""
    (cwd / "params.yaml").write_text("{}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "medsimp.cli", "--params", str(cwd / "params.yaml"), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    peak, deadline = 0, time.monotonic() + TIMEOUT
    parent = psutil.Process(proc.pid)
    while proc.poll() is None and time.monotonic() < deadline and peak <= MEMORY_LIMIT:
        try:
            family = [parent, *parent.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in family if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.05)
    code = proc.poll()
    if code is None:
        os.killpg(proc.pid, 9)
    out, err = proc.communicate(timeout=30)
    return code, err.decode("utf-8", "replace") + "\n<stdout>\n" + out.decode("utf-8", "replace"), peak


def _one_line_ending(text: str) -> None:
    assert "Traceback" not in text, text[-1500:]


COMMANDS = sorted(LEAVES)
WITH_FOLDER_OUTPUT = [c for c in COMMANDS if _folder_output(c) and _has_input(c)]
WITH_INPUT = [c for c in COMMANDS if _has_input(c)]
# the aligner commands load their encoder before reading: 3-8 s each, over the fast loop's ~2 s
SLOW_LEAK = {"align calibrate", "align corpus", "align files", "align train"}


def test_the_suite_covers_every_command():
    from medsimp.cli.app import COMMANDS as REGISTRY

    assert {c.split()[0] for c in COMMANDS} == set(REGISTRY)
    assert len(COMMANDS) >= 25
    # no path argument (synth generates; build, refresh and evaluate stage read what params name:
    # evaluate stage's --scores, --metrics and --plots are outputs)
    without_input = set(COMMANDS) - set(WITH_INPUT)
    assert without_input <= {"synth notes", "synth cochrane", "build", "refresh", "evaluate stage"}, (
        without_input
    )


# --- destroy: an input inside the output folder ------------------------------------------------


@pytest.mark.parametrize("command", WITH_FOLDER_OUTPUT)
def test_destroy_an_input_inside_the_output_is_refused(command, tmp_path, monkeypatch, capsys):
    """In-process (`main(argv)`): the refusal comes before any work, so no child process, signal
    or memory is involved (the hang, memory and leak classes below run the installed command)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("{}\n")
    out = tmp_path / "OUT"
    out.mkdir()
    mine = out / "MY_ONLY_COPY.txt"
    mine.write_bytes(b"the user's only copy\n")
    dest = _folder_output(command)
    assert dest is not None
    code = main(
        ["--params", str(tmp_path / "params.yaml"), *argv(command, str(mine), {dest: str(out)}, every=False)]
    )
    err = capsys.readouterr().err
    _one_line_ending(err)
    assert code == 2 and "holds the input" in err.strip().splitlines()[-1], err[-800:]
    assert sorted(p.name for p in out.iterdir()) == ["MY_ONLY_COPY.txt"]
    assert mine.read_bytes() == b"the user's only copy\n"


# --- silent acceptance: a mistyped param -------------------------------------------------------


def _own_section(command: str) -> str:
    """The first params section the command reads (its PARAMS_SECTIONS, else its name)."""
    import importlib

    from medsimp.cli.app import COMMANDS as REGISTRY
    from medsimp.params_schema import Params

    top, *rest = command.split()
    module = importlib.import_module(f"medsimp.cli.commands.{REGISTRY[top]}")
    names = getattr(module, "PARAMS_SECTIONS", (top,))
    if isinstance(names, dict):
        names = names.get(rest[0] if rest else "", (top,))
    found = [n.replace("-", "_") for n in names if n.replace("-", "_") in Params.model_fields]
    return found[0] if found else "no_such_section"


@pytest.mark.parametrize("way", ["file", "set"])
@pytest.mark.parametrize("command", COMMANDS)
def test_silent_acceptance_a_mistyped_param_is_refused(command, way, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    section = _own_section(command)
    key = f"{section}.no_such_knob" if section != "no_such_section" else section
    params = tmp_path / "params.yaml"
    if way == "file":
        params.write_text(
            f"{section}:\n  no_such_knob: 1\n" if section != "no_such_section" else f"{key}: 1\n"
        )
        extra: list[str] = []
    else:
        params.write_text("{}\n")
        extra = ["--set", f"{key}=1"]
    code = main(["--params", str(params), *extra, *argv(command, str(tmp_path / "none"))])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and f"unknown param '{key}'" in last, last


# --- hang and memory: a FIFO and /dev/zero as every path argument -------------------------------


@pytest.mark.parametrize("command", WITH_INPUT)
def test_hang_a_fifo_as_every_input_never_blocks(command, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, text, _ = _run(argv(command, str(fifo), {"output": str(tmp_path / "o")}), tmp_path)
    assert code is not None, f"{command}: still running after {TIMEOUT} s on a FIFO"
    _one_line_ending(text)


@pytest.mark.parametrize(
    "command,key",
    [
        ("notes", "notes.input"),
        ("cochrane", "cochrane.input"),
        ("plaba", "plaba.input"),
        ("radiology", "radiology.input"),
    ],
)
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_hang_a_fifo_or_device_named_in_params_is_refused_before_reading(command, key, special, tmp_path):
    """Input paths in params reach the same check as path arguments: exit 2, one line naming the key."""
    path = special
    if special == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    code, text, _ = _run(["--set", f"{key}={path}", command, "--output", str(tmp_path / "o")], tmp_path)
    assert code == 2, f"{command}: exit {code} on {special} in params: {text[-300:]}"
    assert f"params {key}: {path}: a " in text and "not a regular file" in text, text[-300:]
    _one_line_ending(text)


@pytest.mark.parametrize("command", WITH_INPUT)
def test_memory_dev_zero_as_every_input_is_never_read_whole(command, tmp_path):
    code, text, peak = _run(argv(command, "/dev/zero", {"output": str(tmp_path / "o")}), tmp_path)
    assert peak <= MEMORY_LIMIT, f"{command}: {peak >> 20} MiB resident on /dev/zero"
    assert code is not None, f"{command}: still running after {TIMEOUT} s on /dev/zero"
    _one_line_ending(text)


# --- leak: marked text as every path argument --------------------------------------------------


@pytest.mark.parametrize(
    "command", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW_LEAK else c for c in WITH_INPUT]
)
def test_leak_marked_input_text_reaches_no_output(command, tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    hostile = tmp_path / "hostile.txt"
    hostile.write_bytes(f"{MARK} first\n{MARK} \xff\xfe second\n{MARK},{MARK}\n".encode("latin-1"))
    code, text, _ = _run(argv(command, str(hostile), {"output": str(work / "o")}), work)
    assert code is not None, f"{command}: still running after {TIMEOUT} s"
    _one_line_ending(text)
    stderr, stdout = text.split("\n<stdout>\n")
    assert MARK not in stderr, stderr[-800:]  # logs, notes, errors
    assert code == 0 or MARK not in stdout, stdout[-800:]  # a refusal prints no input text
    logs = [p for p in work.rglob("*") if p.is_file() and "dead_letter" not in p.parts]
    logs = [
        p
        for p in logs
        if p.suffix in (".log", ".md", ".html") or p.name.endswith(("stats.json", "metrics.json"))
    ]
    assert [p for p in logs if MARK.encode() in p.read_bytes()] == []
