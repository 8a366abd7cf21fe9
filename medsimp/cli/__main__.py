"""`python -m medsimp.cli`: the `medsimp` command."""

import sys

from medsimp.cli.app import main

sys.exit(main())
