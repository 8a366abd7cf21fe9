"""`python -m medsimp.cli`: the `medsimp` command."""

from medsimp.cli.app import console

console()
