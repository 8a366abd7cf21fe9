"""Ownership that travels with a DVC project (issue 55 §2, medsimp.ownership): inside a project
the records live in it (`.dvc/tmp/medsimp/owned/`), keyed by the path from its root, and a
file whose bytes dvc.lock records for a medsimp stage's output is medsimp's. A copy (`cp -a`)
with a fresh state folder, a clone, another user: what medsimp wrote is replaced, the user's
files are still refused. (The refresh of a copied project: tests/test_refresh_dvc.py.)"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from medsimp import atomic, ownership
from medsimp.errors import UsageError


def _project(root: Path) -> Path:
    (root / ".dvc").mkdir(parents=True)
    return root


def _state(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    monkeypatch.setenv("MEDSIMP_STATE_DIR", str(folder))
    return folder


def test_a_copied_project_keeps_what_medsimp_wrote_and_still_refuses_the_users_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    _state(monkeypatch, tmp_path / "state-here")
    here = _project(tmp_path / "here")
    atomic.write_json(here / "metrics" / "link.json.run.json", {"cache_hits": 1})
    atomic.write_text(here / "reports" / "latest.md", "# one\n")
    (here / "metrics" / "mine.json").write_text('{"mine": 1}\n')
    assert (here / ".dvc" / "tmp" / "medsimp" / "owned").is_dir()
    assert not (tmp_path / "state-here").exists()  # nothing outside the project

    there = tmp_path / "there"
    subprocess.run(["cp", "-a", str(here), str(there)], check=True)
    shutil.rmtree(here)
    fresh = _state(monkeypatch, tmp_path / "state-there")  # a new container, another user
    atomic.write_json(there / "metrics" / "link.json.run.json", {"cache_hits": 2})
    atomic.write_text(there / "reports" / "latest.md", "# two\n")
    assert json.loads((there / "metrics" / "link.json.run.json").read_text()) == {"cache_hits": 2}
    assert (there / "reports" / "latest.md").read_text() == "# two\n"

    with pytest.raises(UsageError, match="mine.json exists and was not written by medsimp"):
        atomic.write_json(there / "metrics" / "mine.json", {"theirs": 1})
    (there / "reports" / "latest.md").write_text("# edited by the user\n")  # changed since
    with pytest.raises(UsageError, match="latest.md exists and was not written by medsimp"):
        atomic.write_text(there / "reports" / "latest.md", "# three\n")
    # a record names the file it describes: the same bytes under another name are not medsimp's
    os.rename(there / "metrics" / "link.json.run.json", there / "metrics" / "other.json")
    with pytest.raises(UsageError, match="other.json exists and was not written by medsimp"):
        atomic.write_json(there / "metrics" / "other.json", {"cache_hits": 3})
    assert (there / "metrics" / "mine.json").read_text() == '{"mine": 1}\n'
    assert (there / "reports" / "latest.md").read_text() == "# edited by the user\n"
    assert not fresh.exists()


def test_a_record_store_that_is_not_this_users_is_never_read_and_records_go_to_the_state_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A store planted through a link (or another user's, or everyone's to write) could name a
    user's file as medsimp's: it is not read, and this user's records go to the state folder."""
    state = _state(monkeypatch, tmp_path / "state")
    root = _project(tmp_path / "proj")
    mine = root / "notes.json"
    mine.write_text('{"mine": 1}\n')
    planted = tmp_path / "planted"
    (planted / "owned").mkdir(parents=True)
    name = "notes.json"
    record = {"command": "x", "path": name, "sha256": ownership.digest(mine), "tool": "medsimp"}
    key = hashlib.sha256(name.encode()).hexdigest()
    (planted / "owned" / f"{key}.json").write_text(json.dumps(record))
    (root / ".dvc" / "tmp").mkdir()
    (root / ".dvc" / "tmp" / "medsimp").symlink_to(planted, target_is_directory=True)
    with pytest.raises(UsageError, match="notes.json exists and was not written by medsimp"):
        atomic.write_json(mine, {"theirs": 1})
    assert mine.read_text() == '{"mine": 1}\n'

    atomic.write_json(root / "metrics.json", {"n": 1})
    assert ownership.record_path(root / "metrics.json").parent == state / "owned"
    assert ownership.owned(root / "metrics.json")
    (root / ".dvc" / "tmp" / "medsimp").unlink()
    (root / ".dvc" / "tmp" / "medsimp").mkdir(mode=0o777)
    os.chmod(root / ".dvc" / "tmp" / "medsimp", 0o777)  # everyone's to write: not trusted either
    assert ownership.record_path(root / "metrics.json").parent == state / "owned"


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _lock(cmd: object, out: str, data: bytes) -> str:
    cmd_yaml = json.dumps(cmd)  # JSON is YAML: a string or a list of strings
    return (
        "schema: '2.0'\nstages:\n  stage:\n"
        f"    cmd: {cmd_yaml}\n"
        f"    outs:\n    - path: {out}\n      hash: md5\n      md5: {_md5(data)}\n      size: {len(data)}\n"
    )


@pytest.mark.parametrize(
    "cmd, medsimps",
    [
        ("medsimp link --input out/cochrane --metrics metrics/link.json", True),
        ("/srv/medsimp/.venv/bin/medsimp link --metrics metrics/link.json", True),
        ("python -m medsimp.cli link --metrics metrics/link.json", True),
        (["mkdir -p metrics", "medsimp link --metrics metrics/link.json"], True),
        ("python train.py --metrics metrics/link.json", False),
        ("echo medsimp > metrics/link.json", False),
        ("python -m medsimpler metrics/link.json", False),
    ],
)
def test_a_file_dvc_lock_records_for_a_medsimp_stage_is_medsimps_with_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cmd: object, medsimps: bool
):
    """After `git clone` + `dvc pull` (or `git checkout`) no record exists anywhere, but
    dvc.lock, content-keyed, names the bytes medsimp's stage wrote at that path."""
    _state(monkeypatch, tmp_path / "fresh")
    root = _project(tmp_path / "clone")
    data = b'{\n  "pairs": 3\n}\n'
    (root / "metrics").mkdir()
    (root / "metrics" / "link.json").write_bytes(data)
    (root / "dvc.lock").write_text(_lock(cmd, "metrics/link.json", data))
    assert ownership.owned(root / "metrics" / "link.json") is medsimps
    if medsimps:
        atomic.write_json(root / "metrics" / "link.json", {"pairs": 4})
        assert json.loads((root / "metrics" / "link.json").read_text()) == {"pairs": 4}
    else:
        with pytest.raises(UsageError, match="not written by medsimp"):
            atomic.write_json(root / "metrics" / "link.json", {"pairs": 4})


def test_dvc_lock_owns_only_the_bytes_it_records_at_the_path_it_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    _state(monkeypatch, tmp_path / "fresh")
    root = _project(tmp_path / "clone")
    data = b'{"pairs": 3}\n'
    (root / "metrics").mkdir()
    (root / "dvc.lock").write_text(
        _lock("medsimp link --metrics metrics/link.json", "metrics/link.json", data)
    )
    link = root / "metrics" / "link.json"
    link.write_bytes(b'{"pairs": 3, "edited": true}\n')  # the user's edit
    assert not ownership.owned(link)
    (root / "metrics" / "copy.json").write_bytes(data)  # the recorded bytes at another path
    assert not ownership.owned(root / "metrics" / "copy.json")
    link.write_bytes(data)
    assert ownership.owned(link)
    os.chmod(root / "dvc.lock", 0o666)  # everyone can write it: not trusted
    assert not ownership.owned(link)
    os.chmod(root / "dvc.lock", 0o644)
    sub = root / "sub"
    sub.mkdir()
    (sub / "dvc.lock").write_text(_lock("medsimp plaba --metrics m.json", "m.json", data))
    (sub / "m.json").write_bytes(data)  # a dvc.lock in a folder below the root names paths from it
    assert ownership.owned(sub / "m.json")
    outside = tmp_path / "not-a-project"
    outside.mkdir()
    shutil.copy(root / "dvc.lock", outside / "dvc.lock")
    (outside / "metrics").mkdir()
    (outside / "metrics" / "link.json").write_bytes(data)
    assert not ownership.owned(outside / "metrics" / "link.json")  # no .dvc/: not a project


def test_a_file_of_a_medsimp_stages_folder_output_is_known_by_the_dir_manifest_in_the_dvc_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`--plots plots/report/x` PNGs and `evaluate stage --metrics metrics/eval` files are single
    files in a folder DVC tracks as one output: dvc.lock records the folder's `.dir` manifest,
    which lists each file's md5 (the manifest is in the project's DVC cache, under its md5)."""
    _state(monkeypatch, tmp_path / "fresh")
    root = _project(tmp_path / "clone")
    scores = b'{"sari": 40.1}\n'
    (root / "metrics" / "eval").mkdir(parents=True)
    (root / "metrics" / "eval" / "copy.json").write_bytes(scores)
    manifest = json.dumps([{"md5": _md5(scores), "relpath": "copy.json"}], sort_keys=True).encode()
    tree = _md5(manifest) + ".dir"
    cache = root / ".dvc" / "cache" / "files" / "md5" / tree[:2]
    cache.mkdir(parents=True)
    (cache / tree[2:]).write_bytes(manifest)
    lock = _lock("medsimp evaluate stage --metrics metrics/eval", "metrics/eval", b"")
    (root / "dvc.lock").write_text(lock.replace(_md5(b""), tree))
    assert ownership.owned(root / "metrics" / "eval" / "copy.json")
    atomic.write_json(root / "metrics" / "eval" / "copy.json", {"sari": 41.0})
    (root / "metrics" / "eval" / "copy.json").write_bytes(scores[:-1])  # not the listed bytes
    ownership.forget(root / "metrics" / "eval" / "copy.json")
    assert not ownership.owned(root / "metrics" / "eval" / "copy.json")
    # a manifest edited to list the user's bytes no longer has the md5 it is stored under
    (cache / tree[2:]).write_bytes(manifest.replace(_md5(scores).encode(), _md5(scores[:-1]).encode()))
    assert not ownership.owned(root / "metrics" / "eval" / "copy.json")


def test_records_an_older_medsimp_kept_by_absolute_path_move_into_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A project repro'd before this change has its records in the state folder, by absolute
    path: `adopt` (refresh runs it first) moves those of the project's files that still match
    into the project, so a copy made afterwards knows them; the others stay where they are."""
    state = _state(monkeypatch, tmp_path / "state")
    root = _project(tmp_path / "here")
    (state / "owned").mkdir(parents=True)

    def old_record(path: Path, body: bytes) -> Path:  # as medsimp wrote them before
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        name = str(path.resolve())
        record = {
            "command": "link",
            "path": name,
            "sha256": hashlib.sha256(body).hexdigest(),
            "tool": "medsimp",
        }
        where = state / "owned" / f"{hashlib.sha256(name.encode()).hexdigest()}.json"
        where.write_text(json.dumps(record))
        return where

    run = old_record(root / "metrics" / "link.json.run.json", b'{"cache_hits": 1}\n')
    edited = old_record(root / "reports" / "latest.md", b"# one\n")
    (root / "reports" / "latest.md").write_text("# the user's edit\n")
    elsewhere = old_record(tmp_path / "other" / "m.json", b"{}\n")
    assert ownership.owned(root / "metrics" / "link.json.run.json")  # honoured in place

    assert ownership.adopt(root) == 1
    assert not run.exists() and edited.exists() and elsewhere.exists()
    assert ownership.adopt(root) == 0
    subprocess.run(["cp", "-a", str(root), str(tmp_path / "there")], check=True)
    _state(monkeypatch, tmp_path / "fresh")
    there = tmp_path / "there"
    atomic.write_json(there / "metrics" / "link.json.run.json", {"cache_hits": 2})
    with pytest.raises(UsageError, match="latest.md exists and was not written by medsimp"):
        atomic.write_text(there / "reports" / "latest.md", "# two\n")
