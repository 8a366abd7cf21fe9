"""Argument helpers shared by subcommands (kept free of heavy imports so `--help` is fast)."""

from __future__ import annotations

import argparse
import os
import re
import stat

GLOBAL_HELP = {
    "params": "params file (default: $MEDSIMP_PARAMS or ./params.yaml; an implicit ./params.yaml is used only "
    "when it names a medsimp section and is yours and not writable by everyone)",
    "verbose": "log at INFO level; show tracebacks",
    "set": "override a param, e.g. --set notes.min_tokens=12 (repeatable; checked against "
    "medsimp/params_schema.py: unknown keys and bad values are errors)",
    "force": "replace an output folder another medsimp command wrote (never one medsimp did "
    "not write, nor one holding an input)",
}


def global_options(depth: int) -> argparse.ArgumentParser:
    """The global options as a parent parser (`parents=[global_options(depth)]`) for a
    subcommand at nesting `depth` (1: `medsimp notes`, 2: `medsimp humaneval forms`). Each level
    has its own dests (`_g<depth>_*`, absent unless given) so a later level does not overwrite an
    earlier one; `medsimp.cli.app` merges them, the deepest last."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("global options (also accepted before the command)")
    group.add_argument(
        "--params",
        dest=f"_g{depth}_params",
        default=argparse.SUPPRESS,
        metavar="PARAMS",
        help=GLOBAL_HELP["params"],
    )
    group.add_argument(
        "-v",
        "--verbose",
        dest=f"_g{depth}_verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help=GLOBAL_HELP["verbose"],
    )
    group.add_argument(
        "--set",
        dest=f"_g{depth}_overrides",
        action="append",
        default=argparse.SUPPRESS,
        metavar="KEY=VALUE",
        help=GLOBAL_HELP["set"],
    )
    group.add_argument(
        "--force",
        dest=f"_g{depth}_force",
        action="store_true",
        default=argparse.SUPPRESS,
        help=GLOBAL_HELP["force"],
    )
    return parser


def add_beam_arguments(parser) -> None:
    """The `--beam-arg` flag every Beam subcommand accepts."""
    parser.add_argument(
        "--beam-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra Beam pipeline option, e.g. --beam-arg=--runner=FlinkRunner "
        "(repeatable; overrides params.beam)",
    )


# Path arguments of the Beam commands that their workers open: made absolute before the job is
# built, because a worker of another runner (the portable runner's external workers, Flink,
# Spark) does not run in the launcher's current folder.
WORKER_PATH_DESTS = ("input", "output", "index", "model")


def absolute_worker_paths(args: argparse.Namespace) -> None:
    """Make the local paths in `WORKER_PATH_DESTS` absolute (URLs, '' and '-' are kept)."""

    def absolute(value):
        if isinstance(value, list):
            return [absolute(v) for v in value]
        if isinstance(value, str) and value not in ("", "-") and "://" not in value:
            return os.path.abspath(value)
        return value

    for dest in WORKER_PATH_DESTS:
        if hasattr(args, dest):
            setattr(args, dest, absolute(getattr(args, dest)))


def add_job_arguments(parser, input_help: str, default_output: str) -> None:
    """--input/--output/--metrics/--beam-arg of a source job (cochrane, msd, plaba)."""
    parser.add_argument("--input", help=input_help)
    parser.add_argument(
        "--output",
        default=default_output,
        help="output folder, or an object-store prefix Beam reaches (s3://bucket/x; docs/refresh.md)",
    )
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


# Commands whose --output may be an object-store URL: the source jobs of public data, and the
# stages after them that publish through pipelines.jobs.objstore once their inputs' lineage is
# public (`pipelines.jobs.objstore.stage_output`; a builder's, `medsimp.corpora.stage.build`; a
# report's, `medsimp.report.stage.report`). MIMIC-derived text never leaves the machine (PhysioNet
# DUA): notes and radiology keep local folders, and a later stage whose input is MIMIC-derived or
# of unknown lineage is refused in one line.
URL_OUTPUT_COMMANDS = frozenset(
    {"cochrane", "msd", "plaba", "link", "align corpus", "filter", "report"}
    | {f"build {name}" for name in ("multicochrane", "medlane", "msd", "plaba", "radiology")}
)

# Output file flags (dests) that may be object-store URLs, by command: `evaluate files` writes
# them locally and publishes them under their one folder (`medsimp.evaluation.store`), refused
# there when an input is known to be MIMIC-derived or of another non-public source.
URL_OUTPUT_FILES = {"evaluate files": frozenset({"json", "sentence_level", "report"})}


# Arguments naming what a command writes; every other path argument is an input, which no
# output folder may hold (medsimp.atomic checks them all, whichever command runs).
OUTPUT_DESTS = frozenset(
    {
        "output",
        "metrics",
        "metrics_dir",
        "plots",
        "json",
        "scores",
        "sentence_level",
        "report",
        "report_text",
        "report_dir",
        "save_dir",
    }
)


# Namespace entries that are never paths: subcommand names, flags, parsed params.
NOT_PATHS = frozenset({"command", "action", "kind", "name", "overrides", "params_data", "params_dir"})


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    return []


def command_inputs(args, section: dict | None = None, base=".") -> tuple[list[str], list[str]]:
    """(paths the command line names as inputs, paths its params `section` names), each one
    that exists. An output folder may neither be nor hold the first; it may not hold the second
    (a params key can be one subcommand's output and another's input, e.g. humaneval.forms)."""
    named = [
        s
        for dest, value in vars(args).items()
        if not dest.startswith("_") and dest not in OUTPUT_DESTS and dest not in NOT_PATHS
        for s in _strings(value)
    ]
    from_params = [
        os.path.join(str(base), s)
        for key, v in (section or {}).items()
        if key.rsplit(".", 1)[-1] not in OUTPUT_DESTS
        for s in _strings(v)
    ]
    return (
        [p for p in named if p and "\0" not in p and os.path.lexists(p)],
        [p for p in from_params if "\0" not in p and os.path.lexists(p)],
    )


# A shell's process substitution `<(cmd)`: a pipe the line-file readers read once (medsimp.inputs).
_FD_PATH = r"^/(?:dev|proc/self)/fd/\d+$"


def _special_kind(path: str) -> str | None:
    """'a FIFO' or 'a device or socket' when `path` is one (worded as medsimp.inputs words it);
    None for anything else, an absent path, `/dev/null` and a shell's `<(cmd)`."""
    if not path or "\0" in path or path == os.devnull:
        return None
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None  # absent or unreadable: the command names the fault
    if stat.S_ISFIFO(mode):
        return None if re.match(_FD_PATH, path) else "a FIFO"
    return "a device or socket" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode) else None


def check_special_inputs(args, section: dict | None = None, base=".") -> None:
    """InputError (exit 2) for a path argument, or a path in the command's params `section`
    (relative to `base`), that is a named FIFO (opening it blocks until a writer comes), a device
    (`/dev/zero` never ends) or a socket, before the command runs: every command, whichever
    reader it uses. `/dev/null` (empty) and `<(cmd)` (`/dev/fd/N`, refused later by readers
    that cannot read a pipe once) pass."""
    from medsimp.errors import InputError

    for dest, value in vars(args).items():
        if dest.startswith("_") or dest in OUTPUT_DESTS or dest in NOT_PATHS:
            continue
        for path in _strings(value):
            kind = _special_kind(path)
            if kind:
                positional = dest in ("file", "builder", "inputs", "folder")
                flag = dest.upper() if positional else f"--{dest.replace('_', '-')}"
                raise InputError(f"{flag} {path}: {kind}, not a regular file (use `-` for standard input)")
    for key, value in (section or {}).items():
        if key.rsplit(".", 1)[-1] in OUTPUT_DESTS:
            continue
        for path in _strings(value):
            kind = _special_kind(os.path.join(str(base), path)) if path else None
            if kind:
                raise InputError(f"params {key}: {path}: {kind}, not a regular file")
