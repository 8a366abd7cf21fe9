"""Sentence splitting per language that keeps trial statistics inside their sentence.

pysbd (rule-based, en/es/fr/fa and 20 more languages) does the splitting; a repair pass
then re-joins pieces split inside open brackets ("(RR 2.34; 95% 1.19 to 4.61; 1 trial,
285 participants)"), after a number or a lone abbreviation when a number follows ("95% CI 0."
/ "Aprox. 3"), or before a lowercase continuation. A split pass then cuts where pysbd keeps a
lowercase word + single capital + full stop before a capitalised word ("hepatitis C. Participants",
"vitamine D. Les"): pysbd reads the capital as an initial. Names ("J. F. Kennedy") and labels
("Group A. Group B") are left alone, as is anything inside brackets.
Offsets are character offsets in the input text.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import pysbd

_OPEN, _CLOSE = "([{", ")]}"
_CONTINUES_LOWER = re.compile(r"^[\s\"'«“]*[a-zà-öø-ÿ]")
_STARTS_NUMERIC = re.compile(r"^\s*[\d.,;:%)\]]")
_ENDS_NUMERIC_DOT = re.compile(r"\d[.,]\s*$")
_SINGLE_CAPITAL_END = re.compile(r"\b[a-zà-öø-ÿ][a-zà-öø-ÿ'’-]+ [A-Z]\.(\s+)(?=[\"'«“]?[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ])")
_SCRIPTS_WITHOUT_CASE = {"fa", "ar", "ur", "zh", "ja", "hi", "mr", "am", "my", "hy"}


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    text: str


@functools.lru_cache(maxsize=32)
def _segmenter(language: str) -> pysbd.Segmenter:
    try:
        return pysbd.Segmenter(language=language, clean=False)
    except ValueError:
        return pysbd.Segmenter(language="en", clean=False)


def _depth(text: str) -> int:
    depth = 0
    for ch in text:
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE and depth > 0:
            depth -= 1
    return depth


def _spans(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Locate pysbd's pieces in `text` (pysbd's own char_span is unreliable)."""
    spans, cursor = [], 0
    for piece in pieces:
        core = piece.strip()
        if not core:
            continue
        start = text.find(core, cursor)
        if start < 0:  # pysbd altered the text: fall back to the remaining text
            start = cursor
            end = len(text)
        else:
            end = start + len(core)
        spans.append((start, end))
        cursor = end
    return spans


def _should_join(prev: str, nxt: str, language: str) -> bool:
    if _depth(prev) > 0:
        return True
    if _STARTS_NUMERIC.match(nxt) and (_ENDS_NUMERIC_DOT.search(prev) or len(prev.split()) == 1):
        return True  # "95% CI 0." + "14 to 0.68", or a lone abbreviation "Aprox." + "3 ensayos"
    if language not in _SCRIPTS_WITHOUT_CASE and _CONTINUES_LOWER.match(nxt):
        return True
    return False


def _cuts(text: str, start: int, end: int, language: str) -> list[tuple[int, int]]:
    """(end of a sentence, start of the next) inside [start, end) after "word C." (see above)."""
    if language in _SCRIPTS_WITHOUT_CASE:
        return []
    piece = text[start:end]
    return [(start + m.start(1), start + m.end(1)) for m in _SINGLE_CAPITAL_END.finditer(piece)
            if _depth(piece[:m.start(1)]) == 0]


def split_sentences(text: str, language: str = "en") -> list[Sentence]:
    """Sentences of `text` with their [start, end) offsets; whitespace-only text gives []."""
    if not text or not text.strip():
        return []
    pieces = _segmenter(language).segment(text)
    merged: list[list[int]] = []
    for start, end in _spans(text, pieces):
        if merged and _should_join(text[merged[-1][0]:merged[-1][1]], text[start:end], language):
            merged[-1][1] = end
        else:
            merged.append([start, end])
    spans: list[tuple[int, int]] = []
    for start, end in merged:
        for stop, nxt in _cuts(text, start, end, language):
            spans.append((start, stop))
            start = nxt
        spans.append((start, end))
    return [Sentence(s, e, text[s:e]) for s, e in spans if text[s:e].strip()]
