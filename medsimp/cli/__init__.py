"""The `medsimp` command: argument parsing, logging, exit codes, one module per subcommand."""

from medsimp.cli.app import console, main

__all__ = ["console", "main"]
