"""The docs cannot drift: every command they show exists and parses, and commands sit in fenced blocks."""

from __future__ import annotations

import ast
import contextlib
import io

import pytest
from docs_blocks import DOCS, ROOT, SHELL_LANGS, all_blocks, commands, inline_commands
from dvc.cli import parse_args as dvc_parse_args

from medsimp.cli import build_parser

BLOCKS = all_blocks()
SHELL = [b for b in BLOCKS if b.lang in SHELL_LANGS]


def _parse(parse, argv: list[str]) -> str | None:
    """None when argv parses, else the parser's complaint."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parse(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit {exc.code}"
    except Exception as exc:  # dvc raises DvcParserError
        return f"{type(exc).__name__}: {err.getvalue().strip().splitlines()[-1:] or exc}"
    return None


def _medsimp(argv: list[str]) -> str | None:
    if argv[1:2] in (["--help"], ["--version"]) or "--help" in argv:
        return None
    return _parse(build_parser().parse_args, argv[1:])


def _dvc(argv: list[str]) -> str | None:
    return _parse(dvc_parse_args, argv[1:])


def test_every_block_names_its_language():
    unnamed = [b.where for b in BLOCKS if not b.lang]
    assert not unnamed, f"fenced blocks without a language (use text for diagrams): {unnamed}"


def test_shell_commands_sit_in_fenced_blocks():
    inline = [f"{p.relative_to(ROOT)}: `{c}`" for p in DOCS for c in inline_commands(p)]
    assert not inline, "inline commands (put them in a ```bash block):\n" + "\n".join(inline)


@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.where)
def test_shell_block_commands_parse(block):
    problems = []
    for argv in commands(block):
        tool = argv[0].rsplit("/", 1)[-1]
        if tool == "medsimp":
            problem = _medsimp(argv)
        elif tool == "dvc":
            problem = _dvc(argv)
        else:
            continue
        if problem:
            problems.append(f"{' '.join(argv)}: {problem}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "python"], ids=lambda b: b.where)
def test_python_blocks_compile(block):
    ast.parse(block.text)


def test_some_blocks_are_runnable():
    runnable = [b for b in BLOCKS if b.runnable]
    assert {b.lang for b in runnable} >= {"bash", "python"}
    assert any(b.path.name == "README.md" for b in runnable)


def test_command_parser_catches_a_drifted_command():
    assert _dvc(["dvc", "repro", "-S", "a=b"])  # DVC 3 has `dvc exp run -S`, not `dvc repro -S`
    assert _dvc(["dvc", "exp", "run", "-S", "a=b"]) is None
    assert _medsimp(["medsimp", "no-such-command"])
    assert _medsimp(["medsimp", "stats", "--no-such-flag"])
