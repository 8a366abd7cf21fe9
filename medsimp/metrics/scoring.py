"""Score system outputs in two modes: `default` (corrected) and `medlane` (the authors' scorer).

`default`: every selected metric of the registry (`medsimp.metrics`) on one `Inputs`:
references with `abbr[full]` replaced by the full form, each metric's own tokenization (named
in the signature; lowercased NLTK Treebank tokens unless it says otherwise), HIT per sentence
over the source's annotated terms with whole-token matching. `medlane`: reproduces
`bleu_eval_new.py` of machinelearning4health/MedLane (see docs/metrics.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from medsimp.metrics import Inputs, NotComputable, metrics, selection
from medsimp.metrics.base import (  # tokenize: re-exported for the scorers that import it from here
    MetricUnavailable,
    check_needs,
    cross_lingual,
    output_language,
    source_language,
    tokenize,
)
from medsimp.metrics.bleu import coco_bleu_n
from medsimp.metrics.cider import cider
from medsimp.metrics.medlane import MEDLANE_FLOOR, ascore, contains, medlane_cwr, medlane_hit
from medsimp.metrics.meteor import coco_rouge_l
from medsimp.text.lemmas import lemmatize as lemma
from medsimp.text.medlane_refs import DEFAULT_PREPARATION, reference_tokens
from medsimp.text.stopwords import stop_words
from medsimp.text.words import word_tokenizer

_TERM_RE = re.compile(r"([^\s\[\]]+)\[([^\[\]]*)\]")
MEDLANE_REFERENCES = 4  # bleu_eval_new.py writes ref0..ref3.txt for nlg-eval


@dataclass
class EvalItem:
    """One evaluation sentence: its source (may be None) and raw references (may hold `abbr[full]`)."""

    source: str | None
    references: list[str]
    terms: list[tuple[str, list[str]]] = field(default_factory=list)  # filled by `attach_terms`


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
                    if src is None or contains(src, tokenize(abbr)):
                        slot = found.setdefault(abbr, [])
                        if full not in slot:
                            slot.append(full)
        elif dictionary and src is not None:
            for i in range(len(src)):
                if src[i] in dictionary and src[i] not in found:
                    found[src[i]] = list(dictionary[src[i]])
        it.terms = sorted(found.items())


def inputs(
    hyps: Sequence[str], items: Sequence[EvalItem], common: set[str], options: dict | None = None
) -> Inputs:
    """The prepared data every default-mode metric reads (`attach_terms` first for HIT)."""
    sources = None if any(it.source is None for it in items) else [str(it.source) for it in items]
    return Inputs(
        list(hyps),
        [[expand(r) for r in it.references] for it in items],
        sources,
        [list(it.terms) for it in items],
        common,
        dict(options or {}),
    )


def score_default(
    hyps: Sequence[str],
    items: Sequence[EvalItem],
    common: set[str],
    bertscore_model: str | None = None,
    with_meteor: bool = True,
    select: Sequence[str] | None = None,
    options: dict | None = None,
    why: dict[str, str] | None = None,
    flagged: dict[str, str] | None = None,
) -> dict[str, float | None]:
    """The selected metrics (`select`, None = all listed for `options["lang"]`), corrected mode,
    in table order; each is computed (and its library imported) only when selected. Needs
    `attach_terms` first for HIT. A metric that cannot be computed reports null, with its reason
    in `why` (or on stderr); one computed across languages on request gets a note in `flagged`."""
    want = selection(select, str((options or {}).get("lang") or "en"))
    data = inputs(
        hyps, items, common, {**(options or {}), "bertscore_model": bertscore_model, "meteor": with_meteor}
    )
    out: dict[str, float | None] = {}
    for name, metric in metrics().items():
        if name not in want:
            continue
        try:
            check_needs(metric, data)
            out.update(metric.corpus(data, out))
            if cross_lingual(metric, data) and flagged is not None:
                flagged[name] = (
                    f"computed across languages on request ({source_language(data)} sources, "
                    f"{output_language(data)} outputs): not comparable with a same-language {name}"
                )
        except NotComputable as exc:
            out.update(dict.fromkeys(metric.keys))
            if why is None:
                import sys

                print(f"warning: {name} not computed (null): {exc}", file=sys.stderr)
            else:
                why[name] = str(exc)
    return out


# ------------------------------------------------------------------ MedLane-compatible mode
def medlane_reference(raw: str, preparation: str = DEFAULT_PREPARATION) -> tuple[str, dict[str, str]]:
    """A reference as `obtain()` prepares it: lowercased, brackets removed, tokens (`released`:
    the authors' released run, NLTK 2021; `bleu_eval_new`: BERT basic; see
    `medsimp.text.medlane_refs`), every token equal to an annotated abbreviation replaced by its
    expansion."""
    words, cudic = reference_tokens(raw, preparation)
    return " ".join(words), cudic


def score_medlane(
    hyps: Sequence[str],
    items: Sequence[EvalItem],
    common: set[str],
    pro_words: set[str],
    with_meteor: bool = True,
    select: Sequence[str] | None = None,
    preparation: str = DEFAULT_PREPARATION,
) -> dict[str, float | None]:
    """The authors' metric set computed as `bleu_eval_new.get_score` does (the selected ones).

    nlg-eval's `compute_metrics` gets the first 4 prepared references of each record
    (their scorer writes `ref0..ref3.txt`), stripped, and the stripped outputs; HIT
    reads every reference line's annotations. BLEU, HIT and CWR are floored at 1e-4
    before AScore, as their code does. SARI, FKGL and BERTScore are not part of it.
    """
    want = selection(select)
    prepared = [[medlane_reference(r, preparation) for r in it.references] for it in items]
    refs = [[p[0].strip() for p in ps[:MEDLANE_REFERENCES]] for ps in prepared]
    dics = [[p[1] for p in ps] for ps in prepared]
    hyps = [h.strip() for h in hyps]
    out: dict[str, float | None] = {}
    if "medlane_bleu" in want:
        bleus = coco_bleu_n(hyps, refs)
        for n, b in enumerate(bleus, 1):
            out[f"bleu_{n}"] = b
    if "meteor" in want:
        out["meteor"] = _meteor_or_none(hyps, refs, with_meteor)
    if "rouge_l" in want:
        out["rouge_l"] = coco_rouge_l(hyps, refs)
    if "cider" in want:
        out["cider"] = cider(hyps, refs)
    tok_txt = [" ".join(word_tokenizer().tokenize(h)) for h in hyps]
    if "medlane_bleu" in want:
        out["medlane_bleu"] = max(sum(bleus) / 4, MEDLANE_FLOOR)
    if "hit" in want:
        out["hit"] = max(medlane_hit([t + " " for t in tok_txt], dics), MEDLANE_FLOOR)
    if "cwr" in want:
        out["cwr"] = max(
            medlane_cwr(tok_txt, word_tokenizer().tokenize, lemma, common | stop_words("en"), pro_words),
            MEDLANE_FLOOR,
        )
    if "ascore" in want:
        bleu, hit, cwr = (out[k] for k in ("medlane_bleu", "hit", "cwr"))
        assert bleu is not None and hit is not None and cwr is not None  # floored above
        out["ascore"] = ascore(bleu, hit, cwr)
    return out


# The metrics MedLane compat mode computes (the authors' `get_score`).
MEDLANE_METRICS = ("medlane_bleu", "meteor", "rouge_l", "cider", "hit", "cwr", "ascore")


def _meteor_or_none(hyps: list[str], refs: list[list[str]], enabled: bool) -> float | None:
    from medsimp.metrics.meteor import meteor

    if not enabled:
        return None
    try:
        return meteor(hyps, refs)
    except MetricUnavailable as exc:
        import sys

        print(f"warning: {exc}", file=sys.stderr)
        return None


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
