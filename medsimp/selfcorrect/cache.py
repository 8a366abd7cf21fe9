"""Answers cached by prompt + model + generation parameters (medsimp.doccache).

Every finished call is stored atomically at once, so a crashed run resumes by
replaying what it already paid for and only asks the model for the rest.
"""

from __future__ import annotations

from typing import Any

from medsimp.doccache import DocCache, content_key
from medsimp.selfcorrect.backends import ChatBackend, Completion

NAMESPACE = "simplify/chat"


class CachedChat:
    """Wrap a backend; `complete` returns (Completion, cached?)."""

    def __init__(self, backend: ChatBackend, root: str | None):
        self.backend = backend
        self.cache = DocCache(root, NAMESPACE)
        self._identity = backend.identity()

    def key(self, messages: list[dict[str, str]]) -> str:
        return content_key("chat", self._identity, messages)

    def complete(self, messages: list[dict[str, str]]) -> tuple[Completion, bool]:
        key = self.key(messages)
        hit: dict[str, Any] | None = self.cache.get(key)
        if hit is not None:
            return Completion(**hit), True
        result = self.backend.complete(messages)
        self.cache.put(key, result.to_dict())
        return result, False
