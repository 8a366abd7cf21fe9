"""Which language a set of lines is written in, so that a score is never computed with another
language's formula (issue 35 item 2: Persian outputs got an English FKGL of 9.37 under the
default `--lang en`).

py3langid (Lui & Baldwin's langid.py, its naive Bayes model shipped inside the wheel; 97
languages; deterministic) classifies the distinct lines joined, as one text, with normalised
probabilities; its byte n-gram features are counted in numpy instead of py3langid's per-byte
Python loop (`features`: the same counts, 0.045 -> 0.005 s on 200,000 characters). A verdict
needs enough letters to mean something (`MIN_LETTERS`) and a probability of at least
`MIN_PROBABILITY`; otherwise the language is left undecided and nothing is refused on its account.
"""

from __future__ import annotations

import functools
import lzma
import pickle
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from medsimp.resources import cached_table, code_key, dist_version

MIN_LETTERS = 200  # fewer letters than this (a few words) decide nothing
MIN_PROBABILITY = 0.95
MAX_CHARS = 200_000  # a prefix this long decides as well as the whole text


@dataclass(frozen=True)
class Detected:
    lang: str | None  # ISO 639-1 code, or None when undecided
    probability: float
    letters: int


def _model_parts(model: Path) -> tuple:
    """py3langid's model as `LanguageIdentifier.from_pickled_model` unpickles it from the LZMA
    file (0.1-0.2 s), in plain values: the arrays as (typecode, bytes)."""
    with lzma.open(model) as handle:
        nb_ptc, nb_pc, nb_classes, tk_nextmove, tk_output = pickle.load(handle)
    arrays = [(a.typecode, a.tobytes()) for a in (nb_ptc, nb_pc, tk_nextmove)]
    return arrays[0], arrays[1], list(nb_classes), arrays[2], dict(tk_output)


@functools.cache
def _identifier():
    """py3langid's identifier with its own model and normalised probabilities, the model read
    from a `medsimp.resources.cached_table` (a few ms) rather than decompressed each process."""
    import numpy as np
    from py3langid import langid

    model = Path(langid.__file__).parent / langid.MODEL_FILE
    key = f"{dist_version('py3langid')}\0{model.stat().st_size}\0".encode() + code_key(_model_parts)
    ptc, pc, nb_classes, nextmove, tk_output = cached_table("py3langid", key, lambda: _model_parts(model))
    nb_ptc, nb_pc = array(*ptc), array(*pc)
    # as from_pickled_model: numpy arrays of the model's float32 values, ptc as (features, classes)
    numfeats = len(nb_ptc) // len(nb_pc)
    return langid.LanguageIdentifier(
        np.array(nb_ptc).reshape(numfeats, len(nb_pc)),
        np.array(nb_pc),
        numfeats,
        nb_classes,
        array(*nextmove),
        tk_output,
        norm_probs=True,
    )


@functools.cache
def _outputs() -> tuple:
    """py3langid's state -> features table as two parallel arrays (state, feature index), one
    row per feature a state emits (tk_output), for `features`."""
    import numpy as np

    table = _identifier().tk_output
    states = [s for s, found in table.items() for _ in found]
    found = [f for s in table for f in table[s]]
    return np.array(states, dtype=np.intp), np.array(found, dtype=np.intp)


def features(text: str):
    """`LanguageIdentifier.instance2fv(text)` (the uint16 count of each byte n-gram feature, with
    its wrap-around past 65,535), counted in numpy. py3langid walks its tokenizer's state machine
    byte by byte in Python; that machine is 4-definite (the state after any 4 bytes does not
    depend on the state before them: checked on the model by `tests/test_evaluate_lang.py`, each
    set of states narrowed to one after 4 bytes), so the state at byte i >= 3 is the walk from
    state 0 over bytes i-3..i, 4 array lookups for all positions at once; bytes 0-2 are walked."""
    import numpy as np

    ident = _identifier()
    data = np.frombuffer(text.encode("utf8", errors="surrogatepass"), dtype=np.uint8).astype(np.intp)
    nextmove = np.asarray(ident.tk_nextmove)
    head, state = [], 0
    for byte in data[:3].tolist():  # the first bytes: from state 0 as the walk reads them
        state = int(nextmove[(state << 8) + byte])
        head.append(state)
    tail = np.zeros(max(len(data) - 3, 0), dtype=np.intp)
    for k in range(4):
        tail = nextmove[(tail << 8) + data[k : k + len(tail)]].astype(np.intp)
    visits = np.bincount(np.concatenate([np.array(head, dtype=np.intp), tail]), minlength=len(nextmove) >> 8)
    states, found = _outputs()
    counts = np.bincount(found, weights=visits[states], minlength=ident.nb_numfeats)
    return counts.astype(np.int64).astype(np.uint16)  # py3langid's datatype, wrapping as it does


def classify(text: str) -> tuple[str, float]:
    """`LanguageIdentifier.classify(text)` (language, normalised probability) on `features`."""
    import numpy as np

    ident = _identifier()
    probs = ident.norm_probs(ident.nb_classprobs(features(text)))
    best = np.argmax(probs)
    return ident.nb_classes[best], probs[best]


def detect(lines: Iterable[str | None]) -> Detected:
    """The language of `lines` taken together (see the module doc)."""
    text, size, seen = [], 0, set()
    for line in lines:
        if line and line not in seen:  # each distinct line once: repeats skew the counts (a constant output)
            seen.add(line)
            text.append(line)
            size += len(line) + 1
            if size >= MAX_CHARS:
                break
    joined = "\n".join(text)[:MAX_CHARS]
    letters = sum(map(str.isalpha, joined))
    if letters < MIN_LETTERS:
        return Detected(None, 0.0, letters)
    lang, probability = classify(joined)
    probability = float(probability)
    return Detected(str(lang) if probability >= MIN_PROBABILITY else None, probability, letters)
