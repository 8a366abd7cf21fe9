"""Fill one generated HTML form in headless Chromium (mouse clicks and typing over the
DevTools protocol) and check the CSV it downloads. Needs Debian's chromium package."""

from __future__ import annotations

import csv
import itertools
import json
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from medsimp.humaneval.design import build_manifest
from medsimp.humaneval.forms import write_forms
from medsimp.humaneval.ingest import ingest

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.browser  # needs /usr/bin/chromium: `make test` installs it
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]


class CDP:
    """A minimal synchronous DevTools-protocol client over one websocket."""

    def __init__(self, ws_url: str):
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=20, suppress_origin=True)
        self.ids = itertools.count(1)

    def call(self, method: str, **params):
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def js(self, expr: str):
        res = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"JS error in {expr[:60]!r}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def click(self, selector: str) -> None:
        box = self.js(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            e.scrollIntoView({{block: "center"}}); const r = e.getBoundingClientRect();
            return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)


def _wait(predicate, timeout: float = 15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError("condition not met in time")


@pytest.fixture()
def browser(tmp_path):
    profile = tmp_path / "profile"
    proc = subprocess.Popen(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
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
        version = json.load(urllib.request.urlopen(f"{base}/json/version"))
        yield CDP(version["webSocketDebuggerUrl"]), CDP(targets[0]["webSocketDebuggerUrl"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_fill_layperson_form_and_export_csv(tmp_path, browser):
    items = [
        {
            "item_id": f"i{n}",
            "source": f'Mild {n} effusion, "stable".',
            "outputs": {s: f"{s} text {n}" for s in ("s1", "s2")},
        }
        for n in (1, 2)
    ]
    manifest = build_manifest(items, ["s1", "s2"], 2, seed=0)
    forms = tmp_path / "forms"
    forms.mkdir()
    write_forms(manifest, forms)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    top, page = browser
    top.call("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
    page.call("Page.navigate", url=(forms / "layperson-L02.html").as_uri())
    _wait(lambda: page.js("document.readyState === 'complete' && !!document.getElementById('q-0')"))
    n_questions = page.js("document.querySelectorAll('fieldset').length")
    assert n_questions == 2 * 11
    hidden = "document.getElementById('block-1').classList.contains('hidden')"
    assert page.js(hidden)  # the simplification is not shown before the original is rated

    page.click("#export")  # nothing answered yet: export refuses and says why
    assert "18 required answer(s) missing" in page.js("document.getElementById('status').textContent")
    typed = 'clear, "short"'
    for n in range(n_questions):
        kind = page.js(f"""(() => {{ const f = document.getElementById('q-{n}');
            return f.querySelector('textarea') ? 'text' : f.querySelector('input').type; }})()""")
        if kind == "text":
            page.click(f"#q-{n} textarea")
            page.call("Input.insertText", text=typed)
        else:  # radios: the second option; checkboxes: the first one
            index = 1 if kind == "radio" else 0
            page.click(f"#q-{n} input:nth-of-type(1)" if index == 0 else f"#q-{n} label:nth-of-type(2) input")
    assert not page.js(hidden)
    page.click("#export")
    assert page.js("document.getElementById('status').textContent") == "Exported 22 answers."
    out = _wait(lambda: next(iter(downloads.glob("layperson-L02.csv")), None))
    _wait(lambda: out.read_bytes().endswith(b"\r\n"))
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 22 and {r["rater_id"] for r in rows} == {"L02"}
    by_key = {(r["item_id"], r["stage"], r["question"]): r for r in rows}
    assert by_key[("i1", "original", "q1")]["answer"] == "2"
    assert by_key[("i1", "simplified", "q4")]["system"] == "s2"  # Latin square: L02 sees s2 on i1
    assert by_key[("i2", "preference", "q5_why")]["answer"] == typed
    first_letter = manifest["preference_order"]["i1"][0]
    assert by_key[("i1", "preference", "q5")]["answer"] == first_letter
    answers = ingest(manifest, [out])  # the exported file passes validation
    assert len(answers) == 22
