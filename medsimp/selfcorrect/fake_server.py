"""A canned OpenAI-compatible chat-completions server on 127.0.0.1 for tests and dry runs.

It speaks the real protocol (POST /v1/chat/completions, JSON body with `model` and
`messages`, a `choices[0].message` reply and `usage` token counts) and answers each role
of the self-correction loop by recognising its system prompt: the Processor flags a
critical comment until the text has been revised once. `fail_first` makes it answer the
first requests with given HTTP statuses (e.g. 429, 500) to exercise retries; `answers`
replaces the canned reply of any request whose last message contains a given string (e.g. a
Processor reply that is neither Yes nor No).

    python -m medsimp.selfcorrect.fake_server --port 8765   # then base_url http://127.0.0.1:8765/v1
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def canned_reply(messages: list[dict[str, str]]) -> str:
    """A deterministic answer per role (recognised from the system prompt)."""
    system = messages[0]["content"].lower() if messages else ""
    user = messages[-1]["content"]
    if messages and messages[0]["role"] == "user":  # Yang et al.'s verbatim set: no system prompts
        return _canned_verbatim(messages)
    if "radiologist" in system:
        return "Severity is not explained." if "revised" not in user else "NO ISSUES"
    if system.startswith("you are a patient"):
        return "ALL CLEAR"
    if "coordinate" in system:
        revised = "revised" in user.split("Radiologist's")[0]
        if 'answer "yes" or "no"' in user.lower():  # Yang et al.'s Processor
            return "No" if revised else "Yes\nExplain how serious the finding is."
        if revised:
            return "VERDICT: NONE"
        return "VERDICT: CRITICAL\nSUMMARY: Explain how serious the finding is."
    if "improved rewrite" in user or "revise your simplification" in user:
        return "SIMPLIFIED: The scan shows a small problem, revised to say it is not serious."
    if "step by step" in user:
        return "1. Chest. 2. Fluid.\nSIMPLIFIED: There is a little fluid near the lung."
    return "SIMPLIFIED: There is some fluid near the lung."


def _canned_verbatim(messages: list[dict[str, str]]) -> str:
    """Answers to App. A.3's prompts (prompt set `yang2024`): the Radiologist misses the
    severity until the text is revised, the Patient understands, the Processor extracts
    the Radiologist's point ("Yes ...") or says "No"."""
    user = messages[-1]["content"]
    if user.startswith("You are an experienced radiologist"):
        return "Severity is not explained." if "revised" not in user else "The simplification is fine."
    if user.startswith("You are a person who does not have any medical knowledge"):
        return "I understand all the words."
    if user.startswith("Feedback:"):
        return "Yes, explain how serious the finding is." if "not explained" in user else "No"
    if "Can you improve your simplification" in user:
        return "Simplification: The scan shows a small problem, revised to say it is not serious."
    if "Can you list all the complicated medical terms" in user:
        return "Effusion: fluid.\nSimplification: There is a little fluid near the lung."
    return "There is some fluid near the lung."


class FakeChatServer:
    """Run in a daemon thread; `url` is the base URL (ending in /v1)."""

    def __init__(
        self,
        fail_first: list[int] | None = None,
        retry_after: str | None = None,
        fail_always: bool = False,
        port: int = 0,
        redirect_to: str | None = None,
        answers: dict[str, str] | None = None,
    ):
        self.requests: list[dict[str, Any]] = []
        self.answers = dict(answers or {})  # substring of the last message -> reply (first match)
        self.fail_first = list(fail_first or [])
        self.retry_after, self.fail_always = retry_after, fail_always
        self.redirect_to = redirect_to  # answer every POST with 307 to this URL (egress tests)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                if server.redirect_to:
                    with server._lock:
                        server.requests.append({"redirected": self.path})
                    return self._send(307, {}, {"Location": server.redirect_to})
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"type": "not_found", "code": "unknown_url"}})
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                    messages = body["messages"]
                    assert isinstance(body["model"], str) and messages
                    assert all(set(m) == {"role", "content"} for m in messages)
                except (ValueError, KeyError, AssertionError, TypeError):
                    return self._send(400, {"error": {"type": "invalid_request_error", "code": "bad_body"}})
                with server._lock:
                    server.requests.append({"body": body, "authorization": self.headers.get("Authorization")})
                    status = server.fail_first.pop(0) if server.fail_first else 0
                if server.fail_always:
                    status = 500
                if status:
                    extra = {"Retry-After": server.retry_after} if server.retry_after else {}
                    return self._send(
                        status, {"error": {"type": "server_error", "code": f"http_{status}"}}, extra
                    )
                last = messages[-1]["content"]
                reply = next((r for key, r in server.answers.items() if key in last), None)
                reply = canned_reply(messages) if reply is None else reply
                p_tok = sum(len(m["content"].split()) for m in messages)
                c_tok = len(reply.split())
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": reply},
                            }
                        ],
                        "usage": {
                            "prompt_tokens": p_tok,
                            "completion_tokens": c_tok,
                            "total_tokens": p_tok + c_tok,
                        },
                    },
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    server = FakeChatServer(port=parser.parse_args().port)
    print(f"fake chat server on {server.url}", flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()
