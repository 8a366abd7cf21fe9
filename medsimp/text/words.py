"""Word tokens: NLTK's word tokenizer (`NLTKWordTokenizer`, what `nltk.word_tokenize` applies
to each sentence), the tokenizer MedLane's Algorithm 1 and its scorer use, for every English
word count in medsimp (selection, metrics, DECLARE's inputs).

A de-identification placeholder (``[**Hospital1 18**]``) is kept as one token.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TypeAlias

import regex

PLACEHOLDER = re.compile(r"\[\*\*[^\n]{0,256}?\*\*\]")  # bounded: linear on "[**" runs


# ---------------------------------------------------------------------------------------------
# Vendored code: NLTK 3.10.4, nltk/tokenize/destructive.py (`NLTKWordTokenizer`'s rule tables
# STARTING_QUOTES, ENDING_QUOTES, PUNCTUATION, PARENS_BRACKETS, DOUBLE_DASHES, the
# `MacIntyreContractions` CONTRACTIONS2/3, and its `tokenize`), upstream
# https://github.com/nltk/nltk/blob/3.10.4/nltk/tokenize/destructive.py
# Copyright (C) 2001-2026 NLTK Project; authors Liling Tan, Tom Aarsen (modifications).
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
# Modified here: `_compile` picks the engine per rule, rules are skipped when a text cannot
# match them (`_NEEDS`, `_FROM_LAST_PERIOD`, `_may_contract`), the deprecated options dropped.
# ---------------------------------------------------------------------------------------------
# Kept here so the metrics do not `import nltk`, whose `__init__` pulls in scipy
# and scikit-learn (about 1 s). NLTK compiles its rule tables with the `regex` engine: its word
# characters (`\w`, `\b`) are letters, marks, digits and connectors where stdlib `re`'s are
# `isalnum()` and `_`, its `\d` follows a newer Unicode, and its `\s` leaves out U+001C..U+001F;
# `_compile` keeps those semantics. tests/test_notes_text.py checks the tables
# equal NLTK's and the tokens the stock tokenizer's.
_Pattern: TypeAlias = re.Pattern[str] | regex.Pattern[str]
_RE_SPACE = r"[^\S\x1c-\x1f]"  # `regex`'s `\s`, spelled for stdlib `re`


def _compile(pattern: str, flags: int = 0) -> _Pattern:
    r"""A rule with a word, digit or boundary class or `(?i)` is compiled by `regex`, as NLTK
    does; any other by stdlib `re` (faster on most of these rules), with `\s` (never inside a
    bracket class in NLTK's tables) spelled as `regex` reads it."""
    if "(?i)" in pattern or any(e in pattern for e in (r"\w", r"\W", r"\d", r"\D", r"\b", r"\B", r"\S")):
        return regex.compile(pattern, flags)
    return re.compile(pattern.replace(r"\s", _RE_SPACE), flags)


_Rules = list[tuple[_Pattern, str]]
STARTING_QUOTES: _Rules = [
    (_compile("([«“‘„]|[`]+)", re.U), r" \1 "),
    (_compile(r"^\""), r"``"),
    (_compile(r"(``)"), r" \1 "),
    (_compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (_compile(r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)", re.U), r"\1 "),
]
ENDING_QUOTES: _Rules = [
    (_compile("([»”’])", re.U), r" \1 "),
    (_compile(r"''"), " '' "),
    (_compile(r'"'), " '' "),
    (_compile(r"\s+"), " "),
    (_compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (_compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
PUNCTUATION: _Rules = [
    (_compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$", re.U), r"\1 \2 \3 "),
    (_compile(r"([:,])([^\d])"), r" \1 \2"),
    (_compile(r"([:,])$"), r" \1 "),
    (_compile(r"\.{2,}", re.U), r" \g<0> "),
    (_compile(r"[;@#$%&]"), r" \g<0> "),
    (_compile(r"[\u2012-\u2015]", re.U), r" \g<0> "),
    (_compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
    (_compile(r"[?!]"), r" \g<0> "),
    (_compile(r"([^'])' "), r"\1 ' "),
    (_compile(r"[*]", re.U), r" \g<0> "),
]
PARENS_BRACKETS = (_compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ")
DOUBLE_DASHES = (_compile(r"--"), r" -- ")
# MacIntyre's contractions (CONTRACTIONS2 and CONTRACTIONS3; NLTK leaves CONTRACTIONS4 out),
# which NLTK compiles with stdlib `re`.
CONTRACTIONS = [
    re.compile(p)
    for p in (
        r"(?i)\b(can)(?#X)(not)\b",
        r"(?i)\b(d)(?#X)('ye)\b",
        r"(?i)\b(gim)(?#X)(me)\b",
        r"(?i)\b(gon)(?#X)(na)\b",
        r"(?i)\b(got)(?#X)(ta)\b",
        r"(?i)\b(lem)(?#X)(me)\b",
        r"(?i)\b(more)(?#X)('n)\b",
        r"(?i)\b(wan)(?#X)(na)(?=\s)",
        r"(?i) ('t)(?#X)(is)\b",
        r"(?i) ('t)(?#X)(was)\b",
    )
]
# Letters every contraction match contains. The earlier rules only insert spaces, replace
# quote characters and collapse whitespace, so a text without these letter runs has no
# contraction match: the ten contraction substitutions are skipped.
_CONTRACTION_LETTERS = re.compile(r"cannot|ye|gimme|gonna|gotta|lemme|more|wanna|tis|twas", re.I)


def _may_contract(text: str) -> bool:
    """Whether a contraction rule may match: `_CONTRACTION_LETTERS` (a case-blind alternation,
    slow to scan) after cheap tests. Without an apostrophe the only contractions are cannot,
    gimme, gonna, gotta, lemme and wanna, whose letters `re.I` matches in their two ASCII cases
    only (and "i" also in U+0130 and U+0131, not ASCII): an ASCII text holds one lower-cased."""
    if "'" in text:
        return bool(_CONTRACTION_LETTERS.search(text))
    low = text.lower()
    if "mm" not in low and "nn" not in low and "tt" not in low:
        return False
    if text.isascii():
        return any(w in low for w in _BARE_CONTRACTIONS)
    return bool(_CONTRACTION_LETTERS.search(text))


_BARE_CONTRACTIONS = ("cannot", "gimme", "gonna", "gotta", "lemme", "wanna")


# Substrings of which every match of a rule contains one, by the rule's pattern (as NLTK spells
# it): a text with none of them is left as it is by that rule, so the rule is skipped (a few
# `in` tests cost less than the scan of a pattern, most of all one that starts with a broad
# class such as `([^\.])`). tests/test_notes_text.py checks the tokens equal the stock
# tokenizer's and that every pattern named here is one of the tables'.
_NEEDS: dict[str, tuple[str, ...]] = {
    # STARTING_QUOTES
    "([«“‘„]|[`]+)": tuple("«“‘„`"),
    r"^\"": ('"',),
    r"(``)": ("``",),
    r"([ \(\[{<])(\"|\'{2})": ('"', "''"),
    r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)": ("'",),
    # PUNCTUATION
    r"([:,])([^\d])": (":", ","),
    r"([:,])$": (":", ","),
    r"\.{2,}": ("..",),
    r"[;@#$%&]": tuple(";@#$%&"),
    r"[\u2012-\u2015]": tuple("\u2012\u2013\u2014\u2015"),
    r"[?!]": ("?", "!"),
    r"([^'])' ": ("' ",),
    r"[*]": ("*",),
    # PARENS_BRACKETS, DOUBLE_DASHES
    r"[\]\[\(\)\{\}\<\>]": tuple("[](){}<>"),
    r"--": ("--",),
    # ENDING_QUOTES
    "([»”’])": tuple("»”’"),
    r"''": ("''",),
    r'"': ('"',),
    r"([^' ])('[sS]|'[mM]|'[dD]|') ": ("'",),
    r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ": ("'",),
}
# ENDING_QUOTES' `\s+` -> " " changes only whitespace, which the final `split()` ignores (it
# leaves U+001C..U+001F, which `split()` also splits at); it matters to the rules after it that
# read single spaces, and each of those needs an apostrophe (the two rules above, MacIntyre's
# " 't" contractions). So it runs only on a text with an apostrophe.
_WHITESPACE_ONLY: dict[str, tuple[str, ...]] = {r"\s+": ("'",)}
# Rules that can match only near the end of the text, by pattern: they run on the text from
# where a match can start (`_tail_start`). The two final-period rules (PUNCTUATION) match
# `([^\.])(\.)` followed by closing brackets, quotes and spaces only, up to the end: their
# period is the text's last one, so they run from the character before it. `([:,])$` matches
# the last character, or the one before a final newline (`$`).
_FROM_LAST_PERIOD = frozenset(
    {
        r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$",
        r'([^\.])(\.)([\]\)}>"\']*)\s*$',
    }
)
_FROM_LAST_TWO = frozenset({r"([:,])$"})
_TAIL_CACHED = 8  # tails up to this long are memoised: few distinct ones ("d.", "s.  ", ",")
# Rules whose every match is one of their needed substrings, replaced whatever surrounds it
# (a class of single characters, or one literal string): they run as `str.replace` of each
# (what the rule writes for it alone; leftmost and non-overlapping, as `re.sub`).
_LITERAL = frozenset(
    {
        r"[;@#$%&]",
        r"[\u2012-\u2015]",
        r"[?!]",
        r"[*]",
        r"[\]\[\(\)\{\}\<\>]",
        r"--",
        "([»”’])",
        r"''",
        r'"',
    }
)


# A `regex` rule as frequent as commas, and its twin for an ASCII text (where `regex`'s `\d` is
# [0-9]): stdlib `re` with the replacement as a function (no template expansion in Python).
_COMMA_COLON = re.compile(r"([:,])([^0-9])")
_ASCII_TWINS: dict[str, Callable[[str], str]] = {
    r"([:,])([^\d])": functools.partial(_COMMA_COLON.sub, lambda m: f" {m[1]} {m[2]}")
}


def _tail_start(kind: str, text: str) -> int:
    """Where a rule of `kind` ("period", "end") may start matching in `text`; -1: nowhere."""
    if kind == "period":
        i = text.rfind(".")
        return i - 1 if i > 0 else -1
    return max(len(text) - 2, 0)


# (rule, replacement, needed substrings (none: always runs), their first characters, tail kind,
# (needed, written) pairs of a `_LITERAL` rule, its `_ASCII_TWINS` function, the characters the
# replacement writes that were not in the match ("``" for a '"'), the rule's number)
_Step = tuple[
    _Pattern,
    str,
    tuple[str, ...],
    frozenset[str],
    str,
    tuple[tuple[str, str], ...],
    Callable[[str], str] | None,
    frozenset[str],
    int,
]
_GROUP_REF = re.compile(r"\\(?:\d+|g<\w+>)")


def nltk_pattern(rx: _Pattern) -> str:
    r"""A rule's pattern as NLTK spells it (`_compile` spells `\s` out for stdlib `re`)."""
    return rx.pattern.replace(_RE_SPACE, r"\s")


def _steps(rules: _Rules, first: int = 0) -> list[_Step]:
    out: list[_Step] = []
    for i, (rx, sub) in enumerate(rules, first):
        pattern = nltk_pattern(rx)
        needs = _NEEDS.get(pattern) or _WHITESPACE_ONLY.get(pattern, ())
        tail = "period" if pattern in _FROM_LAST_PERIOD else "end" if pattern in _FROM_LAST_TWO else ""
        literal = tuple((n, rx.sub(sub, n)) for n in needs) if pattern in _LITERAL else ()
        written = frozenset(_GROUP_REF.sub("", sub)) - {" "}
        twin = _ASCII_TWINS.get(pattern)
        out.append((rx, sub, needs, frozenset(n[0] for n in needs), tail, literal, twin, written, i))
    return out


_HEAD = _steps(STARTING_QUOTES + PUNCTUATION + [PARENS_BRACKETS, DOUBLE_DASHES])
_TAIL = _steps(ENDING_QUOTES, len(_HEAD))
# Every character a rule of `_HEAD` or `_TAIL` needs first: a text's set of them picks its rules.
_TRIGGERS = frozenset(c for step in _HEAD + _TAIL for c in step[3])


@functools.lru_cache(maxsize=4096)
def _plan(present: frozenset[str]) -> tuple[list[_Step], list[_Step]]:
    """The steps of `_HEAD` and of `_TAIL` that may change a text whose trigger characters are
    `present`: those that need nothing, or one of whose needed substrings starts with a
    character of the text by then (`present`, plus what the steps before may have written; a
    step removes no character but a '"' it replaces, so this is a superset)."""
    plans: tuple[list[_Step], list[_Step]] = ([], [])
    for plan, steps in zip(plans, (_HEAD, _TAIL)):
        for step in steps:
            if not step[2] or not step[3].isdisjoint(present):
                plan.append(step)
                present = present | step[7]
    return plans


@functools.lru_cache(maxsize=1 << 14)
def _sub_tail(step: int, tail: str) -> str:
    rx, sub = (_HEAD + _TAIL)[step][:2]
    return rx.sub(sub, tail)


def _apply(steps: list[_Step], text: str) -> str:
    for regexp, substitution, needs, _, tail, literal, twin, _, index in steps:
        if literal:
            for old, new in literal:
                if old in text:
                    text = text.replace(old, new)
            continue
        if needs:
            for n in needs:
                if n in text:
                    break
            else:
                continue
        if tail:
            i = _tail_start(tail, text)
            if i < 0:
                continue
            end = text[i:]
            end = _sub_tail(index, end) if len(end) <= _TAIL_CACHED else regexp.sub(substitution, end)
            text = text[:i] + end
        elif twin is not None and text.isascii():
            text = twin(text)
        else:
            text = regexp.sub(substitution, text)
    return text


class WordTokenizer:
    """NLTK's `NLTKWordTokenizer.tokenize` (without its deprecated options): the one word
    tokenizer of the toolkit (selection, readability, the metrics)."""

    def tokenize(self, text: str) -> list[str]:
        head, tail = _plan(_TRIGGERS.intersection(text))
        text = _apply(tail, " " + _apply(head, text) + " ")
        if _may_contract(text):
            for regexp in CONTRACTIONS:
                text = regexp.sub(r" \1 \2 ", text)
        return text.split()


@functools.lru_cache(maxsize=1)
def word_tokenizer() -> WordTokenizer:
    """The word tokenizer (NLTK's `NLTKWordTokenizer` rules, see `WordTokenizer`)."""
    return WordTokenizer()


def tokenize(sentence: str) -> list[str]:
    """NLTK word tokens, with each de-identification placeholder kept as one token."""
    tok = word_tokenizer().tokenize
    out: list[str] = []
    pos = 0
    for m in PLACEHOLDER.finditer(sentence):
        out += tok(sentence[pos : m.start()])
        out.append(m.group())
        pos = m.end()
    out += tok(sentence[pos:])
    return out


def lower_tokens(text: str) -> list[str]:
    """Lowercased NLTK Treebank word tokens (`nltk.word_tokenize` without sentence splitting): the
    tokens the metrics score and the models train on (`medsimp.metrics.base.tokenize`)."""
    return list(_lower_tokens(text.lower()))


@functools.lru_cache(maxsize=65536)
def _lower_tokens(text: str) -> tuple[str, ...]:
    return tuple(tokenize(text))
