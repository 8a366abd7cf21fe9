"""The annotator page (one self-contained HTML file: data, script and style inline) and a
localhost server for it that also saves each annotator's export."""

from __future__ import annotations

import hashlib
import http.server
import ipaddress
import json
import re
from pathlib import Path

import jinja2

from medsimp import resources
from medsimp.errors import Refused, UsageError
from medsimp.humaneval.schema import ALIGNMENT_PER_PAIR
from medsimp.lineage import is_restricted

TEMPLATE = resources.path("annotate/annotator.html.j2")
ANNOTATOR = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def script_json(obj) -> str:
    """JSON safe inside a <script> element: <, > and & as \\u escapes (no `</script>` break-out)."""
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_data(docs: list[dict], title: str, lineage: list[str] | None, save_url: str | None = None) -> dict:
    measures = sorted({m for d in docs for m in d.get("sim", {})})
    labels = [
        {"qid": q.qid, "prompt": q.prompt, "options": [list(o) for o in q.options]}
        for q in ALIGNMENT_PER_PAIR
    ]
    body = {
        "docs": docs,
        "measures": measures,
        "labels": labels,
        "title": title,
        "lineage": lineage,
        "restricted": is_restricted(lineage),
    }
    page_id = hashlib.sha256(script_json(body).encode("utf-8")).hexdigest()[:16]
    return {**body, "page_id": page_id, "save_url": save_url}


def render(docs: list[dict], title: str, lineage: list[str] | None, save_url: str | None = None) -> str:
    """The page; `lineage` None (unknown) or MIMIC-derived shows the do-not-share banner."""
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    data = page_data(docs, title, lineage, save_url)
    return env.from_string(TEMPLATE.read_text(encoding="utf-8")).render(
        title=title, data_json=jinja2.utils.markupsafe.Markup(script_json(data))
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_server(html: str, host: str, port: int, save_dir: Path, restricted: bool):
    """An HTTP server for the page: GET / serves it, POST /save stores an export as
    `<save_dir>/<annotator>.json`. Restricted (MIMIC-lineage) pages bind loopback only."""
    if restricted and not is_loopback(host):
        raise Refused(f"MIMIC-derived data is served on localhost only, not on {host}")
    if not (is_loopback(host) or _valid_ip(host)):
        raise UsageError(f"--host {host!r} is not an IP address")
    page = html.encode("utf-8")

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.split("?")[0] in ("/", "/index.html"):
                self._send(200, page, "text/html; charset=utf-8")
            else:
                self._send(404, b"not found")

        def do_POST(self):
            if self.path != "/save":
                return self._send(404, b"not found")
            try:
                n = int(self.headers.get("Content-Length", "0"))
                data = json.loads(self.rfile.read(min(n, 200_000_000)).decode("utf-8"))
                who = str(data.get("annotator", ""))
            except (ValueError, AttributeError, UnicodeDecodeError):
                return self._send(400, b"not an annotation export")
            if data.get("format") != "medsimp-annotations" or not ANNOTATOR.match(who):
                return self._send(400, b"not an annotation export (or a bad annotator name)")
            save_dir.mkdir(parents=True, exist_ok=True)
            tmp = save_dir / f".{who}.json.tmp"
            tmp.write_text(json.dumps(data, ensure_ascii=False, sort_keys=True), encoding="utf-8")
            tmp.replace(save_dir / f"{who}.json")
            self._send(200, b"saved")

        def log_message(self, fmt, *args):  # requests are not logged (they may name documents)
            return

    return http.server.ThreadingHTTPServer((host, port), Handler)


def _valid_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False
