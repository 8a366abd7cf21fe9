"""Errors a command reports as one line, and the exit code each maps to.

The CLI catches `MedsimpError` and prints `medsimp <command>: <message>`; `-v` adds the
traceback. Messages name files, offsets, fields and reasons, never record text.

Exit codes: 0 ok, 2 usage or bad input, 3 nothing to do or refused, 4 stage failed,
75 lock held (EX_TEMPFAIL).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_FAILED = 4
EXIT_LOCKED = 75


class MedsimpError(Exception):
    """Base class: a failure the user can act on, reported in one line."""

    exit_code = EXIT_FAILED


class UsageError(MedsimpError):
    """A bad flag, param or argument combination."""

    exit_code = EXIT_USAGE


class InputError(UsageError):
    """An input file or folder that cannot be read as its format (missing, empty, corrupt)."""


class Refused(MedsimpError):
    """The command will not do this (an output it does not own, a guarded publish or egress)."""

    exit_code = EXIT_REFUSED


class NothingToDo(MedsimpError):
    """There was no work: not a failure, but not a success to build on."""

    exit_code = EXIT_REFUSED


class StageFailed(MedsimpError):
    """The work started and failed (counts did not reconcile, a worker died)."""

    exit_code = EXIT_FAILED
