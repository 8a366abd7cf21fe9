"""`medsimp publish`: the lineage guard refuses MIMIC-derived or untraceable data before any network
call, whatever the card, flags or file names say; allowed pushes reach the hub API.

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

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsimp import lineage
from medsimp.cli import main
from medsimp.corpora.publish import check_publishable
from medsimp.errors import Refused

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
                for _, p, b in self.requests
                if p == "/api/repos/create"
            )
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
            self._reply(
                {
                    "files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files
                    ]
                }
            )
        elif "/commit/" in self.path:
            self._reply(
                {
                    "commitUrl": f"http://{host}/datasets/me/ds/commit/{'0' * 40}",
                    "commitOid": "0" * 40,
                    "success": True,
                }
            )
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


def _table(path: Path, tags, text: str = "the trial found no difference") -> None:
    table = pa.table({"complex": [text], "simple": ["it did not help"]})
    if tags is not None:
        table = table.cast(lineage.with_lineage(table.schema, tags))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def _folder(tmp_path: Path, tags, card_flag: str = "false") -> Path:
    folder = tmp_path / "ds"
    _table(folder / "train" / "x.parquet", tags)
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files: "
        f"train/x.parquet\nmedsimp:\n  builder: t\n"
        f"  mimic_derived: {card_flag}\n---\n# t\n"
    )
    (folder / "dead_letter").mkdir()
    (folder / "dead_letter" / "part-00000.jsonl").write_text('{"raw": "[**Name**]"}\n')
    (folder / ".medsimp-output").write_text("{}")
    return folder


def _publish(endpoint: str, folder: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "0",
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": "hf_fake",
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", "publish", str(folder), "--repo-id", "me/ds", *flags],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _publish_here(monkeypatch, endpoint: str, folder: Path, *flags: str) -> int:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    return main(["publish", str(folder), "--repo-id", "me/ds", *flags])


@pytest.mark.parametrize("tags", [["mimic"], ["mimic-iii"], ["cochrane", "mimic-iv-note"]])
@pytest.mark.parametrize("flags", [(), ("--private",)])
def test_mimic_lineage_is_refused_before_any_request(hub, tmp_path, tags, flags, monkeypatch, capsys):
    endpoint, requests = hub
    assert _publish_here(monkeypatch, endpoint, _folder(tmp_path, tags), *flags) == 3
    assert "MIMIC" in capsys.readouterr().err
    assert requests == []


def test_no_flag_turns_the_guard_off(hub, tmp_path, monkeypatch, capsys):
    endpoint, requests = hub
    folder = _folder(tmp_path, ["mimic-iii"], card_flag="false")  # an edited card says "not MIMIC"
    with pytest.raises(SystemExit) as exit_:  # the old escape flag no longer exists
        _publish_here(monkeypatch, endpoint, folder, "--i-accept-physionet-dua")
    assert exit_.value.code == 2
    assert _publish_here(monkeypatch, endpoint, folder, "--private", "--force") == 3
    assert requests == []


def _bypass(kind: str, folder: Path) -> None:
    """Ways to smuggle MIMIC-derived or untraceable data into an otherwise clean folder."""
    if kind == "stripped_metadata":
        _table(folder / "train" / "y.parquet", None)
    elif kind == "copied_mimic_parquet":
        _table(folder / "validation" / "copy.parquet", ["mimic"])
    elif kind == "nested_folder":
        _table(folder / "extra" / "deep" / "z.parquet", ["mimic-iv-note"])
    elif kind == "renamed_to_other_suffix":
        _table(folder / "train" / "notes.bin", ["mimic"])
    elif kind == "csv_data_file":
        (folder / "train" / "x.csv").write_text("text\nseen at clinic\n")
    elif kind == "jsonl_data_file":
        (folder / "train" / "x.jsonl").write_text('{"text": "seen"}\n')
    elif kind == "symlink":
        _table(folder.parent / "elsewhere.parquet", ["cochrane"])
        (folder / "train" / "link.parquet").symlink_to(folder.parent / "elsewhere.parquet")
    elif kind == "relabelled_lineage_with_mimic_text":
        _table(folder / "train" / "w.parquet", ["cochrane"], text="pt seen at [**Hospital1 18**]")
    elif kind == "card_with_mimic_text":
        card = folder / "README.md"
        card.write_text(card.read_text() + "Example: admitted on [**2101-3-4**].\n")
    elif kind == "stats_with_mimic_text":
        (folder / "stats.json").write_text('{"note": "[**Known firstname**]"}')
    else:
        raise AssertionError(kind)


BYPASSES = [
    "stripped_metadata",
    "copied_mimic_parquet",
    "nested_folder",
    "renamed_to_other_suffix",
    "csv_data_file",
    "jsonl_data_file",
    "symlink",
    "relabelled_lineage_with_mimic_text",
    "card_with_mimic_text",
    "stats_with_mimic_text",
]


@pytest.mark.parametrize("kind", BYPASSES)
def test_every_bypass_is_refused_before_any_request(hub, tmp_path, kind, monkeypatch):
    endpoint, requests = hub
    folder = _folder(tmp_path, ["cochrane"])
    check_publishable(folder)  # the clean folder passes
    _bypass(kind, folder)
    with pytest.raises(Refused):
        check_publishable(folder)
    assert _publish_here(monkeypatch, endpoint, folder) == 3
    assert requests == []


def test_clean_push_uploads_only_checked_files(hub, tmp_path):
    endpoint, requests = hub
    (tmp_path / "ds").mkdir()
    result = _publish(endpoint, _folder(tmp_path, ["cochrane"]), "--private")
    assert result.returncode == 0, result.stderr[-2000:]
    create = next(json.loads(b) for m, p, b in requests if p == "/api/repos/create")
    assert create.get("private") is True or create.get("visibility") == "private"
    commit = b"".join(b for m, p, b in requests if "/commit/" in p).decode()
    assert "train/x.parquet" in commit and "README.md" in commit
    assert "dead_letter" not in commit and ".medsimp-output" not in commit


def test_private_push_into_an_existing_public_repo_is_refused_before_upload(hub, tmp_path):
    endpoint, requests = hub
    _FakeHub.existing_public = True
    result = _publish(endpoint, _folder(tmp_path, ["plaba"]), "--private")
    assert result.returncode == 3 and "is public" in result.stderr
    assert not any("/preupload/" in p or "/commit/" in p for _, p, _ in requests)


def test_builder_lineage_follows_its_inputs(tmp_path):
    """`--set build.msd.sentences=<a MIMIC table>` makes the builder MIMIC-derived."""
    from medsimp.corpora.card import input_lineage

    _table(tmp_path / "clean" / "part-0.parquet", ["msd"])
    _table(tmp_path / "notes" / "part-0.parquet", ["mimic"])
    _table(tmp_path / "legacy" / "part-0.parquet", None)
    assert input_lineage({"sentences": str(tmp_path / "clean")}, False) == ("msd",)
    assert lineage.is_restricted(input_lineage({"sentences": str(tmp_path / "notes")}, False))
    assert input_lineage({"sentences": str(tmp_path / "legacy")}, False) is None
    assert input_lineage({"input": "data/sample/medlane"}, True) == ("mimic",)
