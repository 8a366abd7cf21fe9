"""Services the tests start on loopback (moto's S3 server, Beam's job server and worker pool):
a free port, and waiting until the service listens on it."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    """Return once `port` accepts a connection; fail with the service's log if `proc` ends or
    `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[
                -2000:
            ]
            time.sleep(0.2)
