"""Params `readability`."""

from __future__ import annotations

from medsimp.sections.base import Section


class Readability(Section):
    syllable_languages: list[str] = ["en", "es", "fr", "de", "it", "nl"]
