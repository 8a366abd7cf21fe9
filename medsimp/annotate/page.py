"""The annotator page (one self-contained HTML file: data, script and style inline) and a
localhost server for it that also saves each annotator's export.

The server (docs/annotate.md, "What the server protects against") answers only requests that
carry the session's secret token (in the URL it prints, then in a header the page sends), name
the bound address in `Host` and, for a POST, come from the server's own origin. It saves an
export only when it is one of the served page's documents, to a name it derives itself
(`annotations-<annotator>.json`), never over a file it did not save, 0600, atomically."""

from __future__ import annotations

import collections
import hashlib
import hmac
import http.server
import ipaddress
import json
import os
import re
import secrets
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

import jinja2

from medsimp import resources
from medsimp.errors import InputError, UsageError
from medsimp.humaneval.schema import ALIGNMENT_PER_PAIR
from medsimp.lineage import is_restricted

TEMPLATE = resources.path("annotate/annotator.html.j2")
ANNOTATOR = re.compile(r"[A-Za-z0-9_.-]{1,64}")
TOKEN_HEADER = "X-Medsimp-Token"
SAVED_BY = "medsimp annotate serve"
MAX_BODY = 200_000_000  # bytes; the cap is also 16x the page (an export repeats its sentences)
TIMEOUT = 10.0  # seconds an annotator's connection may stay silent
REQUEST_DEADLINE = 5.0  # seconds a connection has to send a request head showing the token
PENDING = 64  # connections held before they show the token; one more cuts the oldest
CONNECTIONS = 16  # annotators' requests served at once; more are answered 503
_HOST = re.compile(r"\[([0-9a-f:.]+)\](?::(\d{1,5}))?|([^:\[\]]+)(?::(\d{1,5}))?")


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
    """The page; `lineage` None (unknown) or MIMIC-derived shows the do-not-share banner (in
    the markup itself, so it shows even with scripts off)."""
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    data = page_data(docs, title, lineage, save_url)
    return env.from_string(TEMPLATE.read_text(encoding="utf-8")).render(
        title=title,
        restricted=data["restricted"],
        data_json=jinja2.utils.markupsafe.Markup(script_json(data)),
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, port: int, restricted: bool) -> None:
    """One-line usage errors for a --host / --port the server cannot or must not use."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a port number (0-65535; 0 = any free port)")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise UsageError(f"--host {host!r} is not an IP address (or localhost)") from None
    if restricted and not is_loopback(host):
        raise UsageError(
            f"--host {host}: restricted data (MIMIC-derived or of unknown lineage) is served on "
            "loopback addresses only (127.0.0.1, ::1, localhost)"
        )


def prepare_save_dir(save_dir: Path, create: bool = True) -> None:
    """Create --save-dir (0700) or check that it is a writable folder."""
    if save_dir.exists() and not save_dir.is_dir():
        raise UsageError(f"--save-dir {save_dir} is not a folder")
    if not create:
        return
    try:
        save_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise UsageError(f"--save-dir {save_dir}: cannot create it ({exc.strerror or exc})") from None
    if not os.access(save_dir, os.W_OK | os.X_OK):
        raise UsageError(f"--save-dir {save_dir} is not writable")


def _host_names(host: str) -> frozenset[str] | None:
    """`Host` names a server bound to `host` answers to (None: any IP or this machine's name)."""
    ip = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    if ip.is_unspecified:
        return None
    return frozenset({str(ip), *(("localhost",) if ip.is_loopback else ())})


def host_ok(value: str | None, names: frozenset[str] | None, port: int) -> bool:
    """True if a `Host` header names the bound address and port (no other name: DNS rebinding)."""
    m = _HOST.fullmatch((value or "").strip().lower())
    if not m or int(m[2] or m[4] or 80) != port:
        return False
    name = m[1] or m[3]
    try:
        name, literal = str(ipaddress.ip_address(name)), True
    except ValueError:
        literal = False
    if names is None:
        return literal or name in {"localhost", socket.gethostname().lower(), socket.getfqdn().lower()}
    return name in names


class Session:
    """One `serve` run: its secret token, the page it serves and the exports it saved."""

    def __init__(self, html: str, data: dict, save_dir: Path, host: str, port: int):
        self.page = html.encode("utf-8")
        self.data = data
        self.save_dir = save_dir
        self.token = secrets.token_urlsafe(32)
        self.session_id = hashlib.sha256(self.token.encode()).hexdigest()[:16]
        self.names = _host_names(host)
        self.port = port
        self.max_body = min(MAX_BODY, 16 * len(self.page) + 1_000_000)
        self.expected = [(d["doc_id"], d["complex"], d["simple"]) for d in data["docs"]]
        self.lock = threading.Lock()
        self.written: set[Path] = set()
        self.refusals: collections.Counter[str] = collections.Counter()  # reason -> count (tests)

    def check_export(self, data) -> str | None:
        """Why `data` is not an export of this page (None when it is)."""
        if not isinstance(data, dict) or data.get("format") != "medsimp-annotations":
            return "not an annotation export"
        who = data.get("annotator")
        if not isinstance(who, str) or not ANNOTATOR.fullmatch(who):
            return "a bad annotator name (letters, digits, _ . - only)"
        if data.get("page_id") != self.data["page_id"]:
            return "an export of another page"
        docs = data.get("documents")
        if not isinstance(docs, list) or len(docs) != len(self.expected):
            return "not the documents of this page"
        for d, (doc_id, complex_, simple) in zip(docs, self.expected, strict=True):
            if not isinstance(d, dict) or (d.get("doc_id"), d.get("complex"), d.get("simple")) != (
                doc_id,
                complex_,
                simple,
            ):
                return "not the documents of this page"
        return None

    def _ours(self, target: Path) -> bool:
        """True if `target` is absent or an export a `serve` run saved (never a user's file)."""
        if not os.path.lexists(target):
            return True
        if target in self.written:
            return True
        if target.is_symlink() or not target.is_file():
            return False
        try:
            with target.open("rb") as fh:
                old = json.loads(fh.read(self.max_body + 1).decode("utf-8"))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            return False
        return (
            isinstance(old, dict)
            and isinstance(old.get("saved"), dict)
            and old["saved"].get("by") == SAVED_BY
            # an export of another page is an annotator's finished work there: never replaced
            and old.get("page_id") == self.data["page_id"]
        )

    def save(self, data: dict) -> tuple[int, str]:
        """Store a checked export as `<save_dir>/annotations-<annotator>.json` (0600, atomic:
        a unique temp file per request, so concurrent saves all land)."""
        from medsimp.annotate.ingest import read_exports

        data = {
            **data,
            "lineage": self.data["lineage"],  # the server's lineage, not the client's claim
            "saved": {"by": SAVED_BY, "session": self.session_id},
        }
        target = self.save_dir / f"annotations-{data['annotator']}.json"
        fd, name = tempfile.mkstemp(prefix=".annotations-", suffix=".tmp", dir=self.save_dir)
        tmp = Path(name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            try:
                read_exports([tmp])  # the same checks `annotate ingest` makes
            except InputError as exc:
                return 400, "not an annotation export: " + str(exc).split(": ", 1)[-1]
            with self.lock:
                if not self._ours(target):
                    return 409, (
                        f"{target.name} exists and is not this page's export saved by medsimp "
                        "(another page's work, or a file of yours): use another --save-dir"
                    )
                os.replace(tmp, target)
                self.written.add(target)
            return 200, "saved"
        finally:
            tmp.unlink(missing_ok=True)


class _Server(http.server.ThreadingHTTPServer):
    """One thread per connection, in two bounded pools. A connection is *pending* until its
    request head (request line and headers) is read and shows the session token, Host (and for a
    POST, Origin): at most `pending` such connections are held, each for `deadline` seconds at
    most; a new one beyond the cap cuts the oldest, so clients that send half a request and hold
    (or trickle) cannot keep an annotator out. An *authorized* request takes one of
    `connections` slots (more are answered 503 at once) and is held only by the silence
    timeout (a large export over a slow link takes what it takes)."""

    daemon_threads = True
    request_queue_size = 64
    url = ""  # the address to open, with the session token

    def __init__(
        self,
        address,
        handler,
        session: Session,
        connections: int,
        deadline: float = REQUEST_DEADLINE,
        pending: int = PENDING,
    ):
        self.session = session
        self.connections = connections
        self.pending = pending
        self.deadline = deadline
        self._lock = threading.Lock()
        self._pending: dict[socket.socket, float] = {}  # connection -> its deadline, oldest first
        self._authorized: set[socket.socket] = set()  # connections holding a serving slot
        self._thread_slots = threading.BoundedSemaphore(pending + connections)
        self._closed = threading.Event()
        super().__init__(address, handler)
        threading.Thread(target=self._cut_late, name="medsimp-request-deadline", daemon=True).start()

    @staticmethod
    def _cut(conn: socket.socket) -> None:
        try:
            conn.shutdown(socket.SHUT_RDWR)  # its thread's read returns at once, the thread ends
        except OSError:
            pass

    def authorized(self, conn: socket.socket) -> bool:
        """The request on `conn` showed the token: it leaves the pending pool and takes a
        serving slot (False: all `connections` slots are busy)."""
        with self._lock:
            self._pending.pop(conn, None)
            if len(self._authorized) >= self.connections:
                return False
            self._authorized.add(conn)
            return True

    def _cut_late(self) -> None:
        while not self._closed.wait(min(0.5, self.deadline / 4)):
            now = time.monotonic()
            with self._lock:
                late = [conn for conn, end in self._pending.items() if end < now]
                for conn in late:
                    del self._pending[conn]
            for conn in late:
                self._cut(conn)

    def server_close(self) -> None:
        self._closed.set()
        super().server_close()

    def process_request(self, request, client_address):
        with self._lock:
            evicted = []
            while len(self._pending) >= self.pending:  # full: the oldest pending client goes
                oldest = next(iter(self._pending))
                del self._pending[oldest]
                evicted.append(oldest)
            self._pending[request] = time.monotonic() + self.deadline
        for conn in evicted:
            self._cut(conn)
        # the cut threads end within moments; until then the thread count stays bounded
        if not self._thread_slots.acquire(timeout=1.0):
            with self._lock:
                self._pending.pop(request, None)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            with self._lock:
                self._pending.pop(request, None)
            self._thread_slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._pending.pop(request, None)
                self._authorized.discard(request)
            self._thread_slots.release()

    def handle_error(self, request, client_address):
        """A client that hung up (BrokenPipe, reset) is not an error; anything else is one line
        on stderr, never a traceback (it could quote a request)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        print(f"medsimp annotate serve: a request failed ({type(exc).__name__})", file=sys.stderr)


class _Server6(_Server):
    address_family = socket.AF_INET6


def make_server(
    html: str,
    host: str,
    port: int,
    save_dir: Path,
    *,
    data: dict,
    timeout: float = TIMEOUT,
    connections: int = CONNECTIONS,
    deadline: float = REQUEST_DEADLINE,
    pending: int = PENDING,
):
    """An HTTP server for the page (`data` is its `page_data`): GET /?token=T serves it, POST
    /save with header X-Medsimp-Token: T stores an export of it as
    `<save_dir>/annotations-<annotator>.json`. Restricted pages bind loopback only.
    `server.session.token` is the secret, `server.url` the address to open."""
    check_bind(host, port, data["restricted"])
    prepare_save_dir(save_dir)
    bind = "127.0.0.1" if host == "localhost" else host
    v6 = ipaddress.ip_address(bind).version == 6

    class Handler(http.server.BaseHTTPRequestHandler):
        server: _Server  # socketserver sets it: the server below
        server_version = "medsimp"
        sys_version = ""

        def setup(self):
            # until the head shows the token, a silence as long as the deadline ends it
            self.timeout = min(timeout, deadline)
            super().setup()

        def finish(self):
            try:
                super().finish()
            except ConnectionError:  # the client hung up before the answer was flushed
                pass

        def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header("Content-Security-Policy", "frame-ancestors 'none'")
            self.end_headers()
            self.wfile.write(body)

        def _refuse(self, code: int, reason: str, message: str) -> None:
            session.refusals[reason] += 1
            self.close_connection = True
            self._send(code, message.encode("utf-8"))

        def _allowed(self, token: str | None, post: bool) -> bool:
            hosts = self.headers.get_all("Host") or []
            if len(hosts) != 1 or not host_ok(hosts[0], session.names, session.port):
                self._refuse(403, "host", "forbidden: unknown Host")
                return False
            if post:
                origins = self.headers.get_all("Origin") or []
                if len(origins) != 1 or origins[0].strip().lower() != "http://" + hosts[0].strip().lower():
                    self._refuse(403, "origin", "forbidden: not this server's origin")
                    return False
            if not token or not hmac.compare_digest(token.encode(), session.token.encode()):
                self._refuse(403, "token", "forbidden: no or a wrong session token")
                return False
            if not self.server.authorized(self.request):  # out of the pending pool, past the deadline
                self._refuse(503, "busy", f"busy: {self.server.connections} requests are being served")
                return False
            self.connection.settimeout(timeout)  # an annotator's export may be large: silence only
            return True

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            token = urllib.parse.parse_qs(url.query).get("token", [None])[0]
            if not self._allowed(token, post=False):
                return
            if url.path in ("/", "/index.html"):
                self._send(200, session.page, "text/html; charset=utf-8")
            else:
                self._send(404, b"not found")

        def do_POST(self):
            if not self._allowed(self.headers.get(TOKEN_HEADER), post=True):
                return
            if urllib.parse.urlsplit(self.path).path != "/save":
                return self._refuse(404, "path", "not found")
            if self.headers.get("Transfer-Encoding"):
                return self._refuse(411, "length", "a Content-Length is required (no chunked bodies)")
            lengths = self.headers.get_all("Content-Length") or []
            if not lengths:
                return self._refuse(411, "length", "a Content-Length is required")
            if len(lengths) != 1 or not re.fullmatch(r"\d{1,12}", lengths[0].strip()):
                return self._refuse(400, "length", "a bad Content-Length")
            n = int(lengths[0])
            if n > session.max_body:
                return self._refuse(413, "length", f"the body is over {session.max_body} bytes")
            body = self.rfile.read(n)
            if len(body) != n:
                return self._refuse(400, "body", "the body is shorter than its Content-Length")
            try:
                export = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError):
                return self._refuse(400, "body", "not JSON (or nested too deeply)")
            problem = session.check_export(export)
            if problem:
                return self._refuse(400, "export", problem)
            code, message = session.save(export)
            if code != 200:
                return self._refuse(code, "export", message)
            self._send(200, b"saved")

        def log_message(self, format, *args):  # requests are not logged (they may name documents)
            return

    session = Session(html, data, save_dir, host, port)
    try:
        server = (_Server6 if v6 else _Server)((bind, port), Handler, session, connections, deadline, pending)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    session.port = server.server_address[1]
    url_host = f"[{bind}]" if v6 else host
    server.url = f"http://{url_host}:{session.port}/?token={session.token}"
    return server
