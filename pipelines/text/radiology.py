"""Radiology findings sentences (plain Python, no Beam): FINDINGS / IMPRESSION sections of a
radiology note -> self-contained finding sentences with diversity metadata.

A sentence is kept when it has `min_tokens`..`max_tokens` words, starts like a sentence
(not lower case, not a continuation word), holds no de-identification placeholder, and names
at least one finding word (medsimp/resources/radiology/finding_words.txt), so technique lines such
as "Single portable AP view of the chest." drop out. Metadata: body parts and finding words
(lexicon lookups with plural folding), negation ("no", "without", "negative for") and the
exam description. Duplicates are found by `dedup_key` (case, spacing and a final period ignored).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from medsimp import resources
from medsimp.params_schema import Radiology
from medsimp.text.sentences import splitter
from medsimp.text.words import PLACEHOLDER
from pipelines.sources.noteevents import Note
from pipelines.sources.rows import sentence_id
from pipelines.text.sections import SectionExtractor

SOURCE = "radiology"
LEXICONS = resources.path("radiology")
SECTION_HEADERS = {"findings": r"findings?", "impression": r"impressions?"}
_WORD = re.compile(r"[a-z]+")
_NEGATION = re.compile(r"\b(?:no|not|without|negative\s+for)\b", re.I)
_CONTINUATION = frozenset({"and", "or", "but", "which", "with", "as", "also", "however"})


def _lines(path: Path) -> list[str]:
    return [
        ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")
    ]


def load_lexicons(root: Path = LEXICONS) -> tuple[dict[str, str], frozenset[str]]:
    """(term -> body part, finding words)."""
    parts = dict(ln.split("\t", 1) for ln in _lines(root / "body_parts.tsv"))
    return parts, frozenset(_lines(root / "finding_words.txt"))


def _forms(token: str) -> tuple[str, ...]:
    """The token and its singular candidates (opacities -> opacity, effusions -> effusion)."""
    out = [token]
    if token.endswith("ies"):
        out.append(token[:-3] + "y")
    if token.endswith("es"):
        out.append(token[:-2])
    if token.endswith("s"):
        out.append(token[:-1])
    return tuple(out)


def dedup_key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(" .")


class RadiologyExtractor:
    """Note -> (kept sentence rows, Counter of filter reasons)."""

    def __init__(self, params: Radiology, lexicons: tuple[dict[str, str], frozenset[str]] | None = None):
        self.sections = SectionExtractor(
            {name.upper(): SECTION_HEADERS.get(name.lower(), name) for name in params.sections}
        )
        self.split = splitter(params.splitter)
        self.min_tokens = params.min_tokens
        self.max_tokens = params.max_tokens
        self.parts, self.findings = lexicons or load_lexicons()

    def reason(self, text: str, tokens: list[str]) -> str:
        """Why a sentence is not kept ("" when it is)."""
        if len(text.split()) < self.min_tokens:
            return "too_short"
        if len(text.split()) > self.max_tokens:
            return "too_long"
        first = text.split()[0]
        if first[0].islower() or first.lower() in _CONTINUATION:
            return "fragment"
        if PLACEHOLDER.search(text) or "___" in text:
            return "placeholder"
        if not any(f in self.findings for t in tokens for f in _forms(t)):
            return "no_finding"
        return ""

    def rows(self, note: Note) -> tuple[list[dict], Counter]:
        counts: Counter = Counter()
        rows: list[dict] = []
        index = 0
        for section in self.sections.extract(note.text):
            for a, b in self.split(section.text):
                text = " ".join(section.text[a:b].split())
                tokens = _WORD.findall(text.lower())
                why = self.reason(text, tokens)
                counts["sentences"] += 1
                if why:
                    counts[f"filtered_{why}"] += 1
                else:
                    forms = [f for t in tokens for f in _forms(t)]
                    rows.append(
                        {
                            "sentence_id": sentence_id(SOURCE, note.note_id, "complex", "en", index),
                            "source": SOURCE,
                            "doc_id": note.note_id,
                            "side": "complex",
                            "language": "en",
                            "section": section.name,
                            "sentence_index": index,
                            "char_start": a,
                            "char_end": b,
                            "text": text,
                            "locator": note.locator,
                            "exam": note.description,
                            "body_parts": sorted({self.parts[f] for f in forms if f in self.parts}),
                            "finding_words": sorted({f for f in forms if f in self.findings}),
                            "negated": bool(_NEGATION.search(text)),
                        }
                    )
                index += 1
        return rows, counts


def doc_order(doc_id: str) -> tuple[int, int, str]:
    """Numeric ROW_IDs in numeric order (9 before 10), other ids (MIMIC-IV) as strings."""
    return (0, int(doc_id), "") if doc_id.isdigit() else (1, 0, doc_id)


def row_order(row: Mapping) -> tuple:
    return (doc_order(row["doc_id"]), row["sentence_index"])


def merge_duplicates(rows: list[dict]) -> dict:
    """One row for a group of equal sentences: the first by (doc_id, index), with the count
    and the other notes it appeared in."""
    rows = sorted(rows, key=row_order)
    keep = dict(rows[0])
    keep["n_duplicates"] = len(rows) - 1
    keep["duplicate_doc_ids"] = sorted({r["doc_id"] for r in rows[1:]}, key=doc_order)
    return keep
