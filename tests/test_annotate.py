"""The annotator's documents, page escaping, MIMIC guard, server and ingest (agreement by hand)."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from medsimp.annotate import ingest
from medsimp.annotate.documents import from_pairs
from medsimp.annotate.page import make_server, page_data, render
from medsimp.cli import main
from medsimp.errors import UsageError

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "builders"))
import upstream

EVIL = '</script><img src=x onerror="window.pwned=1"><b>&amp;</b>'


def _doc(complex_, simple, alignments=()):
    return {
        "doc_id": "d",
        "language": "en",
        "complex": complex_,
        "simple": simple,
        "alignments": [{"c": c, "s": s, "method": "crf", "scores": {}, "keep": True} for c, s in alignments],
        "sim": {},
    }


def _export(who: str, pairs: list[tuple[int, int]], labels=None, done=True, doc_id="d") -> dict:
    labels = labels or {}
    return {
        "format": "medsimp-annotations",
        "version": 1,
        "annotator": who,
        "lineage": ["plaba"],
        "documents": [
            {
                "doc_id": doc_id,
                "language": "en",
                "done": done,
                "complex": ["c0", "c1"],
                "simple": ["s0", "s1"],
                "alignments": [
                    {"c": c, "s": s, "state": "added", "labels": labels.get((c, s), {})} for c, s in pairs
                ],
            }
        ],
    }


def test_pairs_of_a_filter_output_become_whole_documents_in_order(tmp_path):
    paths = upstream.write_cochrane(tmp_path)
    docs, counts = from_pairs(Path(paths["pairs"]).parent, Path(paths["sentences"]).parent, language="es")
    assert docs and all(d["language"] == "es" for d in docs)
    assert counts["pairs"] == sum(len(d["alignments"]) for d in docs)
    import pyarrow.parquet as pq

    sentences = pq.read_table(paths["sentences"]).to_pylist()
    d = docs[0]
    doi = d["doc_id"].rsplit(":", 1)[0]
    mine = sorted(
        (s for s in sentences if s["doc_id"] == doi and s["side"] == "complex"),
        key=lambda s: s["sentence_index"],
    )
    assert d["complex"] == [s["text"] for s in mine]  # every sentence, aligned or not
    a = d["alignments"][0]
    assert a["method"] and "overlap_r" in a["scores"] and a["keep"] in (True, False)


def test_page_escapes_every_text(tmp_path):
    html = render([_doc([EVIL], ["plain"], [(0, 0)])], f"title {EVIL}", ["plaba"])
    assert "<img" not in html and "<b>" not in html
    assert html.count("</script>") == html.count("<script")  # no early close of the data block
    data = html.split('id="data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["docs"][0]["complex"] == [EVIL]  # the text itself is kept intact


def test_restricted_input_needs_the_flag_and_gets_the_banner(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("Pt c/o SOB.\nHx of CHF.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("The patient is short of breath.\n", encoding="utf-8")
    (tmp_path / "al.txt").write_text("[0]:[0]\n[1]:[]\n", encoding="utf-8")
    args = [
        "annotate",
        "page",
        "--src",
        str(tmp_path / "a.txt"),
        "--tgt",
        str(tmp_path / "b.txt"),
        "--alignments",
        str(tmp_path / "al.txt"),
        "--set",
        "annotate.similarities=[overlap]",
        "--output",
        str(tmp_path / "page"),
    ]
    assert main(args) == 3  # unknown lineage counts as MIMIC-derived
    err = capsys.readouterr().err.splitlines()  # the announce line, then the one-line refusal
    assert len(err) == 2 and "--show-restricted" in err[1] and "SOB" not in "\n".join(err)
    assert not (tmp_path / "page").exists()
    assert main([*args, "--show-restricted"]) == 0
    html = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    data = json.loads(html.split('id="data">', 1)[1].split("</script>", 1)[0])
    assert data["restricted"] is True and data["lineage"] is None
    assert data["docs"][0]["alignments"] == [
        {"c": [0], "s": [0], "method": "vecalign", "scores": {}, "keep": None}
    ]
    assert 'id="banner" role="alert"' in html  # shown in the markup itself, not only by script
    with pytest.raises(UsageError, match="loopback addresses only"):
        make_server(html, "0.0.0.0", 0, tmp_path / "saved", data={**_data([]), "restricted": True})
    assert not (tmp_path / "saved").exists()


def _data(docs, lineage=("plaba",)) -> dict:
    return page_data(docs, "t", list(lineage) if lineage is not None else None, "/save")


@contextlib.contextmanager
def _serving(tmp_path, lineage=("plaba",), host="127.0.0.1", **kw):
    data = _data([_doc(["c0", "c1"], ["s0", "s1"], [(0, 0)])], lineage)
    html = render(data["docs"], "t", data["lineage"], "/save")
    server = make_server(html, host, 0, tmp_path / "saved", data=data, **kw)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _post(server, body: bytes | dict, *, token=None, origin=None, host=None, headers=None):
    """POST /save over a raw connection: (status, body)."""
    port = server.server_address[1]
    here = f"127.0.0.1:{port}"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.putrequest("POST", "/save", skip_host=True, skip_accept_encoding=True)
        body = json.dumps(body).encode() if isinstance(body, dict) else body
        sent = {
            "Host": host or here,
            "Origin": origin or f"http://{here}",
            "X-Medsimp-Token": server.session.token if token is None else token,
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
            **(headers or {}),
        }
        for k, v in sent.items():
            if v is not None:
                conn.putheader(k, v)
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def _get(server, path: str, host: str | None = None):
    port = server.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host or f"127.0.0.1:{port}")
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _page_export(server, who="ann2", pairs=((0, 0),), **extra) -> dict:
    out = _export(who, list(pairs))
    d = server.session.data["docs"][0]
    out["documents"][0].update(doc_id=d["doc_id"], complex=d["complex"], simple=d["simple"])
    return {**out, "page_id": server.session.data["page_id"], **extra}


def test_server_serves_the_page_and_saves_exports_only_with_token_host_and_origin(tmp_path):
    with _serving(tmp_path) as server:
        token = server.session.token
        assert server.url == f"http://127.0.0.1:{server.server_address[1]}/?token={token}"
        assert urllib.request.urlopen(server.url).read().startswith(b"<!DOCTYPE html>")
        for path, host in [
            ("/", None),  # no token
            ("/?token=" + "x" * len(token), None),  # a wrong one
            ("/?token=" + token, f"evil.example:{server.server_address[1]}"),  # DNS rebinding
            ("/?token=" + token, "127.0.0.1:1"),  # another port
        ]:
            status, body = _get(server, path, host)
            assert status == 403 and b"DOCTYPE" not in body
        export = _page_export(server)
        assert _post(server, export, token="")[0] == 403
        assert _post(server, export, origin="http://127.0.0.1:1")[0] == 403  # another origin
        assert _post(server, export, origin="null")[0] == 403  # file:// or a sandbox
        assert _post(server, export, host="evil.example")[0] == 403
        assert server.session.refusals == {"token": 3, "host": 3, "origin": 2}
        assert not list((tmp_path / "saved").iterdir())
        assert _post(server, export) == (200, "saved")
        saved = tmp_path / "saved" / "annotations-ann2.json"
        assert saved.stat().st_mode & 0o777 == 0o600
        data = json.loads(saved.read_text())
        assert data["annotator"] == "ann2" and data["lineage"] == ["plaba"]
        assert data["saved"] == {"by": "medsimp annotate serve", "session": server.session.session_id}
        bad = {**export, "annotator": "../../etc/passwd"}
        assert _post(server, bad)[0] == 400
        assert sorted(p.name for p in (tmp_path / "saved").iterdir()) == ["annotations-ann2.json"]


def test_saves_go_to_names_the_server_derives_and_never_over_a_users_file(tmp_path):
    (tmp_path / "saved").mkdir()
    (tmp_path / "saved" / "package.json").write_text('{"name": "mine"}')
    (tmp_path / "saved" / "annotations-x.json").write_text('{"mine": true}')
    with _serving(tmp_path, lineage=None) as server:  # unknown lineage
        export = _page_export(server, "package", lineage=["plaba"])  # a public lineage claimed
        assert _post(server, export) == (200, "saved")
        assert (tmp_path / "saved" / "package.json").read_text() == '{"name": "mine"}'
        assert json.loads((tmp_path / "saved" / "annotations-package.json").read_text())["lineage"] is None
        status, text = _post(server, _page_export(server, "x"))
        assert status == 409 and "not this page's export saved by medsimp" in text
        assert (tmp_path / "saved" / "annotations-x.json").read_text() == '{"mine": true}'
        # forged exports: another page, other documents, a pair out of range: no gold from them
        assert _post(server, _page_export(server, "f1", page_id="0" * 16))[0] == 400
        forged = _page_export(server, "f2")
        forged["documents"][0]["complex"] = ["other", "text"]
        assert _post(server, forged)[0] == 400
        assert _post(server, _page_export(server, "f3", pairs=[(5, 5)]))[0] == 400
        assert _post(server, _page_export(server, "package", pairs=[(1, 1)])) == (200, "saved")
    with _serving(tmp_path, lineage=None) as server:  # a new session may replace its own saves
        assert _post(server, _page_export(server, "package")) == (200, "saved")
    names = sorted(p.name for p in (tmp_path / "saved").iterdir())
    assert names == ["annotations-package.json", "annotations-x.json", "package.json"]


def test_concurrent_saves_of_one_annotator_all_land(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with _serving(tmp_path) as server:
        exports = [_page_export(server, "same", pairs=[(n % 2, n % 2)]) for n in range(40)]
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda e: _post(server, e), exports))
    assert results == [(200, "saved")] * 40
    assert [p.name for p in (tmp_path / "saved").iterdir()] == ["annotations-same.json"]  # no temp left
    assert json.loads((tmp_path / "saved" / "annotations-same.json").read_text())["annotator"] == "same"


def _raw(server, head: bytes, timeout: float = 5.0) -> bytes:
    """Send raw request bytes and return the response (the server must answer in `timeout`)."""
    port = server.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_bad_lengths_are_refused_without_reading_and_deep_json_is_a_400(tmp_path):
    with _serving(tmp_path) as server:
        port, token = server.server_address[1], server.session.token
        head = (
            f"POST /save HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n"
            f"X-Medsimp-Token: {token}\r\n"
        ).encode()
        for length, status in [(b"-1", b"400"), (b"1e9", b"400"), (b"999999999999", b"413"), (None, b"411")]:
            extra = b"Content-Length: " + length + b"\r\n" if length else b""
            start = time.monotonic()
            resp = _raw(server, head + extra + b"\r\n")  # no body follows, the socket stays open
            assert resp.split(b" ", 2)[1] == status, resp[:80]
            assert time.monotonic() - start < 2  # answered at once, not after reading or a timeout
        chunked = _raw(server, head + b"Transfer-Encoding: chunked\r\n\r\n")
        assert chunked.split(b" ", 2)[1] == b"411"
        status, text = _post(server, b"[" * 200_000)
        assert (status, text) == (400, "not JSON (or nested too deeply)")
        status, text = _post(server, b'{"a":' * 100_000 + b"1" + b"}" * 100_000)
        assert status == 400 and "\n" not in text
        assert _post(server, _page_export(server))[0] == 200  # still serving


def test_idle_connections_are_bounded_and_time_out(tmp_path):
    with _serving(tmp_path, timeout=1.0, connections=4, pending=4) as server:
        port = server.server_address[1]
        before = threading.active_count()
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
        try:
            time.sleep(0.3)
            assert threading.active_count() <= before + 8  # 60 idle connections, 4 + 4 threads at most
            # the newest connections cut the oldest idle ones: an annotator gets in at once
            assert _get(server, "/?token=" + server.session.token)[0] == 200
            _wait_until(lambda: threading.active_count() <= before, 5)  # each dropped after 1 s
        finally:
            for s in idle:
                s.close()


def _half_sent(port: int, n: int) -> list[socket.socket]:
    """`n` connections that send half a request without the token and hold."""
    held = []
    heads = [
        f"POST /save HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\nContent-Le",
        "GET /?page=1 HTTP/1.1\r\nHost: 127.0.0.1",
    ]
    for k in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(heads[k % 2].encode())
        held.append(s)
    return held


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_clients_that_send_half_a_request_without_the_token_do_not_starve_annotators(tmp_path):
    """Issue 54: 16 half-sent requests without the token held every slot, and 20 of 20
    annotators' requests were refused for 40 s. Now they hold only the pending pool (the
    oldest cut when it is full) and annotators are served at once, with the default limits."""
    from concurrent.futures import ThreadPoolExecutor

    from medsimp.annotate.page import CONNECTIONS, PENDING, REQUEST_DEADLINE

    with _serving(tmp_path) as server:
        port = server.server_address[1]
        before = threading.active_count()
        held = _half_sent(port, PENDING + 16)  # more than the pending pool holds
        try:
            time.sleep(0.3)
            assert threading.active_count() <= before + PENDING + CONNECTIONS
            start = time.monotonic()
            jobs = [("get", None)] * 10 + [("post", f"ann{n}") for n in range(10)]

            def annotator(job):
                kind, who = job
                if kind == "get":
                    return _get(server, "/?token=" + server.session.token)[0]
                return _post(server, _page_export(server, who))[0]

            with ThreadPoolExecutor(4) as pool:
                codes = list(pool.map(annotator, jobs))
            took = time.monotonic() - start
            assert codes == [200] * 20
            assert took < min(3.0, REQUEST_DEADLINE)  # served while the half-sent ones still hold
            saved = sorted(p.name for p in (tmp_path / "saved").iterdir())
            assert saved == sorted(f"annotations-ann{n}.json" for n in range(10))
            # the half-sent connections are cut at the deadline (the oldest ones sooner, by eviction)
            for s in held:
                s.settimeout(REQUEST_DEADLINE + 3)
                try:
                    assert s.recv(1024) == b""
                except ConnectionResetError:
                    pass
            _wait_until(lambda: threading.active_count() <= before, 3)
        finally:
            for s in held:
                s.close()


def _wait_until(predicate, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.05)


def test_server_listens_on_ipv6_loopback(tmp_path):
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    with _serving(tmp_path, lineage=None, host="::1") as server:  # restricted: loopback is fine
        port = server.server_address[1]
        assert server.url.startswith(f"http://[::1]:{port}/?token=")
        conn = http.client.HTTPConnection("::1", port, timeout=10)
        conn.request("GET", "/?token=" + server.session.token)
        assert conn.getresponse().status == 200
        conn.close()


def _serve_args(tmp_path, *extra: str) -> list[str]:
    (tmp_path / "a.txt").write_text("Pt c/o SOB.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("The patient is short of breath.\n", encoding="utf-8")
    return [
        "annotate",
        "serve",
        "--src",
        str(tmp_path / "a.txt"),
        "--tgt",
        str(tmp_path / "b.txt"),
        "--set",
        "annotate.similarities=[overlap]",
        *extra,
    ]


def test_serve_flag_errors_are_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    cases = [
        (["--port", "99999", "--save-dir", str(tmp_path / "s")], "is not a port number"),
        (["--port", "-1", "--save-dir", str(tmp_path / "s")], "is not a port number"),
        (["--host", "my.example", "--save-dir", str(tmp_path / "s")], "is not an IP address"),
        (["--save-dir", str(tmp_path / "file")], "is not a folder"),
        (
            ["--port", str(busy.getsockname()[1]), "--show-restricted", "--save-dir", str(tmp_path / "s")],
            "cannot listen",
        ),
        (
            ["--host", "0.0.0.0", "--show-restricted", "--save-dir", str(tmp_path / "s")],
            "loopback addresses only",
        ),
        (["--host", "::", "--show-restricted", "--save-dir", str(tmp_path / "s")], "loopback addresses only"),
    ]
    try:
        for extra, message in cases:
            assert main(_serve_args(tmp_path, *extra)) == 2, extra
            err = capsys.readouterr().err
            last = err.strip().splitlines()[-1]
            assert message in last and "Traceback" not in err and "SOB" not in err, err
    finally:
        busy.close()
    assert (tmp_path / "file").read_text() == "x"


def test_gold_file_lineage_is_never_taken_from_its_format(tmp_path, capsys):
    gold = tmp_path / "mc_human.json"  # any JSON reads as MC-CLEAN; this one is a MIMIC note
    gold.write_text(
        json.dumps({"n1": {"abstract": ["Pt is a ___ yo M."], "pls": ["The man."], "alignments": [[0, 0]]}})
    )
    args = ["annotate", "page", "--gold", str(gold), "--set", "annotate.similarities=[overlap]"]
    assert main([*args, "--output", str(tmp_path / "p")]) == 3
    assert "--show-restricted" in capsys.readouterr().err
    assert main([*args, "--output", str(tmp_path / "p"), "--show-restricted"]) == 0
    html = (tmp_path / "p" / "index.html").read_text(encoding="utf-8")
    data = json.loads(html.split('id="data">', 1)[1].split("</script>", 1)[0])
    assert data["lineage"] is None and data["restricted"] is True
    assert 'id="banner" role="alert"' in html
    serve = ["annotate", "serve", "--gold", str(gold), "--show-restricted", "--host", "0.0.0.0"]
    assert main([*serve, "--save-dir", str(tmp_path / "s"), "--set", "annotate.similarities=[overlap]"]) == 2
    assert "loopback addresses only" in capsys.readouterr().err
    # the sample PLABA file is not public just because it parses as PLABA
    plaba = Path(__file__).resolve().parents[1] / "data/sample/plaba.json"
    assert main(["annotate", "page", "--gold", str(plaba), "--output", str(tmp_path / "q")]) == 3


def test_agreement_and_majority_gold_equal_a_hand_computed_case(tmp_path):
    """3 annotators on a 2 x 2 document. A: {00, 11}, B: {00}, C: {00, 10}.
    Gold (> 1/2 of 3): {00}. F1 vs the others' majority (> 1/2 of 2: both) = {00}:
    A 2/3, B 1, C 2/3, macro 7/9. Alpha over the 4 cells (values 111, 000, 001, 100):
    coincidences o00 = 5, o11 = 3, o01 = o10 = 2, n = 12, n0 = 7, n1 = 5;
    D_o = 4/12, D_e = 2*7*5/(12*11) = 35/66, alpha = 1 - (1/3)/(35/66) = 13/35."""
    files = []
    for who, pairs, lab in (("A", [(0, 0), (1, 1)], 0), ("B", [(0, 0)], 1), ("C", [(0, 0), (1, 0)], 2)):
        path = tmp_path / "in" / f"{who}.json"
        path.parent.mkdir(exist_ok=True)
        labels = {(0, 0): {"elaboration": lab, "insertion": 0}}
        path.write_text(json.dumps(_export(who, pairs, labels)), encoding="utf-8")
        files.append(path)
    docs, work, lineage = ingest.read_exports(files)
    assert lineage == ["plaba"]
    agree = ingest.agreement(docs, work, 0.5, ["insertion", "elaboration"])
    assert agree["f1_vs_majority_of_others"] == {"A": round(2 / 3, 6), "B": 1.0, "C": round(2 / 3, 6)}
    assert agree["f1_macro"] == round(7 / 9, 6)
    assert agree["alpha_alignment"] == round(13 / 35, 6)
    assert agree["alpha_labels"]["insertion"] is None  # no variation: alpha undefined
    assert (
        main(
            [
                "annotate",
                "ingest",
                str(tmp_path / "in"),
                "--output",
                str(tmp_path / "gold"),
                "--metrics",
                str(tmp_path / "m.json"),
            ]
        )
        == 0
    )
    gold = [json.loads(x) for x in (tmp_path / "gold" / "gold.jsonl").read_text().splitlines()]
    assert gold == [
        {"doc_id": "d", "group": "", "complex": ["c0", "c1"], "simple": ["s0", "s1"], "pairs": [[0, 0]]}
    ]
    labels = [json.loads(x) for x in (tmp_path / "gold" / "labels.jsonl").read_text().splitlines()]
    assert labels == [{"doc_id": "d", "c": 0, "s": 0, "labels": {"elaboration": 1, "insertion": 0}}]
    assert (tmp_path / "gold" / "vecalign" / "00000.align").read_text() == "[0]:[0]\n[]:[1]\n[1]:[]\n"
    stats = json.loads((tmp_path / "gold" / "stats.json").read_text())  # m.json: the headline
    assert (stats["read"], stats["kept"], stats["annotators"]) == (1, 1, 3)


def test_unfinished_documents_are_left_out_and_bad_exports_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "a.json").write_text(json.dumps(_export("A", [(0, 0)], done=False)))
    (tmp_path / "b.json").write_text(json.dumps(_export("B", [(1, 1)], doc_id="e")))
    assert (
        main(
            [
                "annotate",
                "ingest",
                str(tmp_path / "a.json"),
                str(tmp_path / "b.json"),
                "--output",
                str(tmp_path / "g"),
                "--metrics",
                str(tmp_path / "m.json"),
            ]
        )
        == 0
    )
    stats = json.loads((tmp_path / "m.json").read_text())
    assert (stats["read"], stats["kept"], stats["filtered"]) == (2, 1, 1)  # A's is not done
    (tmp_path / "b.json").write_text(json.dumps(_export("A", [(1, 1)], doc_id="e")))
    assert (
        main(
            [
                "annotate",
                "ingest",
                str(tmp_path / "a.json"),
                str(tmp_path / "b.json"),
                "--output",
                str(tmp_path / "g"),
            ]
        )
        == 2
    )
    assert "appears in two files" in capsys.readouterr().err
    (tmp_path / "c.json").write_text('{"format": "other"}')
    assert main(["annotate", "ingest", str(tmp_path / "c.json"), "--output", str(tmp_path / "g")]) == 2
    assert "not a medsimp annotation export" in capsys.readouterr().err


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_page_opens_on_the_multicochrane_es_builder_config(tmp_path):
    import yaml

    paths = upstream.write_cochrane(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"build": {"multicochrane": paths}}), encoding="utf-8")
    builder = tmp_path / "builders" / "multicochrane"
    assert main(["--params", str(params), "build", "multicochrane", "--output", str(builder)]) == 0
    out = tmp_path / "page"
    assert (
        main(
            [
                "annotate",
                "page",
                "--pairs",
                str(builder),
                "--config",
                "es",
                "--sentences",
                paths["sentences"],
                "--output",
                str(out),
                "--set",
                "annotate.similarities=[overlap]",
            ]
        )
        == 0
    )
    html = (out / "index.html").read_text(encoding="utf-8")
    data = json.loads(html.split('id="data">', 1)[1].split("</script>", 1)[0])
    assert data["restricted"] is False and data["lineage"] == ["cochrane"]
    assert data["docs"] and {d["language"] for d in data["docs"]} == {"es"}
    assert data["measures"] == ["overlap"]
    d = data["docs"][0]
    assert len(d["sim"]["overlap"]) == len(d["complex"]) and len(d["sim"]["overlap"][0]) == len(d["simple"])
    assert {a["method"] for doc in data["docs"] for a in doc["alignments"]} <= {"crf+vecalign"}


@pytest.mark.slow
def test_crf_similarity_is_the_aligners_pair_probability():
    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "alignment"))
    from fakes import HashEncoder

    from alignment.crf import CRFAligner
    from alignment.gold import read_gold
    from medsimp.annotate.similarity import cosine_matrix, crf_matrix, overlap_matrix
    from medsimp.params_schema import Crf

    docs = read_gold(Path(__file__).resolve().parents[1] / "data/sample/align_gold.jsonl")
    enc = HashEncoder()
    model = CRFAligner.train(docs, enc, Crf(epochs=5))
    d = docs[0]
    mat = crf_matrix(model, d.complex, d.simple)
    assert mat.shape == (len(d.complex), len(d.simple)) and ((mat >= 0) & (mat <= 1 + 1e-9)).all()
    for (c, s), p in model.align(d.complex, d.simple).pairs.items():
        assert abs(mat[c, s] - p) < 1e-6
    cos = cosine_matrix(enc, d.complex, d.simple, "en")
    assert abs(cos[0, 0] - (enc.encode([d.complex[0]]) @ enc.encode([d.simple[0]]).T)[0, 0]) < 1e-6
    r = overlap_matrix(["The cat sat."], ["cats sat", "dog"], "en")
    assert r.tolist() == [[1.0, 0.0]]  # lemmas: cats -> cat


@pytest.mark.parametrize(
    "alignment, said",
    [
        ({"c": 1.5, "s": 0}, "sentence index 1.5 is not a whole number"),
        ({"c": True, "s": 0}, "sentence index true is not a whole number"),
        ({"c": 0, "s": "1"}, 'sentence index "1" is not a whole number'),
        (
            {"c": 0, "s": 0, "labels": {"elaboration": float("nan")}},
            "'elaboration' = NaN is not a whole number",
        ),
        ({"c": 0, "s": 0, "labels": {"elaboration": [1]}}, "'elaboration' = [1] is not a whole number"),
        ({"c": 0, "s": 0, "labels": [1]}, "labels must be an object"),
    ],
)
def test_ingest_refuses_indexes_and_labels_that_are_not_whole_numbers(tmp_path, alignment, said):
    """Issue 35 item 7: `"c": 1.5` or `true` became sentence 1 (gold pairs 54 -> 53 with
    rejected 0); NaN or list labels were internal errors. Each is one line naming the file."""
    from medsimp.annotate import ingest
    from medsimp.errors import InputError

    export = _export("ann", [(0, 0)])
    export["documents"][0]["alignments"] = [{"state": "added", **alignment}]
    path = tmp_path / "ann.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    with pytest.raises(InputError) as err:
        ingest.read_exports([path])
    assert said in str(err.value) and str(path) in str(err.value)


def _other_page_server(tmp_path):
    data = _data([_doc(["o0", "o1"], ["t0", "t1"], [(0, 0)])])
    html = render(data["docs"], "t", data["lineage"], "/save")
    server = make_server(html, "127.0.0.1", 0, tmp_path / "saved", data=data)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_serve_of_another_page_never_replaces_work_saved_on_the_first(tmp_path):
    with _serving(tmp_path) as server:
        assert _post(server, _page_export(server, "ann")) == (200, "saved")
    first = (tmp_path / "saved" / "annotations-ann.json").read_bytes()
    other = _other_page_server(tmp_path)  # the same --save-dir, another page
    try:
        export = _page_export(other, "ann")
        export["documents"][0].update(complex=["o0", "o1"], simple=["t0", "t1"])
        status, text = _post(other, export)
        assert status == 409 and "another page" in text
    finally:
        other.shutdown()
        other.server_close()
    assert (tmp_path / "saved" / "annotations-ann.json").read_bytes() == first


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_trickling_connections_are_cut_at_the_request_deadline(tmp_path):
    with _serving(tmp_path, timeout=1.0, connections=2, deadline=2.0) as server:
        port = server.server_address[1]
        stop = threading.Event()
        cut: list[float] = []

        def trickle():
            start = time.monotonic()
            with socket.create_connection(("127.0.0.1", port)) as s:
                try:
                    while not stop.is_set():
                        s.sendall(b"G")  # a byte each 0.3 s: never silent for `timeout`
                        time.sleep(0.3)
                except OSError:
                    cut.append(time.monotonic() - start)  # cut by the server

        threads = [threading.Thread(target=trickle, daemon=True) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.5)  # more trickling clients than serving slots
            assert _get(server, "/?token=" + server.session.token)[0] == 200  # served meanwhile
            _wait_until(lambda: len(cut) == 4, 6)
            assert all(1.5 < t < 4.0 for t in cut), cut  # at the deadline (2 s), not before
        finally:
            stop.set()
            for t in threads:
                t.join(5)


def test_a_client_that_hangs_up_is_no_traceback(tmp_path, capsys):
    with _serving(tmp_path) as server:
        for exc in (BrokenPipeError(), ConnectionResetError()):
            try:
                raise exc
            except OSError:
                server.handle_error(None, ("127.0.0.1", 1))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("quoted request text")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 1))
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and "quoted" not in err
