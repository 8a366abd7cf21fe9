"""Score system outputs in two modes, `default` (corrected) and `medlane` (the authors' scorer),
in one loop over the selected metrics of the registry (`medsimp.metrics`).

`default`: each metric's `corpus` on one `Inputs`: references with `abbr[full]` replaced by the
full form, each metric's own tokenization (named in the signature; lowercased NLTK Treebank
tokens unless it says otherwise), HIT per sentence over the source's annotated terms with
whole-token matching. `medlane`: each metric's `medlane` on one `MedlaneInputs`, which
reproduces `bleu_eval_new.py` of machinelearning4health/MedLane (see docs/metrics.md); a metric
declares that mode with its `medlane_label`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from medsimp.metrics import Inputs, NotComputable, metrics, selection
from medsimp.metrics.base import (  # tokenize: re-exported for the scorers that import it from here
    MEDLANE_REFERENCES,
    MedlaneInputs,
    ScoringOptions,
    check_needs,
    cross_lingual,
    output_language,
    source_language,
    tokenize,
)
from medsimp.metrics.medlane import contains
from medsimp.params_choices import ScoringMode
from medsimp.text.medlane_refs import (  # EvalItem, expand, annotated_terms: for the scorers' callers
    DEFAULT_PREPARATION,
    EvalItem,
    annotated_terms,
    expand,
    reference_tokens,
)


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
    hyps: Sequence[str], items: Sequence[EvalItem], common: set[str], options: ScoringOptions | None = None
) -> Inputs:
    """The prepared data every default-mode metric reads (`attach_terms` first for HIT)."""
    sources = None if any(it.source is None for it in items) else [str(it.source) for it in items]
    return Inputs(
        list(hyps),
        [[expand(r) for r in it.references] for it in items],
        sources,
        [list(it.terms) for it in items],
        common,
        options or ScoringOptions(),
    )


def score(
    mode: ScoringMode,
    hyps: Sequence[str],
    items: Sequence[EvalItem],
    common: set[str],
    select: Sequence[str] | None = None,
    options: ScoringOptions | None = None,
    pro_words: set[str] | frozenset[str] = frozenset(),
    measures: bool = False,
    why: dict[str, str] | None = None,
    flagged: dict[str, str] | None = None,
) -> dict[str, float | None]:
    """The selected metrics (`select`, None = every metric listed for `options.lang`; the
    measures by name, or all of them with `measures`) in `mode`, in table order; each is computed
    (and its library imported) only when selected. `default`: `Metric.corpus` on `inputs`
    (`attach_terms` first for HIT). `medlane`: `Metric.medlane` on `medlane_inputs` for the
    metrics that have that mode (`pro_words`: CWR's dictionary terms), the measures as in
    default mode, the rest not at all. A metric that cannot be computed reports null, with its
    reason in `why` (or on stderr); one computed across languages on request gets a note in
    `flagged`. `options`: the settings the metrics read (`ScoringOptions`)."""
    options = options or ScoringOptions()
    want = selection(select, options.lang or "en", measures)
    chosen = [
        m
        for n, m in metrics().items()
        if n in want and (mode == "default" or m.medlane_label is not None or m.measure)
    ]
    data = inputs(hyps, items, common, options)
    compat = medlane_inputs(hyps, items, common, pro_words, options) if mode == "medlane" else None
    out: dict[str, float | None] = {}
    for metric in chosen:
        try:
            if compat is not None and metric.medlane_label is not None:
                out.update(metric.medlane(compat, out))
                continue
            check_needs(metric, data)
            out.update(metric.corpus(data, out))
            if cross_lingual(metric, data) and flagged is not None:
                flagged[metric.name] = (
                    f"computed across languages on request ({source_language(data)} sources, "
                    f"{output_language(data)} outputs): not comparable with a same-language {metric.name}"
                )
        except NotComputable as exc:
            out.update(dict.fromkeys(metric.keys))
            if why is None:
                print(f"warning: {metric.name} not computed (null): {exc}", file=sys.stderr)
            else:
                why[metric.name] = str(exc)
    return out


# ------------------------------------------------------------------ MedLane-compatible mode
def medlane_reference(raw: str, preparation: str = DEFAULT_PREPARATION) -> tuple[str, dict[str, str]]:
    """A reference as `obtain()` prepares it: lowercased, brackets removed, tokens (`released`:
    the authors' released run, NLTK 2021; `bleu_eval_new`: BERT basic; see
    `medsimp.text.medlane_refs`), every token equal to an annotated abbreviation replaced by its
    expansion."""
    words, cudic = reference_tokens(raw, preparation)
    return " ".join(words), cudic


def medlane_inputs(
    hyps: Sequence[str], items: Sequence[EvalItem], common: set[str], pro_words: set[str] | frozenset[str],
    options: ScoringOptions,
) -> MedlaneInputs:  # fmt: skip
    """The data the authors' `bleu_eval_new.get_score` scores: nlg-eval gets the first 4
    prepared references of each record (their scorer writes `ref0..ref3.txt`), stripped, and the
    stripped outputs; HIT reads every reference line's annotations (`options`:
    `medlane_references`, the preparation; `meteor`)."""
    preparation = options.medlane_references or DEFAULT_PREPARATION
    prepared = [[medlane_reference(r, preparation) for r in it.references] for it in items]
    return MedlaneInputs(
        [h.strip() for h in hyps],
        [[p[0].strip() for p in ps[:MEDLANE_REFERENCES]] for ps in prepared],
        [[p[1] for p in ps] for ps in prepared],
        set(common),
        set(pro_words),
        options.meteor,
    )


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
