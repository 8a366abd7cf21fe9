"""The local runner's worker command: Beam's SDK worker without its start-up chatter.

`python -m pipelines.jobs.worker` runs `apache_beam.runners.worker.sdk_worker_main` for each
worker process of the local FnApiRunner (`beam_io.new_pipeline` hands it to FnApiRunner as its
`default_environment`). Beam's bigquery client logs through `logging.warning` at import time,
which would install a stderr handler on the root logger (an implicit `basicConfig`) and then
print "apitools not found", "Logging handler created" and "No semi_persistent_directory" on
every run; a NullHandler on the root logger prevents that. Worker log records still reach the
runner through Beam's logging service, where the CLI's logging configuration decides what is shown.

Beam's worker also prints the traceback of a failed bundle on its own stderr before sending it to
the runner in its response, where the stage fails with one line (and the traceback with `-v`).
Unless the command runs with `-v` (the CLI sets MEDSIMP_WORKER_STDERR=quiet otherwise, and
workers inherit the environment), the worker's Python-level stderr goes to os.devnull.
"""

from __future__ import annotations

import logging
import os
import sys


def main(argv: list[str]) -> None:
    logging.getLogger().addHandler(logging.NullHandler())
    if os.environ.get("MEDSIMP_WORKER_STDERR") == "quiet":
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the process's lifetime)
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(argv)


if __name__ == "__main__":
    main(sys.argv)
