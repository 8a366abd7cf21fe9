"""Entry point of the local runner's worker processes: Beam's `sdk_worker_main` without its
start-up chatter on stderr ("apitools not found", "No semi_persistent_directory", "Logging
handler created"). Beam's bigquery client logs through `logging.warning` at import time,
which would install a stderr handler (an implicit `basicConfig`); a NullHandler on the root
logger prevents that. Worker log records still reach the runner through Beam's logging
service, where the CLI's logging configuration decides what is shown."""

import logging
import sys

logging.getLogger().addHandler(logging.NullHandler())

from apache_beam.runners.worker import sdk_worker_main  # noqa: E402

if __name__ == "__main__":
    sdk_worker_main.main(sys.argv)
