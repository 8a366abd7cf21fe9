"""Word tokens: NLTK's word tokenizer (`NLTKWordTokenizer`, what `nltk.word_tokenize` applies
to each sentence), the tokenizer MedLane's Algorithm 1 and its scorer use, for every English
word count in medsimp (selection, metrics, DECLARE's inputs).

A de-identification placeholder (``[**Hospital1 18**]``) is kept as one token.
"""

from __future__ import annotations

import functools
import re
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
    """A cheap test before `_CONTRACTION_LETTERS` (a case-blind alternation, slow to scan):
    every contraction has an apostrophe or a doubled m, n or t (cannot, gimme, gonna, gotta,
    lemme, wanna), letters that `re.I` matches in their two ASCII cases only."""
    if "'" in text:
        return True
    low = text.lower()
    return "mm" in low or "nn" in low or "tt" in low


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
    r"[?!]": ("?", "!"),
    r"([^'])' ": ("' ",),
    r"[*]": ("*",),
    # ENDING_QUOTES
    "([»”’])": tuple("»”’"),
    r"''": ("''",),
    r'"': ('"',),
    r"([^' ])('[sS]|'[mM]|'[dD]|') ": ("'",),
    r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ": ("'",),
}
# The two final-period rules (PUNCTUATION) match `([^\.])(\.)` followed by closing brackets,
# quotes and spaces only, up to the end: their period is the text's last one, so they run on
# the text from the character before it.
_FROM_LAST_PERIOD = frozenset(
    {
        r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$",
        r'([^\.])(\.)([\]\)}>"\']*)\s*$',
    }
)
_Steps = list[tuple[_Pattern, str, tuple[str, ...], bool]]


def nltk_pattern(rx: _Pattern) -> str:
    r"""A rule's pattern as NLTK spells it (`_compile` spells `\s` out for stdlib `re`)."""
    return rx.pattern.replace(_RE_SPACE, r"\s")


def _steps(rules: _Rules) -> _Steps:
    return [
        (rx, sub, _NEEDS.get(nltk_pattern(rx), ()), nltk_pattern(rx) in _FROM_LAST_PERIOD)
        for rx, sub in rules
    ]


_HEAD = _steps(STARTING_QUOTES) + _steps(PUNCTUATION) + _steps([PARENS_BRACKETS, DOUBLE_DASHES])
_TAIL = _steps(ENDING_QUOTES)


def _apply(steps: _Steps, text: str) -> str:
    for regexp, substitution, needs, from_last_period in steps:
        if needs:
            for n in needs:
                if n in text:
                    break
            else:
                continue
        if from_last_period:
            i = text.rfind(".")
            if i > 0:
                text = text[: i - 1] + regexp.sub(substitution, text[i - 1 :])
        else:
            text = regexp.sub(substitution, text)
    return text


class WordTokenizer:
    """NLTK's `NLTKWordTokenizer.tokenize` (without its deprecated options): the one word
    tokenizer of the toolkit (selection, readability, the metrics)."""

    def tokenize(self, text: str) -> list[str]:
        text = _apply(_TAIL, " " + _apply(_HEAD, text) + " ")
        if _may_contract(text) and _CONTRACTION_LETTERS.search(text):
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
