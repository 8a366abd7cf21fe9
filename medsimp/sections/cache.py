"""Params `cache`."""

from __future__ import annotations

from medsimp.sections.base import Section


class Cache(Section):
    dir: str | None = ".cache/medsimp"
