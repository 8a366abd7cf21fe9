"""MedLane sentence selection (Luo et al. 2022, Section 3.1, Algorithm 1) and its lexicons.

For a sentence s, tokenised with NLTK's word tokenizer (`NLTKWordTokenizer`, see `_tokenizer`),
as Algorithm 1's pseudocode counts (and the authors' `mark_sentence` does):

- n   = every token, punctuation included
- abb = tokens in the abbreviation set A (case-sensitive unless `case_sensitive=False`)
- unc = tokens with a letter or digit whose lemma (lower-cased, then spaCy's English lookup
  lemmatizer from spacy-lookups-data) is not in the common set T. Numbers are never in T
  (the authors map them to `num`, an uncommon word), so they count as uncommon.
  `abbreviation_counting="pseudocode"` (default): an abbreviation not in T counts in both
  abb and unc, as the pseudocode's two independent tests do; `"prose"`: it counts once,
  in abb only, as Section 3.1's text reads.
- `selection_rule="pseudocode"` (default, Algorithm 1's line 11): keep iff n >= 10 and
  0.1 <= (unc + abb) / n <= 0.5 (thresholds are params: min_tokens, min_ratio, max_ratio)
- `selection_rule="prose"` (Section 3.1's text: "the length of the sentences (greater than 10),
  the ratio of medical abbreviations (smaller than 0.5), and the ratio of top-3000 words
  (greater than 0.1)"): three separate strict tests, keep iff n > 10 and abb / n < 0.5 and
  com / n > 0.1, where com = tokens with a letter or digit whose lemma is in T (the complement
  of the pseudocode's unc among word tokens, whatever `abbreviation_counting` says). The same
  params give the thresholds: min_tokens for n, max_ratio for abb / n, min_ratio for com / n.
  `ratio` in the output stays (unc + abb) / n; only `keep` follows the rule.

T is EF's top-3000 English word list in the paper (`notes.common_words`: point it at that
list); the packaged `medsimp/resources/common_words.txt` is a stand-in (wordfreq's top-3000 lemmas,
no digits; its header says so). The same list feeds CWR in `medsimp evaluate`.

A de-identification placeholder (``[**Hospital1 18**]``) is one token; it is never an
abbreviation and its lemma is not a common word, so it counts in `unc`.
"""

from __future__ import annotations

import functools
import json
import pickle
import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from medsimp.config import resolve_path
from medsimp.params_schema import Algorithm1Reading, Notes
from medsimp.text.lemmas import lemmatize
from medsimp.text.words import tokenize

_WORD = re.compile(r"[^\W_]")
ABBREVIATION_COUNTING = typing.get_args(Algorithm1Reading)  # params `notes.abbreviation_counting`
SELECTION_RULES = typing.get_args(Algorithm1Reading)  # params `notes.selection_rule`
_PACK = 32  # bits per packed count: a sentence has fewer tokens than characters (notes.max_text_chars)
_MASK = (1 << _PACK) - 1


@dataclass(frozen=True, slots=True)
class Features:
    """Algorithm 1's counts and decision for one sentence."""

    n: int
    abb: int
    unc: int
    ratio: float
    keep: bool
    common: int = 0  # word tokens whose lemma is in T (the prose rule's count); not in as_dict

    def as_dict(self) -> dict:
        return {"n": self.n, "abb": self.abb, "unc": self.unc, "ratio": self.ratio, "keep": self.keep}


class _NoObjects(pickle.Unpickler):
    """Unpickles plain containers only (MedLane's dict of lists); refuses any class."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a lexicon pickle")


def _read_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def load_abbreviations(path: str | Path) -> dict[str, list[str]]:
    """Abbreviation -> expansions from JSON (dict or list), TSV (abbr<TAB>expansion[<TAB>...]),
    a MedLane pickle (dict abbr -> list of expansions) or a plain list (one per line)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
    elif suffix in (".pkl", ".pickle"):
        with path.open("rb") as fh:
            data = _NoObjects(fh).load()
    else:
        data = {}
        for line in _read_lines(path):
            key, *rest = line.split("\t")
            data.setdefault(key.strip(), []).extend(r.strip() for r in rest if r.strip())
    if isinstance(data, (list, set, tuple)):
        data = {str(k): [] for k in data}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an abbreviation lexicon must map abbreviations to expansions")
    return {str(k): [v] if isinstance(v, str) else [str(x) for x in v or []] for k, v in data.items()}


def load_common_words(path: str | Path) -> set[str]:
    """Common-word set T from a plain list (one per line) or a JSON list; lower-cased."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        words = json.loads(path.read_text(encoding="utf-8"))
    else:
        words = [ln.split("\t")[0] for ln in _read_lines(path)]
    return {str(w).strip().lower() for w in words if str(w).strip()}


class Selector:
    """Algorithm 1 with fixed lexicons and thresholds."""

    def __init__(
        self,
        abbreviations: Iterable[str],
        common_words: Iterable[str],
        *,
        case_sensitive: bool = True,
        min_tokens: int = 10,
        min_ratio: float = 0.1,
        max_ratio: float = 0.5,
        abbreviation_counting: str = "pseudocode",
        selection_rule: str = "pseudocode",
    ):
        if selection_rule not in SELECTION_RULES:
            raise ValueError(f"selection_rule must be one of {SELECTION_RULES}, got {selection_rule!r}")
        self.prose_rule = selection_rule == "prose"
        if abbreviation_counting not in ABBREVIATION_COUNTING:
            raise ValueError(
                f"abbreviation_counting must be one of {ABBREVIATION_COUNTING}, got {abbreviation_counting!r}"
            )
        self.count_abbreviations_twice = abbreviation_counting == "pseudocode"
        self.case_sensitive = case_sensitive
        self.abbreviations = frozenset(a if case_sensitive else a.lower() for a in abbreviations)
        self.common = frozenset(w.lower() for w in common_words)
        self.min_tokens, self.min_ratio, self.max_ratio = min_tokens, min_ratio, max_ratio
        # Token -> its abb, unc and com increments packed in one int (`_PACK` bits each, so a
        # sentence's counts are one C-level `sum`); bounded, tokens repeat with Zipf frequencies.
        self._codes = functools.lru_cache(maxsize=1 << 17)(self._token_code)

    def is_abbreviation(self, token: str) -> bool:
        return (token if self.case_sensitive else token.lower()) in self.abbreviations

    def _token_counts(self, token: str) -> tuple[int, int, int, int]:
        """(n, abb, unc, com) increments of one token."""
        if not _WORD.search(token):
            return 1, 0, 0, 0  # punctuation: in n only
        uncommon = int(lemmatize(token) not in self.common)
        if self.is_abbreviation(token):
            return 1, 1, uncommon if self.count_abbreviations_twice else 0, 1 - uncommon
        return 1, 0, uncommon, 1 - uncommon

    def _token_code(self, token: str) -> int:
        _, abb, unc, com = self._token_counts(token)
        return abb | unc << _PACK | com << 2 * _PACK

    def counts(self, sentence: str) -> tuple[int, int, int, float, bool]:
        """(n, abb, unc, ratio, keep) of a sentence: `features` without the record."""
        return self._decide(tokenize(sentence))[:5]

    def _decide(self, tokens: list[str]) -> tuple[int, int, int, float, bool, int]:
        n = len(tokens)  # every token counts in n
        packed = sum(map(self._codes, tokens))
        abb, unc, com = packed & _MASK, packed >> _PACK & _MASK, packed >> 2 * _PACK
        ratio = (unc + abb) / n if n else 0.0
        if self.prose_rule:  # Section 3.1's text: three separate strict tests
            keep = n > self.min_tokens and abb / n < self.max_ratio and com / n > self.min_ratio
        else:  # Algorithm 1, line 11: reject n < 10 or ratio > 0.5 or ratio < 0.1
            keep = n >= self.min_tokens and self.min_ratio <= ratio <= self.max_ratio
        return n, abb, unc, ratio, keep, com

    def features(self, sentence: str) -> Features:
        return Features(*self._decide(tokenize(sentence)))


def load_lexicons(params: Notes, root: str | Path = ".") -> tuple[list[str], list[str]]:
    """(abbreviations A, common words T) named by the `notes` params (paths relative to
    `root`, the params file's folder; `medsimp.config.resolve_path`)."""
    abbreviations = load_abbreviations(resolve_path(params.abbreviations, root))
    common = load_common_words(resolve_path(params.common_words, root))
    return sorted(abbreviations), sorted(common)


def common_lemmas(count: int = 3000, lang: str = "en") -> list[str]:
    """The `count` most frequent distinct alphabetic lemmas from wordfreq's ranked list
    (each word lemmatised with the same lookup table), in frequency order: a stand-in for
    EF's top-3000 list, with no digits."""
    from wordfreq import top_n_list

    out: list[str] = []
    seen: set[str] = set()
    for word in top_n_list(lang, count * 10):
        if not word.isalpha():
            continue
        lemma = lemmatize(word)
        if lemma.isalpha() and lemma not in seen:
            seen.add(lemma)
            out.append(lemma)
            if len(out) == count:
                break
    return out
