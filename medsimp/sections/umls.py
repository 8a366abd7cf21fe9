"""Params `umls`."""

from __future__ import annotations

from medsimp.sections.base import Section


class Umls(Section):
    mrconso: str = "data/sample/umls/MRCONSO.RRF"
    mrsty: str = "data/sample/umls/MRSTY.RRF"
    index: str = "out/umls"  # the one QuickUMLS index path (`umls-index` writes it, `link` reads it)
    languages: list[str] = ["ENG", "SPA", "FRE"]
    lowercase: bool = True
    normalize_unicode: bool = False
