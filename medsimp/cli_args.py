"""Argument helpers shared by subcommands (kept free of heavy imports so `--help` is fast)."""
from __future__ import annotations


def add_beam_arguments(parser) -> None:
    """The `--beam-arg` flag every Beam subcommand accepts."""
    parser.add_argument("--beam-arg", action="append", default=[], metavar="ARG",
                        help="extra Beam pipeline option, e.g. --beam-arg=--runner=FlinkRunner "
                             "(repeatable; overrides params.beam)")
