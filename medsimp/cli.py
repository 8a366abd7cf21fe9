"""The `medsimp` console command: one subcommand per pipeline stage.

Each subcommand lives in `medsimp.commands.<name>` and exposes
`HELP` (one line), `add_arguments(parser)` and `run(args) -> int`.
Modules keep heavy imports inside `run` so `medsimp --help` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

# name -> module under medsimp.commands, in DAG order.
COMMANDS: dict[str, str] = {
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
}


def _load(module: str):
    return importlib.import_module(f"medsimp.commands.{module}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="medsimp",
        description=(
            "medsimp: build sentence-aligned complex->plain medical corpora "
            "(Beam jobs, aligners, HF builders) and train/evaluate simplifiers."
        ),
    )
    parser.add_argument("--params", default=os.environ.get("MEDSIMP_PARAMS", "params.yaml"),
                        help="params file (default: ./params.yaml)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a param, e.g. --set notes.min_tokens=12 (repeatable)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        try:
            mod = _load(module)
        except ModuleNotFoundError as exc:  # a stage not built yet
            if exc.name != f"medsimp.commands.{module}":
                raise
            continue
        p = sub.add_parser(name, help=mod.HELP, description=(mod.__doc__ or mod.HELP).strip(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(_module=mod)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        for noisy in ("apache_beam", "absl", "datasets", "transformers", "urllib3"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2
    from medsimp.config import load_params
    from medsimp.errors import EXIT_FAILED, MedsimpError

    try:
        args.params_data = load_params(args.params, args.overrides)
        return int(args._module.run(args) or 0)
    except MedsimpError as exc:
        if args.verbose:
            logging.exception("%s failed", args.command)
        print(f"medsimp {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"medsimp {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one line, never record text; -v shows the traceback
        if args.verbose:
            raise
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb else "?"
        print(f"medsimp {args.command}: internal error {type(exc).__name__} at {where} "
              "(rerun with -v for the traceback)", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
