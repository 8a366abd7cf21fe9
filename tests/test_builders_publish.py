"""`medsimp publish`: the MIMIC guard refuses before any network call; allowed pushes reach the hub API.

The hub is a local fake HTTP server that records every request (no real network).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from medsimp.cli import main
from medsimp.commands.publish import PublishRefused, check_publishable

REPO = Path(__file__).resolve().parents[1]


class _FakeHub(BaseHTTPRequestHandler):
    requests: list[tuple[str, str, bytes]] = []
    existing_public = False  # does the repository already exist as a public one?

    def log_message(self, *args):  # keep test output quiet
        pass

    def _reply(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        self.requests.append(("GET", self.path, b""))
        if self.path.startswith("/api/datasets/me/ds"):
            private = not self.existing_public and any(
                json.loads(b).get("private") or json.loads(b).get("visibility") == "private"
                for _, p, b in self.requests if p == "/api/repos/create")
            self._reply({"id": "me/ds", "private": private, "sha": "0" * 40})
        else:
            self._reply({})

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.requests.append(("POST", self.path, body))
        host = self.headers["Host"]
        if self.path == "/api/repos/create":
            self._reply({"url": f"http://{host}/datasets/me/ds", "name": "ds", "id": "x"})
        elif "/preupload/" in self.path:
            files = json.loads(body)["files"]
            self._reply({"files": [{"path": f["path"], "uploadMode": "regular",
                                    "shouldIgnore": False} for f in files]})
        elif "/commit/" in self.path:
            self._reply({"commitUrl": f"http://{host}/datasets/me/ds/commit/{'0' * 40}",
                         "commitOid": "0" * 40, "success": True})
        else:
            self._reply({})


@pytest.fixture()
def hub():
    _FakeHub.requests = []
    _FakeHub.existing_public = False
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _FakeHub.requests
    server.shutdown()
    server.server_close()


def _folder(tmp_path: Path, mimic: bool | None) -> Path:
    folder = tmp_path / "ds"
    (folder / "train").mkdir(parents=True)
    flag = "" if mimic is None else f"  mimic_derived: {str(mimic).lower()}\n"
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files: "
                                      f"train/x.csv\nmedsimp:\n  builder: t\n{flag}---\n# t\n")
    (folder / "train" / "x.csv").write_text("a\n1\n")
    (folder / "dead_letter").mkdir()
    (folder / "dead_letter" / "part-00000.jsonl").write_text("")
    return folder


def _publish(endpoint: str, folder: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": endpoint, "HF_TOKEN": "hf_fake",
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    return subprocess.run([sys.executable, "-m", "medsimp.cli", "publish", str(folder),
                           "--repo-id", "me/ds", *flags], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def _publish_here(monkeypatch, endpoint: str, folder: Path, *flags: str) -> int:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    return main(["publish", str(folder), "--repo-id", "me/ds", *flags])


@pytest.mark.parametrize("flags", [(), ("--private",), ("--i-accept-physionet-dua",)])
def test_mimic_builder_is_refused_before_any_request(hub, tmp_path, flags, monkeypatch, capsys):
    endpoint, requests = hub
    assert _publish_here(monkeypatch, endpoint, _folder(tmp_path, mimic=True), *flags) == 3
    out = capsys.readouterr().out
    assert "refused" in out and "MIMIC" in out
    assert requests == []


def test_card_without_flag_is_refused(hub, tmp_path, monkeypatch, capsys):
    endpoint, requests = hub
    assert _publish_here(monkeypatch, endpoint, _folder(tmp_path, mimic=None)) == 3
    assert "mimic_derived" in capsys.readouterr().out
    assert requests == []


def test_private_acknowledged_mimic_push_and_public_push_reach_the_hub(hub, tmp_path):
    endpoint, requests = hub
    result = _publish(endpoint, _folder(tmp_path, mimic=True), "--private",
                      "--i-accept-physionet-dua")
    assert result.returncode == 0, result.stderr[-2000:]
    create = next(json.loads(b) for m, p, b in requests if p == "/api/repos/create")
    assert create.get("private") is True or create.get("visibility") == "private"
    assert create["type"] == "dataset"
    commit = b"".join(b for m, p, b in requests if "/commit/" in p).decode()
    assert "train/x.csv" in commit and "README.md" in commit and "dead_letter" not in commit
    requests.clear()
    assert _publish(endpoint, _folder(tmp_path / "pub", mimic=False)).returncode == 0
    assert any(p == "/api/repos/create" for _, p, _ in requests)


def test_private_push_into_an_existing_public_repo_is_refused_before_upload(hub, tmp_path):
    endpoint, requests = hub
    _FakeHub.existing_public = True
    result = _publish(endpoint, _folder(tmp_path, mimic=True), "--private",
                      "--i-accept-physionet-dua")
    assert result.returncode == 3 and "is public" in result.stdout
    assert not any("/preupload/" in p or "/commit/" in p for _, p, _ in requests)


def test_guard_rules():
    check_publishable({"medsimp": {"mimic_derived": False}}, private=False, accept_dua=False)
    check_publishable({"medsimp": {"mimic_derived": True}}, private=True, accept_dua=True)
    for meta, private, accept in [({"medsimp": {"mimic_derived": True}}, True, False),
                                  ({"medsimp": {"mimic_derived": True}}, False, True),
                                  ({"medsimp": {"mimic_derived": "no"}}, True, True), ({}, True, True)]:
        with pytest.raises(PublishRefused):
            check_publishable(meta, private=private, accept_dua=accept)
