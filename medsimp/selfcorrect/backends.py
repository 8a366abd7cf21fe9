"""Chat backends: an OpenAI-compatible chat-completions endpoint, or a local causal LM.

Both return a `Completion` with the reply text and token counts. The HTTP backend
retries 429/5xx and connection errors with exponential backoff (honouring
`Retry-After`), spaces requests to a rate limit, and is safe to call from threads.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

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

    def _session(self):
        import requests

        if not hasattr(self._local, "session"):
            session = requests.Session()
            session.trust_env = self.trust_env
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

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.max_backoff)
            except ValueError:
                pass
        return min(self.backoff * (2**attempt), self.max_backoff)

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        import requests

        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            if attempt:
                with self._count_lock:
                    self.retries += 1
            self.limiter.wait()
            with self._count_lock:
                self.requests_sent += 1
            try:
                # never follow redirects: a 307/308 would re-send the prompt to another host
                resp = self._session().post(
                    url,
                    json=self._payload(messages),
                    headers=headers,
                    timeout=self.timeout,
                    allow_redirects=False,
                )
            except (requests.ConnectionError, requests.Timeout) as exc:
                last = type(exc).__name__
                time.sleep(self._delay(attempt, None))
                continue
            if resp.status_code in RETRY_STATUS:
                last = f"HTTP {resp.status_code}"
                time.sleep(self._delay(attempt, resp.headers.get("Retry-After")))
                continue
            if 300 <= resp.status_code < 400:
                raise BackendError(
                    f"{url} answered HTTP {resp.status_code} (a redirect; "
                    "redirects are not followed, set base_url to the final endpoint)"
                )
            if resp.status_code != 200:
                raise BackendError(f"{url} answered HTTP {resp.status_code} ({_error_code(resp)})")
            return _parse(resp)
        raise BackendError(f"{url}: gave up after {self.max_retries + 1} attempts (last: {last})")


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
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.path, self.temperature, self.max_tokens, self.seed = path, temperature, max_tokens, seed
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).to(device)
        self.model.eval()
        self.device = device
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        return {
            "backend": "local",
            "model": os.path.basename(os.path.normpath(self.path)),
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
