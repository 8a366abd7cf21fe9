"""Supervision for DECLARE's three modules, derived from a (source, target) word pair.

CWL labels (`rule`): source and target words are aligned with difflib.
- `annotation` (MedLane's locator, the default): a source word is `modify` (1) when the
  annotation explains it (`annotated`: the `abbr[full]` terms of a MedLane reference; without
  one, the diff's in-place explanations: an unchanged dictionary word followed by inserted
  words that spell one of its expansions, "ct" -> "ct scan") or it lies in a replaced or deleted
  block (the words the annotators changed) and has a letter or digit, whether or not it is a
  dictionary key: jargon such as "cirrhosis" is located.
- `dictionary` (medsimp's earlier rule): `modify` only when it lies in a replaced or deleted
  block AND is a dictionary key.
Every other word is `keep` (0). Only located words that are dictionary keys become terms
(DNLI instances): a term's gold option is the annotated expansion, else the dictionary
expansion found inside the aligned target block (longest match wins); a term with no such
expansion (or whose gold lies beyond the first `max_options`) yields no DNLI instance. The
RSSP target marks the target span of each interpreted term.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SPAN_START = "[s_span]"
SPAN_END = "[e_span]"
KEEP, MODIFY = 0, 1


@dataclass(frozen=True)
class Term:
    """A located source term: word index, dictionary options, gold option index and target span."""

    index: int
    word: str
    options: tuple[str, ...]
    gold: int | None
    target_span: tuple[int, int] | None


def _find(words: Sequence[str], phrase: Sequence[str], lo: int, hi: int) -> int | None:
    n = len(phrase)
    for i in range(lo, hi - n + 1):
        if list(words[i : i + n]) == list(phrase):
            return i
    return None


def _located(
    word: str, changed: bool, rule: str, dictionary: Mapping[str, list[str]], annotated: Mapping[str, str]
) -> bool:
    if rule == "dictionary":
        return changed and word in dictionary
    if rule == "annotation":
        return word in annotated or (changed and any(c.isalnum() for c in word))
    raise ValueError(f"train.locator_labels must be annotation or dictionary, not {rule!r}")


def derive(
    source: Sequence[str],
    target: Sequence[str],
    dictionary: Mapping[str, list[str]],
    max_options: int = 8,
    rule: str = "annotation",
    annotated: Mapping[str, str] | None = None,
) -> tuple[list[int], list[Term]]:
    """CWL labels per source word and the located dictionary terms (see the module docstring);
    `annotated` maps an explained source word to its annotated expansion (lowercased words)."""
    labels = [KEEP] * len(source)
    terms: list[Term] = []
    opcodes = difflib.SequenceMatcher(a=list(source), b=list(target), autojunk=False).get_opcodes()
    if rule == "dictionary":
        annotated = {}  # the old rule reads no annotation
    else:
        annotated = {
            **_explained_in_place(source, target, opcodes, dictionary, max_options),
            **(annotated or {}),
        }
    for tag, i1, i2, j1, j2 in opcodes:
        changed = tag in ("replace", "delete")
        for i in range(i1, i2):
            if _located(source[i], changed, rule, dictionary, annotated):
                labels[i] = MODIFY
        in_block = [i for i in range(i1, i2) if labels[i] == MODIFY and source[i] in dictionary]
        for i in in_block:
            options = tuple(dictionary[source[i]][:max_options])
            if source[i] in annotated:
                terms.append(_annotated_term(i, source[i], options, annotated[source[i]], target))
                continue
            gold, span = None, None
            if len(in_block) == 1 and j2 > j1:
                span = (j1, j2)
            best = -1
            for k, opt in enumerate(options):
                words = opt.split()
                at = _find(target, words, j1, j2)
                if at is not None and len(words) > best:
                    best, gold = len(words), k
                    if len(in_block) > 1:
                        span = (at, at + len(words))
            if gold is None:
                span = None
            terms.append(Term(i, source[i], options, gold, span))
    return labels, terms


def _explained_in_place(
    source: Sequence[str],
    target: Sequence[str],
    opcodes: Sequence[tuple[str, int, int, int, int]],
    dictionary: Mapping[str, list[str]],
    max_options: int,
) -> dict[str, str]:
    """Unchanged dictionary words that the inserted words after them turn into one of their
    (multi-word) expansions, longest first: "ct" + inserted "scan" = "ct scan"."""
    found: dict[str, str] = {}
    for (tag, _, i2, _, j2), following in zip(opcodes, opcodes[1:]):
        word = source[i2 - 1] if tag == "equal" else ""
        if following[0] != "insert" or word not in dictionary:
            continue
        window = list(target[j2 - 1 : following[4]])
        for option in sorted(dictionary[word][:max_options], key=lambda o: -len(o.split())):
            if len(option.split()) > 1 and window[: len(option.split())] == option.split():
                found[word] = option
                break
    return found


def _annotated_term(
    index: int, word: str, options: tuple[str, ...], expansion: str, target: Sequence[str]
) -> Term:
    """The annotation names the gold option; its span is the expansion's first place in the target."""
    if expansion not in options:
        return Term(index, word, options, None, None)
    words = expansion.split()
    at = _find(target, words, 0, len(target))
    return Term(index, word, options, options.index(expansion), None if at is None else (at, at + len(words)))


def marked_source(source: Sequence[str], choices: dict[int, str]) -> list[str]:
    """Source words with each chosen word index replaced by `[s_span] expansion [e_span]`."""
    out: list[str] = []
    for i, w in enumerate(source):
        if i in choices:
            out += [SPAN_START, *choices[i].split(), SPAN_END]
        else:
            out.append(w)
    return out


def marked_target(target: Sequence[str], spans: Sequence[tuple[int, int]]) -> list[str]:
    """Target words with each (start, end) span wrapped in span markers (spans must not overlap)."""
    starts = {s: e for s, e in spans}
    ends = {e for _, e in spans}
    out: list[str] = []
    for j, w in enumerate(target):
        if j in ends:
            out.append(SPAN_END)
        if j in starts:
            out.append(SPAN_START)
        out.append(w)
    if len(target) in ends:
        out.append(SPAN_END)
    return out


def masked_context(source: Sequence[str], index: int, mask_token: str) -> str:
    """The sentence with the word at `index` replaced by the encoder's mask token."""
    return " ".join(mask_token if i == index else w for i, w in enumerate(source))
