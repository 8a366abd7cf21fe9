"""Word tokens: NLTK's word tokenizer (`NLTKWordTokenizer`, what `nltk.word_tokenize` applies
to each sentence), the tokenizer MedLane's Algorithm 1 and its scorer use, for every English
word count in medsimp (selection, metrics, DECLARE's inputs).

A de-identification placeholder (``[**Hospital1 18**]``) is kept as one token.
"""

from __future__ import annotations

import functools
import re

PLACEHOLDER = re.compile(r"\[\*\*[^\n]{0,256}?\*\*\]")  # bounded: linear on "[**" runs


# NLTK 3.10's `NLTKWordTokenizer` (nltk/tokenize/destructive.py): its rule tables and its
# `tokenize`, compiled by stdlib `re` (NLTK wraps them in `redos.TimedPattern`, a `regex`
# engine with a timeout per call, for caller-supplied patterns; these are fixed). Kept here
# so the metrics do not `import nltk`, whose `__init__` pulls in scipy and scikit-learn
# (about 1 s). tests/test_notes_text.py checks the tables equal NLTK's and the tokens the
# stock tokenizer's.
_Rules = list[tuple[re.Pattern[str], str]]
STARTING_QUOTES: _Rules = [
    (re.compile("([«“‘„]|[`]+)", re.U), r" \1 "),
    (re.compile(r"^\""), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)", re.U), r"\1 "),
]
ENDING_QUOTES: _Rules = [
    (re.compile("([»”’])", re.U), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"\s+"), " "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
PUNCTUATION: _Rules = [
    (re.compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$", re.U), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}", re.U), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile(r"[\u2012-\u2015]", re.U), r" \g<0> "),
    (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]", re.U), r" \g<0> "),
]
PARENS_BRACKETS = (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ")
DOUBLE_DASHES = (re.compile(r"--"), r" -- ")
# MacIntyre's contractions (CONTRACTIONS2 and CONTRACTIONS3; NLTK leaves CONTRACTIONS4 out).
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


class WordTokenizer:
    """NLTK's `NLTKWordTokenizer.tokenize` (without its deprecated options): the one word
    tokenizer of the toolkit (selection, readability, the metrics)."""

    def tokenize(self, text: str) -> list[str]:
        for regexp, substitution in STARTING_QUOTES:
            text = regexp.sub(substitution, text)
        for regexp, substitution in PUNCTUATION:
            text = regexp.sub(substitution, text)
        for regexp, substitution in (PARENS_BRACKETS, DOUBLE_DASHES):
            text = regexp.sub(substitution, text)
        text = " " + text + " "
        for regexp, substitution in ENDING_QUOTES:
            text = regexp.sub(substitution, text)
        if _CONTRACTION_LETTERS.search(text):
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
