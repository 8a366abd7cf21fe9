"""Score system outputs in two modes: `default` (corrected) and `medlane` (the authors' scorer).

`default`: lowercased NLTK Treebank tokens for every metric, references with
`abbr[full]` replaced by the full form, HIT per sentence over the source's
annotated terms with whole-token matching, CWR = common lemmas / output tokens. `medlane`: reproduces
`bleu_eval_new.py` of machinelearning4health/MedLane (see docs/metrics.md).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from medsimp.text.words import tokenize as tokenize_words
from medsimp.text.words import word_tokenizer
from medsimp.training import metrics as M

# MedLane's scorer: an annotated pair is the non-space, non-bracket run right before `[...]`.
_MEDLANE_PAIR_RE = re.compile(r"[^\[\] ]+\[[^\[\]]+\]")
_BRACKET_RE = re.compile(r"\[[^\[\]]*\]")
_TERM_RE = re.compile(r"([^\s\[\]]+)\[([^\[\]]*)\]")
MEDLANE_REFERENCES = 4  # bleu_eval_new.py writes ref0..ref3.txt for nlg-eval


@dataclass
class EvalItem:
    """One evaluation sentence: its source (may be None) and raw references (may hold `abbr[full]`)."""

    source: str | None
    references: list[str]
    terms: list[tuple[str, list[str]]] = field(default_factory=list)  # filled by `attach_terms`


def tokenize(text: str) -> list[str]:
    """Lowercased NLTK Treebank word tokens (`nltk.word_tokenize` without sentence splitting)."""
    return list(_tokens(text.lower()))


@functools.lru_cache(maxsize=65536)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(tokenize_words(text))


def expand(ref: str) -> str:
    """Reference text with each `abbr[full]` replaced by `full`."""
    return _TERM_RE.sub(lambda m: m.group(2).strip(), ref)


def annotated_terms(ref: str) -> list[tuple[str, str]]:
    """(abbreviation, expansion) pairs annotated in one reference, lowercased."""
    return [(m.group(1).lower(), m.group(2).strip().lower()) for m in _TERM_RE.finditer(ref)]


def attach_terms(items: Sequence[EvalItem], dictionary: dict[str, list[str]] | None = None) -> None:
    """Set each item's source terms and accepted expansions.

    Annotated references: a term is an annotated abbreviation that occurs (as whole
    tokens) in the source; its accepted expansions are every reference's expansion for it.
    Without any annotation in the set, a dictionary (if given) supplies the terms: each
    dictionary key found in the source, accepting any of its expansions.
    """
    annotated = any(annotated_terms(r) for it in items for r in it.references)
    for it in items:
        src = tokenize(it.source) if it.source is not None else None
        found: dict[str, list[str]] = {}
        if annotated:
            for ref in it.references:
                for abbr, full in annotated_terms(ref):
                    if src is None or M.contains(src, tokenize(abbr)):
                        slot = found.setdefault(abbr, [])
                        if full not in slot:
                            slot.append(full)
        elif dictionary and src is not None:
            for i in range(len(src)):
                if src[i] in dictionary and src[i] not in found:
                    found[src[i]] = list(dictionary[src[i]])
        it.terms = sorted(found.items())


def _is_common(common: set[str]) -> Callable[[str], bool]:
    from medsimp.training.lexicon import lemma

    return lambda w: lemma(w) in common


def _background(fn: Callable[[], dict], n: int) -> Callable[[], dict]:
    """Start `fn` (pure-Python metrics) in a forked child when that pays off and is safe (Linux,
    2+ cores, a large set, no other Python thread to hold a lock across the fork); the returned
    callable waits for its result."""
    if n < 500 or (os.cpu_count() or 1) < 2 or threading.active_count() > 1 or sys.platform != "linux":
        return fn
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            send.send(("ok", fn()))
        except BaseException as exc:  # re-raised in the parent
            send.send(("error", exc))

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    send.close()

    def result() -> dict:
        try:
            status, value = recv.recv()
        except EOFError:
            raise RuntimeError(f"metric worker exited with {proc.exitcode}") from None
        finally:
            proc.join()
        if status == "error":
            raise value
        return value

    return result


METRICS = (
    "bleu",
    "meteor",
    "rouge_1",
    "rouge_2",
    "rouge_l",
    "cider",
    "sari",
    "fkgl",
    "bertscore",
    "hit",
    "cwr",
    "ascore",
)
_ROUGE = {"rouge_1": "rouge1", "rouge_2": "rouge2", "rouge_l": "rougeL"}
TEXT_ONLY = tuple(m for m in METRICS if m not in ("meteor", "bertscore"))


def selection(select: Sequence[str] | None) -> frozenset[str]:
    """The metrics to compute: `select` (None = all); AScore brings in its inputs BLEU, HIT, CWR.
    An unknown name raises ValueError."""
    chosen = set(METRICS if select is None else select)
    unknown = sorted(chosen - set(METRICS))
    if unknown:
        raise ValueError(f"unknown metric(s) {', '.join(unknown)}; choose from {', '.join(METRICS)}")
    if "ascore" in chosen:
        chosen |= {"bleu", "hit", "cwr"}
    return frozenset(chosen)


def score_default(
    hyps: Sequence[str],
    items: Sequence[EvalItem],
    common: set[str],
    bertscore_model: str | None = None,
    with_meteor: bool = True,
    select: Sequence[str] | None = None,
) -> dict[str, float | None]:
    """The selected metrics (`select`, None = all), corrected mode; each is computed (and its
    library imported) only when selected. Needs `attach_terms` first for HIT."""
    want = selection(select)
    h_tok = [tokenize(h) for h in hyps]
    r_raw = [[expand(r) for r in it.references] for it in items]
    r_tok = [[tokenize(r) for r in rs] for rs in r_raw]
    out: dict[str, float | None] = {}
    if "bleu" in want:
        bleus = M.corpus_bleu_n(h_tok, r_tok)
        for n, b in enumerate(bleus, 1):
            out[f"bleu_{n}"] = b
        out["bleu"] = sum(bleus) / 4
    h_join = [" ".join(t) for t in h_tok]
    r_join = [[" ".join(t) for t in rs] for rs in r_tok]

    def lcs_and_cider() -> dict:
        done: dict[str, float | None] = {}
        for name, kind in _ROUGE.items():
            if name in want:
                done[name] = M.rouge_f1(h_tok, r_tok, kind)
        if "cider" in want:
            done["cider"] = M.cider(h_join, r_join)
        return done

    background = _background(lcs_and_cider, len(hyps))
    if "meteor" in want:
        out["meteor"] = _meteor_or_none(h_join, r_join, with_meteor)
    out.update(dict.fromkeys(m for m in (*_ROUGE, "cider") if m in want))
    if "sari" in want and all(it.source is not None for it in items):
        out.update(
            {
                f"sari{'' if k == 'sari' else '_' + k}": v
                for k, v in M.sari([tokenize(it.source or "") for it in items], h_tok, r_tok).items()
            }
        )
    if "fkgl" in want:
        out["fkgl"] = M.fkgl(list(hyps))
    if bertscore_model and "bertscore" in want:
        out["bertscore_f1"] = M.bertscore_f1(list(hyps), r_raw, bertscore_model)
    if "hit" in want:
        out["hit"] = M.hit(
            h_tok, [[(t, [tokenize(e) for e in exps]) for t, exps in it.terms] for it in items]
        )
    if "cwr" in want:
        out["cwr"] = M.cwr(h_tok, _is_common(common))
    if "ascore" in want:
        bleu, hit, cwr = out["bleu"], out["hit"], out["cwr"]
        out["ascore"] = None if hit is None or bleu is None or cwr is None else M.ascore(bleu, hit, cwr)
    out.update(background())  # fills the ROUGE / CIDEr slots kept in their places
    return out


def _meteor_or_none(hyps: list[str], refs: list[list[str]], enabled: bool) -> float | None:
    if not enabled:
        return None
    try:
        return M.meteor(hyps, refs)
    except M.MetricUnavailable as exc:
        import sys

        print(f"warning: {exc}", file=sys.stderr)
        return None


# ------------------------------------------------------------------ MedLane-compatible mode
@functools.lru_cache(maxsize=1)
def _bert_basic():
    from transformers.models.bert.tokenization_bert_legacy import BasicTokenizer

    return BasicTokenizer(do_lower_case=True)


def medlane_reference(raw: str) -> tuple[str, dict[str, str]]:
    """A reference as `obtain()` prepares it: lowercased, brackets removed, BERT basic tokens,
    every token equal to an annotated abbreviation replaced by its expansion."""
    raw = raw.lower()
    cudic: dict[str, str] = {}
    for pair in _MEDLANE_PAIR_RE.findall(raw):
        parts = re.split(r"[\[\]]", pair)
        cudic[parts[0]] = parts[1]
    words = _bert_basic().tokenize(_BRACKET_RE.sub("", raw))
    return " ".join(cudic.get(w, w) for w in words), cudic


def score_medlane(
    hyps: Sequence[str],
    items: Sequence[EvalItem],
    common: set[str],
    pro_words: set[str],
    with_meteor: bool = True,
    select: Sequence[str] | None = None,
) -> dict[str, float | None]:
    """The authors' metric set computed as `bleu_eval_new.get_score` does (the selected ones).

    nlg-eval's `compute_metrics` gets the first 4 prepared references of each record
    (their scorer writes `ref0..ref3.txt`), stripped, and the stripped outputs; HIT
    reads every reference line's annotations. BLEU, HIT and CWR are floored at 1e-4
    before AScore, as their code does. SARI, FKGL and BERTScore are not part of it.
    """
    want = selection(select)
    prepared = [[medlane_reference(r) for r in it.references] for it in items]
    refs = [[p[0].strip() for p in ps[:MEDLANE_REFERENCES]] for ps in prepared]
    dics = [[p[1] for p in ps] for ps in prepared]
    hyps = [h.strip() for h in hyps]
    out: dict[str, float | None] = {}
    if "bleu" in want:
        bleus = M.coco_bleu_n(hyps, refs)
        for n, b in enumerate(bleus, 1):
            out[f"bleu_{n}"] = b
    if "meteor" in want:
        out["meteor"] = _meteor_or_none(hyps, refs, with_meteor)
    if "rouge_l" in want:
        out["rouge_l"] = M.coco_rouge_l(hyps, refs)
    if "cider" in want:
        out["cider"] = M.cider(hyps, refs)
    tok_txt = [" ".join(word_tokenizer().tokenize(h)) for h in hyps]
    if "bleu" in want:
        out["bleu"] = max(sum(bleus) / 4, M.MEDLANE_FLOOR)
    if "hit" in want:
        out["hit"] = max(M.medlane_hit([t + " " for t in tok_txt], dics), M.MEDLANE_FLOOR)
    if "cwr" in want:
        from medsimp.training.lexicon import lemma, stopwords

        out["cwr"] = max(
            M.medlane_cwr(tok_txt, word_tokenizer().tokenize, lemma, common | stopwords(), pro_words),
            M.MEDLANE_FLOOR,
        )
    if "ascore" in want:
        bleu, hit, cwr = (out[k] for k in ("bleu", "hit", "cwr"))
        assert bleu is not None and hit is not None and cwr is not None  # floored above
        out["ascore"] = M.ascore(bleu, hit, cwr)
    return out


def length_buckets(items: Sequence[EvalItem], edges: Sequence[int]) -> list[str]:
    """Bucket label per item by source length in tokens: edges [0, 10, 20] -> '0-9', '10-19', '20+'."""
    labels = []
    for it in items:
        n = len(tokenize(it.source or ""))
        label = f"{edges[-1]}+"
        for lo, hi in zip(edges, edges[1:]):
            if lo <= n < hi:
                label = f"{lo}-{hi - 1}"
                break
        labels.append(label)
    return labels
