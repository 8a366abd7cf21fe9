"""A fresh clone reproduces its own committed lock: `git clone` + `dvc repro` leaves git clean."""

from __future__ import annotations

import pytest
from conftest import run_ok

pytestmark = pytest.mark.slow  # runs the whole DAG on the embedded sample (minutes)


def test_fresh_clone_repro_leaves_git_status_clean(reproduced_clone):
    clone, env = reproduced_clone  # cold DVC cache, cold medsimp cache
    status = run_ok(["git", "status", "--porcelain"], clone, env)
    assert status == "", status + run_ok(["git", "diff", "--unified=4", "dvc.lock"], clone, env)[:6000]
