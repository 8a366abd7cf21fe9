"""The docs cannot drift: every command they show exists and parses, and commands sit in fenced blocks."""

from __future__ import annotations

import ast
import contextlib
import io
import re

import pytest
from docs_blocks import DOCS, ROOT, SHELL_LANGS, all_blocks, commands, inline_commands, outside_fences
from dvc.cli import parse_args as dvc_parse_args

from medsimp.cli.app import build_parser

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


def _options(parser) -> set[str]:
    """Every long option of a parser and its subparsers."""
    import argparse

    found = set()
    for action in parser._actions:
        found.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
    return found


_FLAG = re.compile(r"(?<!\S)(--[a-z][a-z0-9-]*)(?=[\s=]|$)")
_GONE = re.compile(r"\b(gone|removed|no longer|was renamed|old)\b")


def prose_flags() -> list[tuple[str, str, str]]:
    """(file, flag, span) for every `--flag` the prose names in inline code, when the span is a
    bare flag or a `medsimp ...` command (other tools' and Beam's snake_case options aside), on a
    line that does not say the flag is gone."""
    found = []
    for path in DOCS:
        for line in outside_fences(path).splitlines():
            if _GONE.search(line):
                continue
            for span in re.findall(r"`([^`\n]+)`", line):
                first = span.split()[0]
                if first != "medsimp" and not first.startswith("--"):
                    continue
                found += [(str(path.relative_to(ROOT)), flag, span) for flag in _FLAG.findall(span)]
    return found


def _beam_options() -> set[str]:
    """Beam's pipeline options (docs/refresh.md names them for `--beam-arg`)."""
    import argparse

    from apache_beam.options.pipeline_options import PipelineOptions

    found: set[str] = set()
    todo = list(PipelineOptions.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
        try:
            cls._add_argparse_args(parser)
        except Exception:  # noqa: BLE001 - an options class that needs more than a parser
            continue
        found |= _options(parser)
    return found


def _script_options() -> set[str]:
    """The flags of scripts/*.py (their argparse calls)."""
    pattern = re.compile(r"add_argument\(\s*\"(--[a-z][a-z0-9-]*)\"")
    return {
        m for f in (ROOT / "scripts").glob("*.py") for m in pattern.findall(f.read_text(encoding="utf-8"))
    }


def test_every_flag_the_prose_names_exists_issue_29():
    """A flag named in a sentence (not a fenced command) exists in medsimp's or DVC's parser:
    `--i-accept-physionet-dua` stayed in the docs after it was removed (issue 29)."""
    from dvc.cli.parser import get_main_parser

    other_tools = {"--sdist"}  # `python -m build`'s, named in docs/refresh.md
    known = _options(build_parser()) | _options(get_main_parser()) | _beam_options() | _script_options()
    known |= other_tools
    missing = sorted(
        {f"{where}: {flag} (in `{span}`)" for where, flag, span in prose_flags() if flag not in known}
    )
    assert not missing, "flags the CLI does not have:\n" + "\n".join(missing)


def test_the_prose_flag_check_catches_a_removed_flag():
    assert _FLAG.findall("medsimp publish medlane --i-accept-physionet-dua") == ["--i-accept-physionet-dua"]
    assert "--i-accept-physionet-dua" not in _options(build_parser())
    assert not _GONE.search("`medsimp publish` refuses those unless `--private`")
