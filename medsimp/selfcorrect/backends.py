"""Chat backends: an OpenAI-compatible chat-completions endpoint, or a local causal LM.

Both return a `Completion` with the reply text and token counts. The HTTP backend
retries 408/409/429/5xx and connection errors with urllib3's `Retry` on requests'
`HTTPAdapter` (exponential backoff, `Retry-After` honoured up to `max_backoff`), spaces
calls to a rate limit, and is safe to call from threads.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from urllib3 import BaseHTTPResponse
from urllib3.exceptions import InvalidHeader
from urllib3.util.retry import Retry

from medsimp.doccache import file_fingerprint
from medsimp.numerics import require_pinned

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Completion:
    """One model reply."""

    text: str
    prompt_tokens: int
    completion_tokens: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class BackendError(RuntimeError):
    """The model could not answer (after retries); the message holds no prompt text."""


class ChatBackend(Protocol):
    def identity(self) -> dict[str, Any]:
        """What determines the answers besides the messages (goes into cache keys)."""

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        """The reply to a list of {role, content} messages."""


class RateLimiter:
    """At most `per_minute` calls per minute across threads (0 = unlimited)."""

    def __init__(self, per_minute: float, clock=time.monotonic, sleep=time.sleep):
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            self._sleep(start - now)


class _Retry(Retry):
    """urllib3's `Retry` that reads an unreadable `Retry-After` (e.g. "soon") as absent, so the
    backoff applies, instead of failing the call."""

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        try:
            return super().get_retry_after(response)
        except InvalidHeader:
            return None


class OpenAIChat:
    """POST {base_url}/chat/completions with bearer auth from an environment variable."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.8,
        max_tokens: int = 512,
        seed: int | None = 0,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        requests_per_minute: float = 0.0,
        trust_env: bool = True,
    ):
        if not base_url or not model:
            raise BackendError("the openai backend needs simplify.openai.base_url and .model")
        self.base_url, self.model = base_url.rstrip("/"), model
        self.api_key = os.environ.get(api_key_env, "")
        self.temperature, self.max_tokens, self.seed = temperature, max_tokens, seed
        self.timeout, self.max_retries = timeout, max_retries
        self.backoff, self.max_backoff = backoff, max_backoff
        self.limiter = RateLimiter(requests_per_minute)
        # False for restricted (MIMIC) runs: no HTTP(S)_PROXY / .netrc from the environment,
        # so the request goes to the endpoint the egress guard checked and nowhere else.
        self.trust_env = trust_env
        self._local = threading.local()
        self.requests_sent = 0
        self.retries = 0
        self._count_lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        return {
            "backend": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    def _retry(self) -> Retry:
        """urllib3's `Retry`: `max_retries` retries of any method (a chat completion changes
        nothing on the server) after a connection error, a timeout or a `RETRY_STATUS`
        answer; waits `backoff * 2 ** (n - 1)` s before the n-th retry after the first
        (urllib3 retries the first at once), at most `max_backoff` s, or the answer's
        `Retry-After` (429/413/503; seconds or an HTTP date) up to `max_backoff` rounded up
        to a second; never follows a redirect; the last answer is returned when the retries
        run out."""
        return _Retry(
            total=self.max_retries,
            redirect=False,
            allowed_methods=None,
            status_forcelist=RETRY_STATUS,
            backoff_factor=self.backoff,
            backoff_max=self.max_backoff,
            respect_retry_after_header=True,
            retry_after_max=math.ceil(self.max_backoff),
            raise_on_status=False,
        )

    def _session(self):
        import requests
        from requests.adapters import HTTPAdapter

        if not hasattr(self._local, "session"):
            session = requests.Session()
            session.trust_env = self.trust_env
            adapter = HTTPAdapter(max_retries=self._retry())
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
        return self._local.session

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        return body

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        import requests

        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        attempts = self.max_retries + 1
        self.limiter.wait()
        try:
            # never follow redirects: a 307/308 would re-send the prompt to another host
            resp = self._session().post(
                url,
                json=self._payload(messages),
                headers=headers,
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            cause = _cause(exc)
            if cause is exc:  # not a retried failure (e.g. an invalid URL)
                self._count(1)
                raise BackendError(f"{url}: {type(exc).__name__}") from None
            self._count(attempts)
            last = type(cause).__name__
            raise BackendError(f"{url}: gave up after {attempts} attempts (last: {last})") from None
        retries = getattr(resp.raw, "retries", None)  # urllib3's Retry as it stood at the answer
        self._count(1 + (len(retries.history) if retries is not None else 0))
        if resp.status_code in RETRY_STATUS:
            raise BackendError(f"{url}: gave up after {attempts} attempts (last: HTTP {resp.status_code})")
        if 300 <= resp.status_code < 400:
            raise BackendError(
                f"{url} answered HTTP {resp.status_code} (a redirect; "
                "redirects are not followed, set base_url to the final endpoint)"
            )
        if resp.status_code != 200:
            raise BackendError(f"{url} answered HTTP {resp.status_code} ({_error_code(resp)})")
        return _parse(resp)

    def _count(self, sent: int) -> None:
        with self._count_lock:
            self.requests_sent += sent
            self.retries += sent - 1


def _cause(exc: BaseException) -> BaseException:
    """The error behind requests' wrapper: urllib3's `MaxRetryError` keeps the last one as
    `reason` (e.g. `ConnectTimeoutError`, `NewConnectionError`)."""
    for arg in exc.args:
        reason = getattr(arg, "reason", None)
        if isinstance(reason, BaseException):
            return reason
    return exc


def _error_code(resp) -> str:
    try:
        err = resp.json().get("error") or {}
        return str(err.get("code") or err.get("type") or "no error code")
    except ValueError:
        return "non-JSON body"


def _parse(resp) -> Completion:
    try:
        data = resp.json()
        text = data["choices"][0]["message"]["content"] or ""
        usage = data.get("usage") or {}
        return Completion(
            text=str(text),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
        )
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise BackendError(f"malformed chat-completions response ({type(exc).__name__})") from None


class LocalChat:
    """A transformers causal LM loaded from a local directory (no hub access)."""

    def __init__(
        self,
        path: str,
        *,
        temperature: float = 0.8,
        max_tokens: int = 256,
        seed: int = 0,
        device: str = "cpu",
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        require_pinned(torch)
        self.path, self.temperature, self.max_tokens, self.seed = path, temperature, max_tokens, seed
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).to(device)
        self.model.eval()
        self.device = device
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        return {
            "backend": "local",
            # the model's files, not its folder's name: a model retrained in place, or another
            # model in a folder of the same name, never reuses the first one's answers
            "model": os.path.basename(os.path.normpath(self.path)),
            "model_sha256": file_fingerprint(self.path),
            "config": self.model.config.to_diff_dict(),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    def _prompt(self, messages: list[dict[str, str]]) -> tuple[str, bool]:
        """(prompt text, whether the tokenizer should still add special tokens)."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            ), False
        turns = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
        return "\n\n".join(turns) + "\n\nAssistant:", True

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        import torch

        text, special = self._prompt(messages)
        enc = self.tokenizer(text, return_tensors="pt", add_special_tokens=special).to(self.device)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        sample = self.temperature > 0
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_tokens, "do_sample": sample, "pad_token_id": pad}
        if sample:
            kwargs["temperature"] = self.temperature
        with self._lock, torch.no_grad():
            torch.manual_seed(self.seed)
            out = self.model.generate(**enc, **kwargs)
        n_in = int(enc["input_ids"].shape[1])
        new = out[0, n_in:]
        text = self.tokenizer.decode(new, skip_special_tokens=True).strip()
        return Completion(text=text, prompt_tokens=n_in, completion_tokens=int(new.shape[0]))
