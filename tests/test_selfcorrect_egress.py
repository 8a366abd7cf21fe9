"""Egress guard of `medsimp simplify --backend openai` (issue 18 part 3), against the real
local fake chat-completions server. Host names other than loopback are made to resolve to
the fake server (patched getaddrinfo), so a guard that let them through would be caught
by the server recording a request."""

from __future__ import annotations

import json
import os
import socket

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsimp import lineage
from medsimp.cli import main
from medsimp.errors import Refused, UsageError
from medsimp.selfcorrect import egress
from medsimp.selfcorrect.fake_server import FakeChatServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DUA = "physionet-credentialed-health-data-1.5.0"


@pytest.fixture
def fake_dns(monkeypatch):
    """Every name resolves to 127.0.0.1 (as a hostile DNS or /etc/hosts entry could)."""
    real = socket.getaddrinfo

    def resolve(host, port, *args, **kwargs):
        return real("127.0.0.1", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)


def _params(tmp_path, url: str, allowed: list[str] | None = None) -> str:
    p = tmp_path / "params.yaml"
    allowed_yaml = json.dumps(allowed or [])
    p.write_text(f"""
simplify:
  enabled: true
  backend: openai
  max_rounds: 1
  concurrency: 1
  openai: {{base_url: "{url}", model: fake-model, backoff: 0.01, max_retries: 0, timeout: 5}}
  egress: {{allow_loopback: true, allowed_endpoints: {allowed_yaml}}}
cache: {{dir: "{tmp_path / "cache"}"}}
""")
    return str(p)


def _parquet(tmp_path, tags) -> str:
    d = tmp_path / "sentences"
    d.mkdir(exist_ok=True)
    schema = pa.schema([("sentence_id", pa.string()), ("text", pa.string())])
    if tags is not None:
        schema = lineage.with_lineage(schema, tags)
    table = pa.Table.from_pylist(
        [{"sentence_id": "r:0", "text": "Small left pleural effusion."}], schema=schema
    )
    pq.write_table(table, d / "part-00000.parquet")
    return str(d)


def _run(tmp_path, params: str, inp: str, *extra: str) -> int:
    return main(["--params", params, "simplify", "--input", inp, "--output", str(tmp_path / "out"), *extra])


def test_remote_host_refused_before_any_request(tmp_path, fake_dns, capsys):
    inp = _parquet(tmp_path, [lineage.MIMIC_III])
    with FakeChatServer() as srv:
        port = srv.url.split(":")[2].split("/")[0]
        for host in (
            "llm.example.org",
            "127.0.0.1.example.com",
            "localhost.example.com",
            "LOCALHOST.evil.host",
            "2130706433",
            "0x7f.0.0.1",
        ):
            url = f"http://{host}:{port}/v1"
            assert _run(tmp_path, _params(tmp_path, url), inp) == 3, host
            err = capsys.readouterr().err.strip().splitlines()  # the announce line, then the error
            assert len(err) == 2 and "refusing to send MIMIC-derived" in err[1], host
            assert "effusion" not in err[1]
        # the same endpoint with the DUA flag but without the params entry: still refused
        url = f"http://llm.example.org:{port}/v1"
        assert _run(tmp_path, _params(tmp_path, url), inp, "--mimic-egress-dua", DUA) == 3
        # allowed in params but no flag: refused
        assert _run(tmp_path, _params(tmp_path, url, [f"http://llm.example.org:{port}"]), inp) == 3
    assert srv.requests == []


def test_user_info_and_set_override_bypasses(tmp_path, fake_dns, capsys):
    inp = _parquet(tmp_path, [lineage.MIMIC_IV_NOTE])
    with FakeChatServer() as srv:
        port = srv.url.split(":")[2].split("/")[0]
        assert _run(tmp_path, _params(tmp_path, f"http://localhost@evil.host:{port}/v1"), inp) == 2
        assert "user info" in capsys.readouterr().err
        # --set can point base_url anywhere, but the allow-list is read from the file only
        params = _params(tmp_path, srv.url)
        assert (
            main(
                [
                    "--params",
                    params,
                    "--set",
                    f"simplify.openai.base_url=http://evil.host:{port}/v1",
                    "simplify",
                    "--input",
                    inp,
                    "--output",
                    str(tmp_path / "o"),
                    "--mimic-egress-dua",
                    DUA,
                ]
            )
            == 3
        )
        assert (
            main(
                [
                    "--params",
                    params,
                    "--set",
                    f"simplify.egress.allowed_endpoints=[http://evil.host:{port}]",
                    "--set",
                    f"simplify.openai.base_url=http://evil.host:{port}/v1",
                    "simplify",
                    "--input",
                    inp,
                    "--output",
                    str(tmp_path / "o"),
                    "--mimic-egress-dua",
                    DUA,
                ]
            )
            == 3
        )
        assert "only be changed in the params file" in capsys.readouterr().err
    assert srv.requests == []


@pytest.mark.slow
def test_loopback_works_for_mimic_text_and_unknown_lineage(tmp_path):
    with FakeChatServer() as srv:
        for inp in (_parquet(tmp_path, [lineage.MIMIC_III]), _parquet(tmp_path, None)):
            assert _run(tmp_path, _params(tmp_path, srv.url), inp) == 0
            stats = json.loads((tmp_path / "out" / "stats.json").read_text())
            assert stats["egress"]["restricted"] is True
            assert stats["egress"]["endpoint"] == srv.url.rsplit("/", 1)[0]
            assert stats["egress"]["loopback"] is True and stats["egress"]["dua"] is None
        host_upper = srv.url.replace("127.0.0.1", "LOCALHOST")
        assert _run(tmp_path, _params(tmp_path, host_upper), inp) == 0
    assert srv.requests


def test_allow_list_and_flag_together_work_and_report_the_endpoint(tmp_path, fake_dns):
    inp = _parquet(tmp_path, [lineage.MIMIC_III])
    with FakeChatServer() as srv:
        port = srv.url.split(":")[2].split("/")[0]
        url = f"http://LLM.Example.org.:{port}/v1"  # case and a trailing dot normalise away
        params = _params(tmp_path, url, [f"http://llm.example.org:{port}"])
        assert (
            _run(tmp_path, params, inp, "--mimic-egress-dua", DUA, "--metrics", str(tmp_path / "m.json")) == 0
        )
    assert srv.requests
    record = json.loads((tmp_path / "out" / "stats.json").read_text())["egress"]
    assert record["endpoint"] == f"http://llm.example.org:{port}"
    assert record["dua"].startswith("PhysioNet Credentialed Health Data Use Agreement")
    assert record["restricted"] is True and record["loopback"] is False


def test_public_lineage_goes_anywhere_but_placeholders_make_it_restricted(tmp_path, fake_dns):
    with FakeChatServer() as srv:
        port = srv.url.split(":")[2].split("/")[0]
        url = f"http://llm.example.org:{port}/v1"
        assert _run(tmp_path, _params(tmp_path, url), _parquet(tmp_path, ["cochrane"])) == 0
        n = len(srv.requests)
        assert (
            n and json.loads((tmp_path / "out" / "stats.json").read_text())["egress"]["restricted"] is False
        )
        p = tmp_path / "shaped.parquet"
        schema = lineage.with_lineage(
            pa.schema([("sentence_id", pa.string()), ("text", pa.string())]), ["cochrane"]
        )
        pq.write_table(
            pa.Table.from_pylist(
                [{"sentence_id": "a", "text": "Seen at [**Hospital1 18**]."}], schema=schema
            ),
            p,
        )
        assert _run(tmp_path, _params(tmp_path, url), str(p)) == 3
        assert len(srv.requests) == n


def test_redirect_from_loopback_to_elsewhere_is_not_followed(tmp_path):
    inp = _parquet(tmp_path, [lineage.MIMIC_III])
    with FakeChatServer() as target:
        with FakeChatServer(redirect_to=target.url + "/chat/completions") as front:
            assert _run(tmp_path, _params(tmp_path, front.url), inp) == 4  # every call fails: stage failed
    assert front.requests and target.requests == []
    dead = (tmp_path / "out" / "dead_letter" / "part-00000.jsonl").read_text()
    assert "redirect" in dead and "effusion" not in dead


def test_decide_unit_cases():
    file_params = {"simplify": {"egress": {"allowed_endpoints": ["https://zdr.example.org"]}}}
    ok = egress.decide("http://[::1]:8000/v1", True, {}, None)
    assert ok["loopback"] and ok["endpoint"] == "http://[::1]:8000"
    assert egress.decide("http://[::ffff:127.0.0.1]:80/v1", True, {}, None)["loopback"]
    assert egress.decide("http://127.8.9.10/v1", True, {}, None)["loopback"]
    for url in (
        "http://[2001:db8::1]/v1",
        "http://0.0.0.0:8000/v1",
        "https://zdr.example.org:8443/v1",
        "http://zdr.example.org/v1",
    ):  # other port / scheme is another origin
        with pytest.raises(Refused):
            egress.decide(url, True, file_params, DUA)
    rec = egress.decide("https://ZDR.example.org./v1", True, file_params, DUA)
    assert rec["endpoint"] == "https://zdr.example.org:443" and rec["dua"]
    with pytest.raises(UsageError, match="names no known agreement"):
        egress.decide("https://zdr.example.org/v1", True, file_params, "yes")
    with pytest.raises(UsageError):
        egress.decide("file:///etc/passwd", True, {}, None)
    with pytest.raises(Refused):  # loopback can be switched off
        egress.decide("http://localhost/v1", True, {"simplify": {"egress": {"allow_loopback": False}}}, None)
