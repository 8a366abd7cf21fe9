"""The `medsimp` command: argument parsing, logging, exit codes, one module per subcommand."""

from medsimp.cli.app import main

__all__ = ["main"]
