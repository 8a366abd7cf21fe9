"""The annotator in headless Chromium: align by click and by keyboard, delete, label, reload
(work kept), export, ingest the export and train the CRF on it. Needs Debian's chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_humaneval_browser import _wait, browser  # noqa: F401 - the Chromium fixture

from medsimp.cli import main

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.browser, pytest.mark.slow]
KEYS = {"Enter": ("Enter", 13, "\r"), "ArrowDown": ("ArrowDown", 40, ""), "ArrowUp": ("ArrowUp", 38, "")}


def press(page, key: str) -> None:
    if key in KEYS:
        code, vk, text = KEYS[key]
    else:
        code, vk, text = (f"Key{key.upper()}" if key.isalpha() else f"Digit{key}"), ord(key.upper()), key
    page.call(
        "Input.dispatchKeyEvent", type="keyDown", key=key, code=code, windowsVirtualKeyCode=vk, text=text
    )
    page.call("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=vk)


def double_click(page, selector: str) -> None:
    x, y = page.js(f"""(() => {{ const r = document.querySelector({json.dumps(selector)})
        .getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
    for count in (1, 2):
        for kind in ("mousePressed", "mouseReleased"):
            page.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=count)


def pair_state(page, c: int, s: int):
    """The state the page stores for (c, s) (null when absent)."""
    return page.js(
        f"(() => {{ const st = work.docs[DATA.docs[docIndex].doc_id].pairs['{c}-{s}'];"
        " return st ? st.state : null; })()"
    )


def test_annotate_export_ingest_and_train(tmp_path, browser):  # noqa: F811
    out = tmp_path / "page"
    assert (
        main(
            [
                "annotate",
                "page",
                "--gold",
                str(REPO / "data/sample/plaba.json"),
                "--output",
                str(out),
                "--show-restricted",  # a gold file's lineage is unknown: its format proves nothing
                "--set",
                "annotate.similarities=[overlap]",
            ]
        )
        == 0
    )
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    top, page = browser
    top.call("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
    url = (out / "index.html").as_uri()
    page.call("Page.navigate", url=url)
    _wait(lambda: page.js("document.readyState === 'complete' && !!document.getElementById('c-0')"))
    assert not page.js("document.getElementById('banner').classList.contains('hidden')")  # unknown
    assert page.js("document.querySelectorAll('#complex li').length") == 6
    page.click("#c-0")
    page.click("#s-1")  # no annotator yet: nothing changes, the page asks for a name
    assert "annotator name" in page.js("document.getElementById('status').textContent")
    page.click("#annotator")
    page.call("Input.insertText", text="ann1")
    press(page, "Enter")
    _wait(lambda: page.js("who") == "ann1")

    # document 1: C1-S1, C2-S2+S3 ... are PLABA's proposals
    assert pair_state(page, 0, 0) == "proposed"
    page.click("#c-5")  # mouse: align C6 (a deletion in PLABA) with S6
    page.click("#s-5")
    assert pair_state(page, 5, 5) == "added"
    page.click("#c-0")
    press(page, "j")  # keyboard: C2, the best-ranked simple sentence first
    assert page.js("ci") == 1
    ranked = page.js("ranking()")
    press(page, "ArrowDown")
    assert page.js("sj") == ranked[1]
    press(page, "Enter")
    assert pair_state(page, 1, ranked[1]) in ("accepted", "added")
    press(page, "4")  # elaboration 0, then 1
    press(page, "4")
    assert page.js(f"work.docs[DATA.docs[0].doc_id].pairs['1-{ranked[1]}'].labels.elaboration") == 1
    double_click(page, "#s-0")  # C2-S1 does not exist: dblclick first aligns (click), then deletes
    assert pair_state(page, 1, 0) is None
    page.click("#c-3")
    double_click(page, "#s-4")  # delete the proposal C4-S5
    assert pair_state(page, 3, 4) == "rejected"
    press(page, "u")  # undo: back to the click of the double-click, which accepted it
    assert pair_state(page, 3, 4) == "accepted"
    press(page, "x")  # keyboard delete
    assert pair_state(page, 3, 4) == "rejected"
    press(page, "m")  # done
    assert page.js("document.getElementById('done').checked")

    page.call("Page.reload")  # the work survives a reload (local storage)
    _wait(lambda: page.js("document.readyState === 'complete' && typeof work !== 'undefined' && !!work"))
    assert page.js("who") == "ann1"
    assert pair_state(page, 3, 4) == "rejected" and pair_state(page, 5, 5) == "added"
    assert page.js("document.getElementById('done').checked")

    press(page, "n")
    assert page.js("docIndex") == 1
    press(page, "m")  # document 2 done as proposed
    press(page, "e")
    export = _wait(lambda: next(iter(downloads.glob("annotations-ann1.json")), None))
    _wait(lambda: export.read_text(encoding="utf-8").rstrip().endswith("}"))
    data = json.loads(export.read_text(encoding="utf-8"))
    assert data["annotator"] == "ann1" and [d["done"] for d in data["documents"]][:3] == [True, True, False]
    assert page.js("document.getElementById('status').textContent") == "Exported 5 documents (2 done)."

    gold_dir = tmp_path / "gold"
    assert main(["annotate", "ingest", str(export), "--output", str(gold_dir)]) == 0
    rows = [json.loads(line) for line in (gold_dir / "gold.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    first = {tuple(p) for p in rows[0]["pairs"]}
    assert (5, 5) in first and (3, 4) not in first and (0, 0) in first and (1, ranked[1]) in first
    labels = [json.loads(line) for line in (gold_dir / "labels.jsonl").read_text().splitlines()]
    assert {"doc_id": rows[0]["doc_id"], "c": 1, "s": ranked[1], "labels": {"elaboration": 1}} in labels
    assert (gold_dir / "vecalign" / "00000.align").read_text().splitlines()[0] == "[0]:[0]"
    model = tmp_path / "crf"
    assert (
        main(
            [
                "align",
                "train",
                "--gold",
                str(gold_dir / "gold.jsonl"),
                "--output",
                str(model),
                "--set",
                "align.crf.epochs=3",
                "--set",
                "align.self_training.enabled=false",
            ]
        )
        == 0
    )
    stats = json.loads((model / "stats.json").read_text())
    assert stats["documents"] == 2 and stats["gold_pairs"] == sum(len(r["pairs"]) for r in rows)


def test_markup_in_sentences_is_shown_as_text(tmp_path, browser):  # noqa: F811
    evil = '</script><img src=x onerror="window.pwned=1"><b id="bold">x</b>'
    (tmp_path / "a.txt").write_text(f"{evil}\nsecond\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text(f"{evil}\n", encoding="utf-8")
    out = tmp_path / "page"
    assert (
        main(
            [
                "annotate",
                "page",
                "--src",
                str(tmp_path / "a.txt"),
                "--tgt",
                str(tmp_path / "b.txt"),
                "--show-restricted",
                "--output",
                str(out),
                "--set",
                "annotate.similarities=[overlap]",
            ]
        )
        == 0
    )
    _, page = browser
    page.call("Page.navigate", url=(out / "index.html").as_uri() + "?annotator=" + "%3Cb%3Ez")
    _wait(lambda: page.js("document.readyState === 'complete' && !!document.getElementById('c-0')"))
    assert page.js("document.querySelectorAll('img, #bold').length") == 0
    assert page.js("window.pwned === undefined")
    assert page.js("document.getElementById('c-0').firstChild.textContent") == evil
    assert not page.js("document.getElementById('banner').classList.contains('hidden')")
    page.click("#s-0")  # an annotator name with markup is text too
    assert page.js("document.querySelectorAll('#simple li .badge').length") == 1
    assert page.js("document.querySelectorAll('img, b').length") == 0


def test_served_page_saves_the_export_on_the_server(tmp_path, browser):  # noqa: F811
    import os
    import subprocess
    import sys

    saved = tmp_path / "saved"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "medsimp.cli",
            "annotate",
            "serve",
            "--gold",
            str(REPO / "data/sample/plaba.json"),
            "--port",
            "0",
            "--save-dir",
            str(saved),
            "--show-restricted",
            "--set",
            "annotate.similarities=[overlap]",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        line = ""
        while "serving" not in line:
            line = proc.stderr.readline()
            assert line, "the server exited"
        url = line.split()[1]
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        top, page = browser
        top.call("Browser.setDownloadBehavior", behavior="deny")  # the server's copy is checked
        page.call("Page.navigate", url=url + "&annotator=ann3")
        _wait(lambda: page.js("document.readyState === 'complete' && !!document.getElementById('c-0')"))
        press(page, "m")
        press(page, "e")
        out = _wait(lambda: next(iter(saved.glob("annotations-ann3.json")), None))
        data = json.loads(out.read_text(encoding="utf-8"))
        assert data["annotator"] == "ann3" and data["documents"][0]["done"] is True
        assert data["lineage"] is None and out.stat().st_mode & 0o777 == 0o600
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_rank_order_toggle_lists_simple_sentences_by_combined_score(tmp_path, browser):  # noqa: F811
    out = tmp_path / "page"
    assert (
        main(
            [
                "annotate",
                "page",
                "--gold",
                str(REPO / "data/sample/plaba.json"),
                "--output",
                str(out),
                "--show-restricted",
                "--set",
                "annotate.similarities=[overlap]",
            ]
        )
        == 0
    )
    _, page = browser
    page.call("Page.navigate", url=(out / "index.html").as_uri() + "?annotator=r")
    _wait(lambda: page.js("document.readyState === 'complete' && !!document.getElementById('c-0')"))
    page.click("#c-2")
    order = "[...document.querySelectorAll('#simple li')].map((li) => Number(li.dataset.j))"
    assert page.js(order) == list(range(6))
    press(page, "o")
    ranked = page.js(order)
    scores = page.js("DATA.docs[0].sim.overlap[2]")
    assert sorted(ranked) == list(range(6)) and ranked != list(range(6))
    assert [scores[j] for j in ranked] == sorted(scores, reverse=True)
    assert page.js("document.getElementById(`s-${" + str(ranked[0]) + "}`).value") == ranked[0] + 1


@pytest.fixture()
def rebinding_browser(tmp_path):
    """Chromium that resolves evil.example to 127.0.0.1 (a DNS-rebinding attacker's name)."""
    import subprocess
    import urllib.request

    from test_humaneval_browser import CDP, CHROMIUM, FLAGS

    profile = tmp_path / "profile-rebind"
    proc = subprocess.Popen(
        [
            str(CHROMIUM),
            *FLAGS,
            "--host-resolver-rules=MAP evil.example 127.0.0.1",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        port = _wait(lambda: port_file.exists() and port_file.read_text().split("\n")[0])
        base = f"http://127.0.0.1:{port}"
        targets = _wait(
            lambda: [t for t in json.load(urllib.request.urlopen(f"{base}/json/list")) if t["type"] == "page"]
        )
        yield CDP(targets[0]["webSocketDebuggerUrl"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_server_refuses_another_origin_and_a_foreign_host_in_chromium(tmp_path, rebinding_browser):
    """A page on another local origin posts exports (no-cors fetch, form, fetch with the leaked
    token), and the page is opened under a rebinding name: all refused, nothing saved, while the
    server's own page saves."""
    import functools
    import http.server
    import threading

    from medsimp.annotate.page import make_server, page_data, render

    page = rebinding_browser
    docs = [
        {
            "doc_id": "d",
            "language": "en",
            "complex": ["c0", "c1"],
            "simple": ["s0", "s1"],
            "alignments": [{"c": [0], "s": [0], "method": "crf", "scores": {}, "keep": True}],
        }
    ]
    data = page_data(docs, "t", ["plaba"], "/save")
    saved = tmp_path / "saved"
    server = make_server(render(docs, "t", ["plaba"], "/save"), "127.0.0.1", 0, saved, data=data)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port, token = server.server_address[1], server.session.token
    export = {
        "format": "medsimp-annotations",
        "version": 1,
        "page_id": data["page_id"],
        "title": "t",
        "lineage": ["plaba"],
        "annotator": "forged",
        "documents": [
            {
                "doc_id": "d",
                "language": "en",
                "done": True,
                "complex": ["c0", "c1"],
                "simple": ["s0", "s1"],
                "alignments": [{"c": 1, "s": 1, "state": "added", "method": "", "labels": {}}],
            }
        ],
    }
    target = f"http://127.0.0.1:{port}/save"
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "index.html").write_text(
        f"""<!DOCTYPE html><html><body>
<form id="f" method="POST" action="{target}?token={token}" enctype="text/plain" target="sink">
<input name='{{"x":"' value='"}}'></form><iframe name="sink"></iframe>
<script>
const body = {json.dumps(json.dumps(export))};
window.results = {{}};
fetch("{target}", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body}})
  .then(() => {{ window.results.nocors = "sent"; }}, () => {{ window.results.nocors = "error"; }});
fetch("{target}", {{method: "POST", headers: {{"Content-Type": "application/json", "X-Medsimp-Token": "{token}"}}, body}})
  .then((r) => {{ window.results.token = r.status; }}, () => {{ window.results.token = "blocked"; }});
document.getElementById("f").submit();
</script></body></html>""",
        encoding="utf-8",
    )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(evil))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        page.call("Page.navigate", url=f"http://127.0.0.1:{other.server_address[1]}/index.html")
        _wait(lambda: page.js("window.results && window.results.nocors && window.results.token"))
        assert page.js("window.results.token") == "blocked"  # the preflight fails: no CORS
        _wait(lambda: server.session.refusals["origin"] >= 2)  # the no-cors fetch and the form
        assert not list(saved.iterdir())

        # DNS rebinding: evil.example resolves to the server, the page is not served under it
        page.call("Page.navigate", url=f"http://evil.example:{port}/?token={token}")
        _wait(lambda: page.js("document.readyState === 'complete'"))
        assert page.js("document.body.innerText").startswith("forbidden: unknown Host")
        assert page.js("typeof DATA") == "undefined"
        assert server.session.refusals["host"] >= 1

        # the server's own page, opened with the token, saves
        page.call("Page.setDownloadBehavior", behavior="deny")  # the server's copy is checked
        page.call("Page.navigate", url=server.url + "&annotator=ann9")
        _wait(lambda: page.js("document.readyState === 'complete' && !!document.getElementById('c-0')"))
        press(page, "m")
        press(page, "e")
        out = _wait(lambda: next(iter(saved.glob("annotations-ann9.json")), None))
        assert json.loads(out.read_text(encoding="utf-8"))["annotator"] == "ann9"
        assert sorted(p.name for p in saved.iterdir()) == ["annotations-ann9.json"]
    finally:
        other.shutdown()
        other.server_close()
        server.shutdown()
        server.server_close()
