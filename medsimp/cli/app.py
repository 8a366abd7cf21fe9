"""The `medsimp` console command: one subcommand per pipeline stage.

Each subcommand lives in `medsimp.cli.commands.<name>` and exposes
`HELP` (one line), `add_arguments(parser)` and `run(args) -> int`.
Modules keep heavy imports inside `run` so `medsimp --help` stays fast.
The global options `--params`, `--set` and `-v` are accepted before or after the
subcommand (at any depth: `medsimp humaneval forms --set humaneval.seed=1`).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from medsimp.cli.args import GLOBAL_HELP, global_options

# name -> module under medsimp.cli.commands, in DAG order.
COMMANDS: dict[str, str] = {
    "init": "init",
    "synth": "synth",
    "notes": "notes",
    "select": "select",
    "cochrane": "cochrane",
    "msd": "msd",
    "plaba": "plaba",
    "umls-index": "umls_index",
    "link": "link",
    "align": "align",
    "filter": "filter",
    "build": "build",
    "train": "train",
    "evaluate": "evaluate",
    "stats": "stats",
    "publish": "publish",
    "refresh": "refresh",
    "radiology": "radiology",
    "simplify": "simplify",
    "humaneval": "humaneval",
    "annotate": "annotate",
    "report": "report",
}


def _load(module: str):
    return importlib.import_module(f"medsimp.cli.commands.{module}")


def version_string() -> str:
    """`medsimp <version> (git <revision>)`; the revision is `unknown` outside a git checkout
    of this code (and gets `-dirty` when tracked files have changed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("medsimp")
    except PackageNotFoundError:
        ver = "unknown"
    root = Path(__file__).resolve().parents[2]

    def git(*cmd: str) -> str:
        out = subprocess.run(["git", *cmd], cwd=root, capture_output=True, text=True, check=True, timeout=10)
        return out.stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:
            raise ValueError("medsimp is not the top of this git checkout")
        rev = git("rev-parse", "--short=12", "HEAD")
        if git("status", "--porcelain", "--untracked-files=no"):
            rev += "-dirty"
    except (OSError, ValueError, subprocess.SubprocessError):
        rev = "unknown"
    return f"medsimp {ver} (git {rev or 'unknown'})"


class _VersionAction(argparse.Action):
    """--version: computed only when asked (it runs git)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_string())
        parser.exit()


def _merge_globals(args: argparse.Namespace) -> None:
    """Fold `_g<depth>_*` (options given after a subcommand) into params / verbose / overrides."""
    late = sorted(
        (k for k in vars(args) if k.startswith("_g") and k[2:3].isdigit()),
        key=lambda k: int(k[2 : k.index("_", 2)]),
    )
    for key in late:
        value = getattr(args, key)
        delattr(args, key)
        name = key[key.index("_", 2) + 1 :]
        if name == "params":
            args.params = value
        elif name == "verbose":
            args.verbose = args.verbose or bool(value)
        elif name == "overrides":
            args.overrides = [*args.overrides, *value]
        elif name == "force":
            args.force = args.force or bool(value)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that keeps its subcommands' action (`subcommands`, None without), so
    the command tree is walked through public attributes (`Action.choices`), not argparse's
    private `_actions`. Subparsers are made of this class too (argparse's default)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands: argparse.Action | None = None

    def add_subparsers(self, **kwargs):
        self.subcommands = super().add_subparsers(**kwargs)
        return self.subcommands


def command_leaves(parser: Parser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Parser]]:
    """(command path, parser) for every parser that runs something: the leaves of the command
    tree (`align corpus`, `notes`, ...), aliases left out. Tests take the command list from here,
    so a new command is covered by construction."""
    if path and parser.subcommands is None:
        yield path, parser
    if parser.subcommands is not None:
        seen: set[int] = set()
        for name, child in dict(parser.subcommands.choices or {}).items():
            if id(child) not in seen:  # an alias maps to a parser already listed
                seen.add(id(child))
                yield from command_leaves(child, (*path, name))


def command_module(parser: Parser, words: list[str]) -> str | None:
    """The module that runs `medsimp <words...>` (the deepest `_module` default on the way down
    the command tree; words past the last subcommand are ignored), or None for no command."""
    module = None
    for word in words:
        choices = dict(parser.subcommands.choices or {}) if parser.subcommands is not None else {}
        if word not in choices:
            break
        parser = choices[word]
        found = parser.get_default("_module")
        module = found.__name__ if found is not None else module
    return module


def build_parser() -> Parser:
    parser = Parser(
        prog="medsimp",
        description=(
            "medsimp: build sentence-aligned complex->plain medical corpora "
            "(Beam jobs, aligners, HF builders) and train/evaluate simplifiers."
        ),
    )
    parser.add_argument("--params", default=None, help=GLOBAL_HELP["params"])
    parser.add_argument("-v", "--verbose", action="store_true", help=GLOBAL_HELP["verbose"])
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=GLOBAL_HELP["set"]
    )
    parser.add_argument("--force", action="store_true", help=GLOBAL_HELP["force"])
    parser.add_argument(
        "--version", action=_VersionAction, help="print the medsimp version and git revision, then exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        try:
            mod = _load(module)
        except ModuleNotFoundError as exc:  # a stage not built yet
            if exc.name != f"medsimp.cli.commands.{module}":
                raise
            continue
        p = sub.add_parser(
            name,
            help=mod.HELP,
            description=(mod.__doc__ or mod.HELP).strip(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
            parents=[global_options(1)],
        )
        mod.add_arguments(p)
        p.set_defaults(_module=mod)
    return parser


def _check_utf8_args(args: argparse.Namespace) -> None:
    """Refuse an argument (a file name) that is not UTF-8: Python holds its bytes as lone
    surrogates, which no output, record or Beam coder can encode."""
    from medsimp.errors import UsageError

    for dest, value in vars(args).items():
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str) or dest.startswith("_"):
                continue
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                byte = ord(item[exc.start]) - 0xDC00 if "\udc80" <= item[exc.start] <= "\udcff" else None
                what = f"byte 0x{byte:02x}" if byte is not None else "a character"
                raise UsageError(
                    f"--{dest.replace('_', '-')}: the name holds {what} (at character {exc.start + 1}) "
                    "that is not UTF-8; rename the file"
                ) from None


# The signals this command received (SIGTERM, SIGINT), set by its handler. The command's
# result is decided by this flag, not by the exception type: a library that runs the work
# (Beam's in-process runner) wraps the handler's SystemExit or KeyboardInterrupt in its own
# error (RuntimeError "KeyboardInterrupt [while running ...]"), which would read as a crash.
_SIGNALLED: list[int] = []


def _terminate(signum, frame):
    """SIGTERM (and Ctrl-C): note it, then unwind (temp outputs are removed on the way out)."""
    _SIGNALLED.append(signum)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def _interrupted(args: argparse.Namespace) -> int | None:
    """After a signal, whatever exception the unwinding became: the one interrupt line and
    128 + the signal's number (130 Ctrl-C, 143 SIGTERM); None when no signal came."""
    if not _SIGNALLED:
        return None
    signum = _SIGNALLED[0]
    print(f"medsimp {command_name(args)}: interrupted by {signal.Signals(signum).name}", file=sys.stderr)
    return 128 + signum


def command_name(args: argparse.Namespace) -> str:
    """What an output's marker names as its writer: the subcommand and its target
    (`build msd`, `humaneval forms`), so one builder never silently replaces another."""
    parts = [args.command]
    for attr in ("name", "action", "kind"):
        value = getattr(args, attr, None)
        if isinstance(value, str):
            parts.append(value)
    return " ".join(parts)


# Libraries' own chatter (progress bars, advisory notes) off unless -v; worker processes
# inherit these. Set before any of them is imported.
QUIET_ENV = {
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "PYTHONWARNINGS": "ignore",
    "MEDSIMP_WORKER_STDERR": "quiet",  # pipelines/jobs/worker.py
}


def configure_logging(verbose: bool) -> None:
    """The one logging set-up: our own messages (`medsimp.*`, `pipelines.*`, `alignment.*`, `training.*` loggers) at INFO, plain,
    on stderr; every library (Beam, HF, spaCy, ...) only at ERROR, and Python warnings hidden.
    `-v`: libraries at INFO with logger names, medsimp at DEBUG, warnings shown."""
    if not verbose:
        for key, value in QUIET_ENV.items():
            os.environ.setdefault(key, value)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(levelname)s %(name)s: %(message)s" if verbose else "%(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO if verbose else logging.ERROR)
    for ours in ("medsimp", "pipelines", "alignment", "training"):
        logging.getLogger(ours).setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.captureWarnings(True)
    if not verbose:
        import warnings

        warnings.simplefilter("ignore")


def _announce(args: argparse.Namespace) -> None:
    """One line saying what the stage does and on what (before any work)."""
    where = [
        f"{flag} {getattr(args, dest)}"
        for flag, dest in (("from", "input"), ("to", "output"))
        if isinstance(getattr(args, dest, None), str)
    ]
    logging.getLogger("medsimp").info(
        "medsimp %s: %s%s", command_name(args), args._module.HELP, f" ({', '.join(where)})" if where else ""
    )


def _section_or_none(args: argparse.Namespace) -> dict | None:
    """The params sections the command reads (its module's `PARAMS_SECTIONS`, a tuple or a dict
    by subcommand; else the section named like the command), with their defaults, as one plain dict keyed `section.key`, whose
    string values `command_inputs` walks; None when there is no such section."""
    params = args.params_data
    names = getattr(args._module, "PARAMS_SECTIONS", (args.command,))
    if isinstance(names, dict):  # by subcommand
        names = names.get(getattr(args, "action", None), (args.command,))
    found = {
        f"{name}.{key}": value
        for name in names
        if name in type(params).model_fields
        for key, value in getattr(params, name).model_dump().items()
    }
    return found or None


def _check_output_name(output: str, url_ok: bool = False) -> None:
    """`--output ''` is not the default, and `--output .` (or any folder holding the current one)
    is not a folder medsimp may replace: one line each (issue 35 item 16). A URL is refused
    unless the command publishes to object stores (`url_ok`, pipelines.jobs.objstore)."""
    from medsimp.errors import UsageError

    if not output.strip():
        raise UsageError("--output is empty: give a path (or leave the flag out for the params default)")
    from medsimp.atomic import check_local, is_url

    if url_ok and is_url(output):
        return
    check_local(output, "--output")
    where, here = os.path.realpath(output), os.path.realpath(os.getcwd())
    if where == here or here.startswith(where.rstrip(os.sep) + os.sep):
        raise UsageError(
            f"--output {output} is the current folder or holds it: give a new folder for the output"
        )


def _check_url_holds_no_input(output: str, inputs) -> None:
    """An object-store output prefix may not hold one of the command's inputs (its old runs
    are deleted when a new one is published)."""
    from medsimp.errors import UsageError

    root = output.rstrip("/") + "/"
    for item in inputs:
        if item and str(item).startswith(root):
            raise UsageError(f"--output {output} holds the input {item}; write the output to another prefix")


# The flags through which commands name output files (besides --output, which may be a folder),
# those of them that may name standard output (`-`, /dev/stdout: medsimp.evaluation.report), and
# the folders (or, for `evaluate stage --plots`, a file) commands write into.
OUTPUT_FILE_FLAGS = ("metrics", "json", "scores", "sentence_level", "report", "report_text")
STDOUT_FLAGS = ("json", "sentence_level")
OUTPUT_FOLDER_FLAGS = ("plots", "save_dir", "report_dir", "metrics_dir")


def _flag(dest: str) -> str:
    return f"--{dest.replace('_', '-')}"


def _check_no_empty(args: argparse.Namespace) -> None:
    """`--json ''`, `--input ''`: an empty value is no value (the command would silently take
    the default or write nothing): one line naming the flag (issue 54)."""
    from medsimp.cli.args import NOT_PATHS
    from medsimp.errors import UsageError

    for dest, value in vars(args).items():
        if dest.startswith("_") or dest in NOT_PATHS:
            continue
        if value == "" or (isinstance(value, list) and "" in value):
            raise UsageError(f"{_flag(dest)} is empty: give a value (or leave the flag out for the default)")


def _check_outputs(
    args: argparse.Namespace, url_ok: bool, url_files: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """Every output path the command line names, checked one by one and as a set before any
    work (issue 54): each where an output can be written (`places.check_output_path`); a file
    not a link, folder, device or input, nor a file medsimp did not write (decided when written:
    same bytes or not); no two naming one path, none inside another. A URL is refused unless
    the command publishes it (`url_ok`: its --output; `url_files`: those file flags, checked by
    the command). Returns (flag, path) for the local ones, whose locks the command holds while
    it runs."""
    from medsimp import atomic
    from medsimp.errors import UsageError
    from medsimp.places import check_output_path

    found: list[tuple[str, str]] = []
    output = getattr(args, "output", None)
    if isinstance(output, str):
        _check_output_name(output, url_ok=url_ok)
        if atomic.is_url(output):
            _check_url_holds_no_input(output, [getattr(args, "input", None) or ""])
        else:
            atomic.check_holds_no_input(output)  # before any work (atomic_dir checks again)
            if os.path.isdir(output) and not os.path.islink(output):  # another command's folder: now
                atomic.check_output_target(
                    output, command_name(args), force=bool(getattr(args, "force", False))
                )
            found.append(("output", output))
    for dest in (*OUTPUT_FOLDER_FLAGS, *OUTPUT_FILE_FLAGS):
        value = getattr(args, dest, None)
        if not isinstance(value, str) or (dest in STDOUT_FLAGS and atomic.is_stdout(value)):
            continue
        if dest in url_files and atomic.is_url(value):
            continue  # published by the command (pipelines.jobs.objstore), which checks it
        atomic.check_local(value, _flag(dest))
        found.append((dest, value))
    for dest, value in found:
        check_output_path(value, _flag(dest))
        if dest in OUTPUT_FILE_FLAGS:
            # a link, folder, FIFO or device, or an input: refused now, not after the work;
            # a file medsimp did not write is decided when it is written (same bytes or not)
            atomic.check_file_target(value, same_content_ok=True)
    where = [(dest, value, Path(os.path.realpath(value))) for dest, value in found]
    for i, (dest, value, path) in enumerate(where):
        for other, other_value, other_path in where[:i]:
            if path == other_path:
                raise UsageError(
                    f"{_flag(other)} {other_value} and {_flag(dest)} {value} name one path: "
                    "one output would replace the other; give each its own"
                )
            for (a, a_value, a_path), (b, b_value, b_path) in (
                ((dest, value, path), (other, other_value, other_path)),
                ((other, other_value, other_path), (dest, value, path)),
            ):
                if b_path in a_path.parents:
                    raise UsageError(
                        f"{_flag(a)} {a_value} is inside {_flag(b)} {b_value}: write it outside that output"
                    )
    return found


class _Stdout:
    """Standard output as the commands see it: a write or flush the system refuses (`> /dev/full`,
    a closed pipe, stdout closed with `>&-`) raises `UsageError` naming standard output and
    what is wrong, instead of an internal error (issue 54). After a failure the descriptor is
    pointed at /dev/null, so the interpreter's last flush at exit cannot print a second error.
    Everything else is the real stream's."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def _failed(self, exc: OSError | None) -> Exception:
        from medsimp.errors import UsageError

        if exc is None:
            return UsageError("standard output is closed: give the command somewhere to write (e.g. > FILE)")
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        return UsageError(f"standard output cannot be written ({exc.strerror or exc})")

    def write(self, text: str) -> int:
        if self._stream is None:
            raise self._failed(None)
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise self._failed(exc) from None

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._failed(exc) from None

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str):
        if self._stream is None:
            raise AttributeError(f"standard output is closed (no {name})")
        return getattr(self._stream, name)


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    real = sys.stdout
    if real is None and not _fd_open(1):  # stdout closed: descriptor 1 must not become an output file
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
    sys.stdout = _Stdout(real)
    try:
        return _main(argv)
    except Exception as exc:  # standard output refused while parsing (--help, --version)
        from medsimp.errors import MedsimpError

        if not isinstance(exc, MedsimpError):
            raise
        print(f"medsimp: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        sys.stdout = real


def console() -> NoReturn:
    """The `medsimp` program (its console script and `python -m medsimp.cli`): `main`, then exit
    with its code. Before exiting, every object is frozen out of the garbage collector's reach
    (`gc.freeze`), so the interpreter's last full collection does not walk the tables a command
    loaded (CMUdict, language models, tokenizer caches): 0.08-0.15 s of every `evaluate files`
    run (issue 57 §1). atexit handlers still run; the memory goes back with the process; Python
    never promised `__del__` at exit. Tests call `main` in their own process, never this."""
    code = main()
    gc.freeze()
    sys.exit(code)


def _main(argv: list[str] | None) -> int:
    from medsimp import siblings

    clash = siblings.check()  # before any command module imports a domain package
    if clash:
        print(f"medsimp: {clash}", file=sys.stderr)
        return 2  # EXIT_USAGE
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # medsimp uses no pydantic plugin; without this pydantic scans every installed distribution's
    # entry points when it builds the first model (15-20 ms of every command that reads params)
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    parser = build_parser()
    args = parser.parse_args(argv)
    _merge_globals(args)
    configure_logging(args.verbose)
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2  # EXIT_USAGE: no command given
    from medsimp import atomic

    atomic.configure(command=command_name(args), force=args.force)
    _SIGNALLED.clear()
    old_handlers = {signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when ignored (nohup, &)
        old_handlers[signal.SIGINT] = signal.signal(signal.SIGINT, _terminate)
    try:
        return _dispatch(args)
    finally:
        for signum, handler in old_handlers.items():
            signal.signal(signum, handler)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command `main` parsed: every check before any work, then the work; each way it
    can end is one line and an exit code."""
    from medsimp import atomic, stats
    from medsimp.cli.args import (
        URL_OUTPUT_COMMANDS,
        URL_OUTPUT_FILES,
        absolute_worker_paths,
        check_special_inputs,
        command_inputs,
    )
    from medsimp.config import load_params, params_dir, params_hash
    from medsimp.errors import EXIT_FAILED, EXIT_USAGE, MedsimpError

    try:
        with contextlib.ExitStack() as held:  # the outputs' locks, held until the command ends
            _check_utf8_args(args)
            _check_no_empty(args)
            # a params file named by --params or MEDSIMP_PARAMS must exist; only the implicit
            # ./params.yaml may be absent (defaults)
            named_file = args.params is not None or bool(os.environ.get("MEDSIMP_PARAMS"))
            args.params = args.params or os.environ.get("MEDSIMP_PARAMS") or "params.yaml"
            args.params_named = named_file  # a command that reads the file again reads it the same way
            args.params_data = load_params(args.params, args.overrides, required=named_file)
            args.params_dir = params_dir(args.params)
            stats.record_run(params_hash=params_hash(args.params_data))  # what this stage ran with
            # every input reaches every output folder's guard, whichever command runs
            section = _section_or_none(args)
            # a FIFO or device would block or never end in any reader
            check_special_inputs(args, section, args.params_dir)
            named, from_params = command_inputs(args, section, args.params_dir)
            atomic.configure(command_name(args), args.force, inputs=named, params_inputs=from_params)
            name = command_name(args)
            outputs = _check_outputs(
                args, name in URL_OUTPUT_COMMANDS, URL_OUTPUT_FILES.get(name, frozenset())
            )
            for dest, value in outputs:  # held from here until the command ends (issue 54)
                held.enter_context(atomic.hold(value, _flag(dest)))
            _announce(args)
            if hasattr(args, "beam_arg"):  # a Beam job: its workers may run in another folder
                absolute_worker_paths(args)
            code = int(args._module.run(args) or 0)
            sys.stdout.flush()  # what the command printed reached its place, or one line
            return code
    except MedsimpError as exc:
        if (stopped := _interrupted(args)) is not None:
            return stopped
        if args.verbose:
            logging.exception("%s failed", args.command)
        print(f"medsimp {command_name(args)}: {exc}", file=sys.stderr)
        return exc.exit_code
    except SystemExit as exc:
        if (stopped := _interrupted(args)) is not None:
            return stopped
        if not isinstance(exc.code, str):  # an exit status: keep it
            raise
        print(f"medsimp {command_name(args)}: {exc.code}", file=sys.stderr)  # SystemExit("why"): usage
        return EXIT_USAGE
    except FileNotFoundError as exc:  # a named input that is not there: bad input
        if (stopped := _interrupted(args)) is not None:
            return stopped
        if args.verbose:
            logging.exception("%s failed", args.command)
        print(
            f"medsimp {command_name(args)}: not found: {exc.filename or exc} (check the path)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except KeyboardInterrupt:
        if (stopped := _interrupted(args)) is not None:
            return stopped
        print(f"medsimp {command_name(args)}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one line, never record text; -v shows the traceback
        if (stopped := _interrupted(args)) is not None:
            return stopped
        if args.verbose:
            raise
        from medsimp.extras import missing_extra

        extra = missing_extra(exc) if isinstance(exc, ModuleNotFoundError) else None
        if extra:  # an optional dependency this command needs is not installed
            print(f"medsimp {command_name(args)}: {extra}", file=sys.stderr)
            return EXIT_USAGE
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb else "?"
        print(
            f"medsimp {command_name(args)}: internal error {type(exc).__name__} at {where} "
            "(rerun with -v for the traceback)",
            file=sys.stderr,
        )
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
