"""One CLI grammar: a walk over every subcommand's parser checks the rules every command keeps."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from medsimp.cli.app import build_parser, command_leaves, main

GLOBALS = {"--params", "--set", "-v", "--verbose", "--force"}
READERS = {"--hyp", "--ref", "--src", "--tgt"}  # line files a user may pipe in


COMMANDS = list(command_leaves(build_parser()))


def _minimal_argv(parser: argparse.ArgumentParser) -> list[str]:
    """Values for the required options and positionals, so only the flag under test can fail."""
    argv: list[str] = []
    for action in parser._actions:
        value = (
            str(next(iter(action.choices))) if action.choices else "1" if action.type in (int, float) else "x"
        )
        if action.option_strings and action.required:
            argv += [action.option_strings[0], value]
        elif not action.option_strings and action.nargs in (None, 1):
            argv.append(value)
    return argv


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def test_the_walk_reaches_every_command():
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {
        "notes",
        "evaluate files",
        "evaluate stage",
        "train",
        "humaneval forms",
        "synth notes",
        "annotate ingest",
    } <= names
    assert len(names) >= 25


@pytest.mark.parametrize("path,parser", COMMANDS, ids=lambda x: " ".join(x) if isinstance(x, tuple) else "")
def test_every_command_keeps_the_grammar(path, parser):
    options = _options(parser)
    assert GLOBALS <= options, f"global options not accepted after {' '.join(path)}"
    assert not options & {"--out", "--outdir", "--output-dir", "-o"}, "a written folder or file is --output"
    undocumented = [a.option_strings[0] for a in parser._actions if a.option_strings and a.help is None]
    assert not undocumented, f"{' '.join(path)}: options without help: {undocumented}"
    for action in parser._actions:
        if set(action.option_strings) & READERS:
            assert "- = stdin" in (action.help or ""), f"{action.option_strings[0]} does not read stdin"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*path, *_minimal_argv(parser), "--no-such-flag"])
    assert exit_info.value.code == 2 and "unrecognized arguments: --no-such-flag" in err.getvalue()


def test_global_options_work_before_and_after_the_command(capsys):
    for argv in (
        ["--set", "filter.treshold=0.9", "stats", "--input", "out/linked/msd"],
        ["stats", "--input", "out/linked/msd", "--set", "filter.treshold=0.9"],
    ):
        assert main(argv) == 2
        assert "did you mean 'filter.threshold'" in capsys.readouterr().err.strip().splitlines()[-1]
    assert main(["stats", "--input", "out/linked/msd", "--set", "filter.threshold=abc"]) == 2
    assert "must be a number, got 'abc'" in capsys.readouterr().err.strip().splitlines()[-1]


def test_version_names_the_release_and_the_revision(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("medsimp ") and "git " in out


def test_no_command_writes_a_tracked_file_by_default():
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    tracked = set(
        subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout.split()
    )
    tracked_dirs = {str(Path(p).parent) for p in tracked}
    for path, parser in COMMANDS:
        for action in parser._actions:
            written = action.dest in ("output", "metrics", "plots", "json", "report", "scores")
            if written and isinstance(action.default, str):
                target = action.default.rstrip("/")
                assert target not in tracked and target not in tracked_dirs, (
                    f"{' '.join(path)} --{action.dest}"
                )
