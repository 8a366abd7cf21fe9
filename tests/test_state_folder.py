"""medsimp's state folder (ownership records of the single files it writes) is trusted only
when it is this user's own, and a record is read only when it is one (issue 35 items 12, 16):
a record planted by another user, a FIFO or device in a record's place, a state folder that is
a file, a link or read-only each end in one line or a plain refusal, never an overwrite of a
user's file, a hang or an internal error."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from medsimp import atomic, ownership
from medsimp.errors import UsageError


@pytest.fixture
def state(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("MEDSIMP_STATE_DIR", str(folder))
    return folder


def _plant(target: Path, users_text: str) -> Path:
    """A user's file and a record that claims medsimp wrote it."""
    target.write_text(users_text)
    record = ownership.record_path(target)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(
        json.dumps(
            {
                "command": "x",
                "path": str(target.resolve()),
                "sha256": ownership.digest(target),
                "tool": "medsimp",
            }
        )
    )
    return record


def test_a_record_in_a_folder_everyone_can_write_is_not_trusted(state, tmp_path):
    target = tmp_path / "notes.txt"
    _plant(target, "the user's notes\n")
    os.chmod(state / "owned", 0o777)
    with pytest.raises(UsageError, match="can be written by another user"):
        atomic.write_text(target, "stats\n")
    assert target.read_text() == "the user's notes\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user's needs root")
def test_a_record_another_user_wrote_is_not_a_record(state, tmp_path):
    target = tmp_path / "notes.txt"
    record = _plant(target, "the user's notes\n")
    os.chown(record, 12345, 12345)
    with pytest.raises(UsageError, match="not written by medsimp"):
        atomic.write_text(target, "stats\n")
    assert target.read_text() == "the user's notes\n"


def test_a_fifo_in_a_records_place_is_no_record_and_does_not_hang(state, tmp_path):
    target = tmp_path / "notes.txt"
    record = _plant(target, "the user's notes\n")
    record.unlink()
    os.mkfifo(record)
    outcome: list[BaseException | None] = []

    def write() -> None:
        try:
            atomic.write_text(target, "stats\n")
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "reading a FIFO record hung"
    assert isinstance(outcome[0], UsageError) and "not written by medsimp" in str(outcome[0])
    assert target.read_text() == "the user's notes\n"


def test_an_oversized_record_is_no_record(state, tmp_path):
    target = tmp_path / "notes.txt"
    record = _plant(target, "the user's notes\n")
    body = json.loads(record.read_text())
    record.write_text(json.dumps({**body, "padding": "x" * ownership.RECORD_BYTES}))
    with pytest.raises(UsageError, match="not written by medsimp"):
        atomic.write_text(target, "stats\n")


@pytest.mark.parametrize("kind", ["file", "dangling-link", "read-only"])
def test_a_state_folder_that_cannot_hold_records_is_one_line(state, tmp_path, kind):
    if kind == "file":
        state.write_text("not a folder\n")
    elif kind == "dangling-link":
        state.symlink_to(tmp_path / "nowhere")
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        state.mkdir(mode=0o500)
    target = tmp_path / "stats.json"
    with pytest.raises(UsageError, match="state folder"):
        atomic.write_text(target, "{}\n")
    assert not target.exists()
