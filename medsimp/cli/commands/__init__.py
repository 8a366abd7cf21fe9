"""One module per `medsimp` subcommand: add_arguments(parser) and run(args)."""
