"""Section extraction from clinical notes by configurable header patterns.

A target section starts at a line whose header matches one of the target patterns
(e.g. "History of Present Illness:", "HPI:", "BRIEF HOSPITAL COURSE:") and ends at the
next header of any kind: a line starting with a short capitalised phrase followed by a
colon ("Past Medical History:", "Medications on Admission:", "ALLERGIES:"). Text on the
header line after the colon belongs to the section. Both pattern sets are params.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# section name -> regex for its header text (matched case-insensitively, without the colon).
DEFAULT_TARGETS: dict[str, str] = {
    "History of Present Illness": r"history\s+of\s+(?:the\s+)?present(?:ing)?\s+illness|hpi",
    "Brief Summary of Hospital Course": r"brief\s+summary\s+of\s+(?:the\s+)?hospital\s+course",
    "Brief Hospital Course": r"brief\s+hospital\s+course",
}
# Any header: a Title-case word of 4+ letters, an ALL-CAPS word of 4+ letters, or a phrase of
# 2-6 words starting with a capital, at the start of a line, followed by a colon.
DEFAULT_ANY_HEADER = r"(?:[A-Z][a-z]{3,}|[A-Z]{4,}|[A-Z][A-Za-z]*(?:[ \t/&-]+[A-Za-z()]+){1,5})"


@dataclass(frozen=True, slots=True)
class Section:
    """A section: its canonical name, its body text and the body's offset in the note."""

    name: str
    text: str
    start: int


class SectionExtractor:
    """Finds target sections; `targets` maps canonical names to header regexes."""

    def __init__(self, targets: Mapping[str, str] | None = None, any_header: str | None = None):
        targets = dict(targets or DEFAULT_TARGETS)
        self.names = list(targets)
        alternatives = "|".join(f"(?P<t{i}>{rx})" for i, rx in enumerate(targets.values()))
        self._target = re.compile(rf"^[ \t]*(?:{alternatives})[ \t]*:", re.M | re.I)
        self._any = re.compile(rf"^[ \t]*{any_header or DEFAULT_ANY_HEADER}[ \t]*:", re.M)

    def extract(self, text: str) -> list[Section]:
        """Target sections in note order (empty bodies are skipped)."""
        out: list[Section] = []
        for m in self._target.finditer(text):
            name = self.names[int(next(k for k, v in m.groupdict().items() if v is not None)[1:])]
            start = m.end()
            ends = [
                m2.start() for m2 in (self._any.search(text, start), self._target.search(text, start)) if m2
            ]
            end = min(ends, default=len(text))
            body = text[start:end]
            lead = len(body) - len(body.lstrip())
            body = body.strip()
            if body:
                out.append(Section(name, body, start + lead))
        return out


def extractor_from_params(params: Mapping | None) -> SectionExtractor:
    """Build from a params mapping with optional `headers` and `any_header`."""
    params = params or {}
    headers: Mapping[str, str] | Iterable | None = params.get("headers")
    return SectionExtractor(dict(headers) if headers else None, params.get("any_header"))
