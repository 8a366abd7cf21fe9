r"""The multilingual genre (reviews, summaries, gold alignments in any language): sentences
per language that keep trial statistics inside their sentence, and word tokens.

Word tokens (`word_tokens`) are lowercased runs of Unicode word characters (`\w+`): no
language's rules, so they mean the same in en/es/fr/fa/de; English clinical text and MedLane
use NLTK's tokenizer instead (`medsimp.text.words`).

Sentences (`split_sentences`):

pysbd (rule-based, en/es/fr/fa and 20 more languages) does the splitting; a repair pass
then re-joins pieces split inside open brackets ("(RR 2.34; 95% 1.19 to 4.61; 1 trial,
285 participants)") when the next piece closes the bracket within BRACKET_REACH characters
(real abstracts leave brackets unclosed -- "(RR 0.99 (95% CI 0.95 to 1.02). Low quality
..." -- and an unbounded repair glued the rest of the abstract into one 545-word
"sentence"), after a number or a lone abbreviation when a number follows ("95% CI 0."
/ "Aprox. 3"), or before a lowercase continuation. A split pass then cuts where pysbd keeps a
lowercase word + single capital + full stop before a capitalised word ("hepatitis C. Participants",
"vitamine D. Les"): pysbd reads the capital as an initial. Names ("J. F. Kennedy") and labels
("Group A. Group B") are left alone, as is anything inside brackets.
Last, a piece with no letters joins a neighbour instead of standing alone: punctuation
("findings.. Most", 'degeneration. ".') the sentence before it, a bare list number
("3. Chlorpromazine versus quetiapine") the sentence after it.
Offsets are character offsets in the input text.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from typing import Any

import pysbd

_OPEN, _CLOSE = "([{", ")]}"
_CONTINUES_LOWER = re.compile(r"^[\s\"'«“]*[a-zà-öø-ÿ]")
_STARTS_NUMERIC = re.compile(r"^\s*[\d.,;:%)\]]")
_ENDS_NUMERIC_DOT = re.compile(r"\d[.,]\s*$")
_SINGLE_CAPITAL_END = re.compile(
    r"\b[a-zà-öø-ÿ][a-zà-öø-ÿ'’-]+ [A-Z]\.(\s+)(?=[\"'«“]?[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ])"
)
_SPACE = re.compile(r"\s")
_WORD = re.compile(r"\w+")
WINDOW = 2_000  # characters pysbd sees at once (see _pysbd_spans)
# How far into the next piece the closing bracket of an open one may be for the two to join:
# the rest of a statistic ("95% CI 1.19 to 4.61; 1 trial, 285 participants; low-quality
# evidence)") is well inside it; a bracket the authors never closed is not.
BRACKET_REACH = 200
_NO_LETTERS = re.compile(r"^[\W\d_]+$")
_LIST_NUMBER = re.compile(r"^\(?\d{1,2}[.)]$")
_SCRIPTS_WITHOUT_CASE = {"fa", "ar", "ur", "zh", "ja", "hi", "mr", "am", "my", "hy"}


def word_tokens(text: str) -> list[str]:
    """Lowercased word tokens: the runs of stdlib `re`'s word characters (`str.isalnum()` and `_`)."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    text: str


_PER_THREAD = threading.local()


def _segmenter(language: str) -> pysbd.Segmenter:
    """One pysbd Segmenter per language and thread: `segment()` keeps the text it works on in
    the object, so threads that share one (Beam's multi_threading mode, an SDK harness running
    bundles in threads) cut each other's sentences."""
    cache = _PER_THREAD.__dict__.setdefault("segmenters", {})
    if language not in cache:
        try:
            cache[language] = pysbd.Segmenter(language=language, clean=False)
        except ValueError:
            cache[language] = pysbd.Segmenter(language="en", clean=False)
    return cache[language]


def _spans(text: str, pieces: list[str], offset: int = 0) -> list[tuple[int, int]]:
    """Locate pysbd's pieces in `text` (pysbd's own char_span is unreliable); spans are
    shifted by `offset`."""
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
        spans.append((offset + start, offset + end))
        cursor = end
    return spans


def _pysbd_spans(text: str, language: str) -> list[tuple[int, int]]:
    """pysbd's sentences as spans, in windows of at most WINDOW characters: pysbd's cost grows
    with the square of its input (its abbreviation pass rescans the whole text per match),
    so a longer text is cut after the last sentence pysbd ends inside each window. A text
    up to WINDOW characters is segmented whole, exactly as before; a run of more than
    WINDOW characters in which pysbd finds no sentence end is cut at the window's last space."""
    segment = _segmenter(language).segment
    spans: list[tuple[int, int]] = []
    pos = 0
    while len(text) - pos > WINDOW:
        window = text[pos : pos + WINDOW]
        found = _spans(window, segment(window), pos)
        if len(found) >= 2 and found[-1][0] > pos:  # all but the last (the window may cut it)
            spans += found[:-1]
            pos = found[-1][0]
            continue
        cut = window.rstrip().rfind(" ", WINDOW // 2)
        cut = cut if cut > 0 else WINDOW
        spans += _spans(window[:cut], [window[:cut]], pos)
        pos += cut
    return spans + _spans(text[pos:], segment(text[pos:]), pos)


def _depth_after(depth: int, text: str, start: int, end: int) -> int:
    """Bracket depth after reading text[start:end] from `depth` (never below 0)."""
    for ch in text[start:end]:
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE and depth > 0:
            depth -= 1
    return depth


def _closes_bracket(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] closes a bracket opened before it within BRACKET_REACH characters."""
    depth = 0
    for ch in text[start : min(end, start + BRACKET_REACH)]:
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            if depth == 0:
                return True
            depth -= 1
    return False


def _should_join(text: str, prev: list[int], start: int, end: int, language: str) -> bool:
    """prev = [start, end, bracket depth, one word]: the merged span so far."""
    if prev[2] > 0 and _closes_bracket(text, start, end):
        return True
    nxt = text[start:end]
    if _STARTS_NUMERIC.match(nxt) and (
        _ENDS_NUMERIC_DOT.search(text[max(prev[0], prev[1] - 8) : prev[1]]) or prev[3]
    ):
        return True  # "95% CI 0." + "14 to 0.68", or a lone abbreviation "Aprox." + "3 ensayos"
    if language not in _SCRIPTS_WITHOUT_CASE and _CONTINUES_LOWER.match(nxt):
        return True
    return False


def _cuts(text: str, start: int, end: int, language: str) -> list[tuple[int, int]]:
    """(end of a sentence, start of the next) inside [start, end) after "word C." (see above)."""
    if language in _SCRIPTS_WITHOUT_CASE:
        return []
    piece = text[start:end]
    out, depth, read = [], 0, 0
    for m in _SINGLE_CAPITAL_END.finditer(piece):
        depth, read = _depth_after(depth, piece, read, m.start(1)), m.start(1)
        if depth == 0:
            out.append((start + m.start(1), start + m.end(1)))
    return out


SPLITTERS = ("pysbd", "nltk")  # split_sentences' splitters (params: msd.splitter)


def split_sentences(text: str, language: str = "en", splitter: str = "pysbd") -> list[Sentence]:
    """Sentences of `text` with their [start, end) offsets; whitespace-only text gives [].
    Linear time: pysbd runs on windows (see `_pysbd_spans`), the repairs read each
    character a bounded number of times."""
    if not text or not text.strip():
        return []
    if splitter == "nltk":
        return punkt_sentences(text, language)
    if splitter != "pysbd":
        raise ValueError(f"unknown sentence splitter {splitter!r}: one of {', '.join(SPLITTERS)}")
    merged: list[list] = []  # [start, end, bracket depth, one word]
    for start, end in _pysbd_spans(text, language):
        if merged and _should_join(text, merged[-1], start, end, language):
            last = merged[-1]
            last[2] = _depth_after(last[2], text, last[1], end)
            last[3] = last[3] and not _SPACE.search(text, last[1], end)
            last[1] = end
        else:
            merged.append(
                [start, end, _depth_after(0, text, start, end), not _SPACE.search(text, start, end)]
            )
    spans: list[tuple[int, int]] = []
    for start, end, _, _ in merged:
        for stop, nxt in _cuts(text, start, end, language):
            spans.append((start, stop))
            start = nxt
        spans.append((start, end))
    spans = _attach_fragments(text, [(s, e) for s, e in spans if text[s:e].strip()])
    return [Sentence(s, e, text[s:e]) for s, e in spans]


@functools.lru_cache(maxsize=1)
def punkt_english() -> Any:
    """NLTK's punkt sentence tokenizer with NLTK's English parameters (`nltk.sent_tokenize`'s
    model; also MedLane's reference preparation, `medsimp.text.medlane_refs`)."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import load_module

    english = load_module("english")
    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


def punkt_sentences(text: str, language: str = "en") -> list[Sentence]:
    """NLTK's punkt with its English parameters, as `nltk.sent_tokenize` splits (Cao et al.
    §3.2 "We split the sentences using NLTK"), with offsets; English only."""
    if language != "en":
        raise ValueError(f"the nltk splitter has English parameters only, not {language!r}")
    out = []
    for start, end in punkt_english().span_tokenize(text):
        start += len(text[start:end]) - len(text[start:end].lstrip())  # punkt keeps leading space
        if start < end:
            out.append(Sentence(start, end, text[start:end]))
    return out


def _attach_fragments(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join pieces with no letters to a neighbour (see the module docstring): a bare list number
    to the next sentence, anything else (".", '".', "3.", "...") to the one before."""
    out: list[tuple[int, int]] = []
    carry = None  # start of a list number waiting for its sentence
    for start, end in spans:
        piece = text[start:end].strip()
        if carry is not None:
            start, carry = carry, None
        elif _NO_LETTERS.match(piece):
            if _LIST_NUMBER.match(piece) and (start, end) != spans[-1]:
                carry = start
                continue
            if out:
                out[-1] = (out[-1][0], end)
                continue
        out.append((start, end))
    return out
