r"""Section extraction from clinical notes by configurable header patterns.

A target section starts at a line whose header matches one of the target patterns
(e.g. "History of Present Illness:", "HPI:", "BRIEF HOSPITAL COURSE:") and ends at the
next header of any kind: a line starting with a short capitalised phrase followed by a
colon ("Past Medical History:", "Medications on Admission:", "ALLERGIES:"). Text on the
header line after the colon belongs to the section. Both pattern sets are params.

The default targets are MedLane's three sections, exactly (Luo et al., 2022, §3.1: history of
present illness, brief summary of hospital course, brief hospital course). Many MIMIC-III
discharge summaries head the same section "HOSPITAL COURSE:", which the paper's three do not
match; `HOSPITAL_COURSE` is that target, one params line away (docs/fidelity.md):
`notes.headers: {..., Hospital Course: 'hospital\s+course'}`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from medsimp.params_schema import Notes

# section name -> regex for its header text (matched case-insensitively, without the colon).
DEFAULT_TARGETS: dict[str, str] = {
    "History of Present Illness": r"history\s+of\s+(?:the\s+)?present(?:ing)?\s+illness|hpi",
    "Brief Summary of Hospital Course": r"brief\s+summary\s+of\s+(?:the\s+)?hospital\s+course",
    "Brief Hospital Course": r"brief\s+hospital\s+course",
}
# Not one of the paper's targets: MIMIC-III's "HOSPITAL COURSE:" header, as an option.
HOSPITAL_COURSE = {"Hospital Course": r"hospital\s+course"}
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


def extractor_from_params(params: Notes | None) -> SectionExtractor:
    """Build from the `notes` params (`headers`, `any_header`; none: the schema's defaults)."""
    params = params or Notes()
    return SectionExtractor(dict(params.headers) if params.headers else None, params.any_header)
