"""Red team of the simplify egress guard (issue 18 part 3), beyond tests/test_selfcorrect_egress.py:
IPv6 and numeric loopback look-alikes, user-info and parser-confusion URLs, every redirect
status, environment proxies, and lineage carried by the output folders (JSONL, dead letters).

Names resolve to the local fake server (`fake_dns`), so a URL the guard let through would
show up as a recorded request."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_selfcorrect_egress import DUA, _params, _parquet, _run

from medsimp import lineage
from medsimp.cli import main
from medsimp.errors import Refused, UsageError
from medsimp.selfcorrect import egress
from medsimp.selfcorrect.fake_server import FakeChatServer


@pytest.fixture
def fake_dns(monkeypatch):
    """Every name resolves to 127.0.0.1 (as a hostile DNS or /etc/hosts entry could)."""
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: real("127.0.0.1", port, *a, **k))


LOOPBACK = [
    "http://[::1]:8000/v1",
    "http://[0:0:0:0:0:0:0:1]/v1",
    "http://[::ffff:127.0.0.1]/v1",
    "http://[::ffff:7f00:1]/v1",
    "http://127.255.255.254/v1",
    "http://LOCALHOST./v1",
]
REMOTE = [
    "http://[::]/v1",
    "http://[::ffff:8.8.8.8]/v1",
    "http://[fe80::1]/v1",
    "http://[2001:db8::1]/v1",
    "http://[64:ff9b::7f00:1]/v1",
    "http://127.1/v1",
    "http://0x7f000001/v1",
    "http://017700000001/v1",
    "http://2130706433/v1",
    "http://localhost.localdomain/v1",
    "http://ip6-localhost/v1",
    "http://localhost6/v1",
    "http://xn--localhost-/v1",
    "http://127.0.0.1.nip.io/v1",
    "https://[::1].evil/v1",
]


@pytest.mark.parametrize("url", LOOPBACK)
def test_loopback_forms_are_loopback(url):
    assert egress.decide(url, True, {}, None)["loopback"] is True


@pytest.mark.parametrize("url", REMOTE)
def test_look_alikes_are_remote_and_refused(url):
    with pytest.raises((Refused, UsageError)):
        egress.decide(url, True, {}, None)
    with pytest.raises((Refused, UsageError)):  # and a DUA flag alone changes nothing
        egress.decide(url, True, {}, DUA)


def _confusing(port: str) -> list[str]:
    return [
        f"http://localhost@evil.host:{port}/v1",
        f"http://evil.host:{port}\\@127.0.0.1:{port}/v1",
        f"http://127.0.0.1:{port}@evil.host:{port}/v1",
        f"http://user:pw@evil.host:{port}/v1",
        f"http://:@evil.host:{port}/v1",
        f"http://evil.host:{port}#@127.0.0.1:{port}/v1",
        f"http://evil.host:{port}?@127.0.0.1/v1",
        f"http://127.0.0.1%40evil.host:{port}/v1",
        f"http://evil.host:{port}/v1@127.0.0.1",
        f"http://127.0.0.1\t.evil.host:{port}/v1",
        f"http://\uff45vil.host:{port}/v1",
        f"http://127.0.0.1\u3002evil.host:{port}/v1",
        f"http://[::1%25lo]:{port}/v1",
        f"http://evil.host:{port}%2f@127.0.0.1/v1",
        f"HTTP://EVIL.HOST:{port}/v1",
        f"http://evil.host.:{port}/v1",
        f"//evil.host:{port}/v1",
        f"evil.host:{port}/v1",
        f"ftp://127.0.0.1:{port}/v1",
        f" http://evil.host:{port}/v1",
    ]


def test_parser_confusion_urls_never_reach_anything(tmp_path, fake_dns, capsys):
    inp = _parquet(tmp_path, [lineage.MIMIC_IV_NOTE])
    with FakeChatServer() as srv:
        port = srv.url.split(":")[2].split("/")[0]
        for url in _confusing(port):
            code = _run(tmp_path, _params(tmp_path, url), inp, "--mimic-egress-dua", DUA)
            err = capsys.readouterr().err.strip().splitlines()  # the announce line, then the error
            assert code in (2, 3), url
            assert len(err) <= 2 and not any("effusion" in line for line in err), (url, err)
    assert srv.requests == []


class _Redirector(BaseHTTPRequestHandler):
    status = 307
    location = ""
    hits: list[str] = []

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        self.hits.append(self.path)
        self.send_response(self.status)
        self.send_header("Location", self.location)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_no_redirect_status_is_followed(tmp_path, status, fake_dns):
    inp = _parquet(tmp_path, [lineage.MIMIC_III])
    with FakeChatServer() as target:
        port = target.url.split(":")[2].split("/")[0]
        _Redirector.status, _Redirector.hits = status, []
        _Redirector.location = f"http://evil.host:{port}/v1/chat/completions"
        front = ThreadingHTTPServer(("127.0.0.1", 0), _Redirector)
        threading.Thread(target=front.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{front.server_address[1]}/v1"
            assert _run(tmp_path, _params(tmp_path, url), inp) == 4  # every call failed
        finally:
            front.shutdown()
            front.server_close()
    assert _Redirector.hits and target.requests == []
    dead = (tmp_path / "out" / "dead_letter" / "part-00000.jsonl").read_text()
    assert "redirect" in dead and "effusion" not in dead


@pytest.fixture
def proxy(monkeypatch):
    """Every proxy variable points at a socket that counts connections."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    seen: list[int] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            seen.append(1)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield seen
    stop.set()
    server.close()


def test_environment_proxies_are_ignored_for_restricted_text(tmp_path, proxy):
    with FakeChatServer() as srv:
        assert _run(tmp_path, _params(tmp_path, srv.url), _parquet(tmp_path, [lineage.MIMIC_III])) == 0
        assert srv.requests and proxy == []
        # control: the same run on public text does go through the proxy (so the check can fail)
        shutil.rmtree(tmp_path / "cache")  # no cached answers: the control must call out
        _run(tmp_path, _params(tmp_path, srv.url), _parquet(tmp_path, ["cochrane"]))
    assert proxy


def test_output_folders_carry_the_lineage_onwards(tmp_path, fake_dns):
    """simplify's JSONL/CSV outputs (and dead letters) record the input's lineage in their
    marker, so reading them back (JSONL, no schema) is still restricted."""
    inp = _parquet(tmp_path, [lineage.MIMIC_IV_NOTE])
    with FakeChatServer() as srv:
        assert _run(tmp_path, _params(tmp_path, srv.url), inp) == 0
        marker = json.loads((tmp_path / "out" / ".medsimp-output").read_text())
        assert marker["lineage"] == ["mimic-iv-note"]
        out = tmp_path / "out" / "simplifications.jsonl"
        assert lineage.read_lineage(out) == ("mimic-iv-note",)
        assert lineage.read_lineage(tmp_path / "out" / "dead_letter" / "part-00000.jsonl") == (
            "mimic-iv-note",
        )
        # public-lineage text with placeholders: the output is marked MIMIC
        pub = _parquet(tmp_path, ["cochrane"])
        (tmp_path / "shaped.jsonl").write_text(
            json.dumps({"sentence_id": "a", "text": "Seen at [**Hospital1 18**]."}) + "\n"
        )
        assert _run(tmp_path, _params(tmp_path, srv.url), str(tmp_path / "shaped.jsonl")) == 0
        assert json.loads((tmp_path / "out" / ".medsimp-output").read_text())["lineage"] == ["unknown"]
        assert _run(tmp_path, _params(tmp_path, srv.url), pub) == 0
        assert json.loads((tmp_path / "out" / ".medsimp-output").read_text())["lineage"] == ["cochrane"]
        port = srv.url.split(":")[2].split("/")[0]
        n = len(srv.requests)
        # a JSONL copied out of a MIMIC-derived output folder keeps no lineage: unknown, refused
        copy = tmp_path / "copy.jsonl"
        copy.write_text('{"sentence_id": "x", "text": "Small left pleural effusion."}\n')
        assert _run(tmp_path, _params(tmp_path, f"http://llm.example.org:{port}/v1"), str(copy)) == 3
        assert len(srv.requests) == n


def test_set_cannot_touch_the_allow_list_in_any_spelling(tmp_path, fake_dns):
    inp = _parquet(tmp_path, [lineage.MIMIC_III])
    with FakeChatServer() as srv:
        port = srv.url.split(":")[2].split("/")[0]
        params = _params(tmp_path, f"http://evil.host:{port}/v1")
        for override in (
            f"simplify.egress.allowed_endpoints=[http://evil.host:{port}]",
            "simplify.egress.allow_loopback=false",
            f"simplify={{enabled: true, backend: openai, openai: {{base_url: "
            f"'http://evil.host:{port}/v1', model: m}}, egress: {{allowed_endpoints: "
            f"['http://evil.host:{port}']}}}}",
            f" simplify.egress.allowed_endpoints =[http://evil.host:{port}]",
        ):
            code = main(
                [
                    "--params",
                    params,
                    "--set",
                    override,
                    "simplify",
                    "--input",
                    inp,
                    "--output",
                    str(tmp_path / "o"),
                    "--mimic-egress-dua",
                    DUA,
                ]
            )
            assert code in (2, 3), override
    assert srv.requests == []
