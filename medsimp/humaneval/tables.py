"""The papers' tables from validated answers: means (Table 1), severity MSE/accuracy by
confidence (Table 2), majority preference votes (Table 3), agreement and metric correlations."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from medsimp.humaneval.agreement import alpha_masi, randolph_kappa
from medsimp.humaneval.ingest import Answer
from medsimp.humaneval.schema import LOWER_IS_BETTER, MULTICOCHRANE


def _condition(a: Answer) -> str:
    return a.system or a.stage


def table1(answers: list[Answer]) -> list[dict[str, Any]]:
    """Mean of every scale question per form and system ("original" for the original alone)."""
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for a in answers:
        if isinstance(a.value, int):
            groups[(a.form, a.question, _condition(a))].append(a.value)
    return [
        {"form": f, "question": q, "system": s, "n": len(v), "mean": round(sum(v) / len(v), 4)}
        for (f, q, s), v in sorted(groups.items())
    ]


def _int(value: int | frozenset | str) -> int:
    """A scale answer (ingest stores scale answers as int)."""
    if isinstance(value, frozenset):
        raise TypeError("a set-valued answer where a scale answer was expected")
    return int(value)


def _set(value: int | frozenset | str) -> frozenset:
    """A choice answer (ingest stores multiple-choice answers as frozenset)."""
    if not isinstance(value, frozenset):
        raise TypeError("a scale answer where a set-valued answer was expected")
    return value


def reference_severity(answers: list[Answer]) -> dict[str, int]:
    """Expert severity per item: the (low) median of the experts' answers."""
    by_item: dict[str, list[int]] = defaultdict(list)
    for a in answers:
        if a.form == "expert" and a.question == "severity":
            by_item[a.item_id].append(_int(a.value))
    return {i: sorted(v)[(len(v) - 1) // 2] for i, v in sorted(by_item.items())}


def table2(answers: list[Answer]) -> list[dict[str, Any]]:
    """Laypeople's severity guess (Q3) vs the expert's: MSE and accuracy per condition
    (original / each system), split by their confidence (Q2) and overall ("all")."""
    ref = reference_severity(answers)
    lay: dict[tuple[str, str, str], dict[str, int]] = defaultdict(dict)
    for a in answers:
        if a.form == "layperson" and a.question in ("q2", "q3"):
            lay[(a.rater_id, a.item_id, _condition(a))][a.question] = _int(a.value)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for (_, item, cond), qs in sorted(lay.items()):
        if item in ref and "q3" in qs and "q2" in qs:
            err = qs["q3"] - ref[item]
            groups[(cond, str(qs["q2"]))].append(err)
            groups[(cond, "all")].append(err)
    return [
        {
            "system": c,
            "confidence": k,
            "n": len(e),
            "mse": round(sum(x * x for x in e) / len(e), 4),
            "accuracy": round(sum(x == 0 for x in e) / len(e), 4),
        }
        for (c, k), e in sorted(groups.items())
    ]


def table3(answers: list[Answer], systems: list[str]) -> list[dict[str, Any]]:
    """Per system: votes as most (Q5) / least (Q6) preferred, and the number of items where
    it holds the majority (most votes; tied systems each count)."""
    votes: dict[str, dict[str, Counter]] = {"q5": defaultdict(Counter), "q6": defaultdict(Counter)}
    for a in answers:
        if a.form == "layperson" and a.question in votes:
            votes[a.question][a.item_id].update(_set(a.value))
    rows = []
    for s in systems:
        row: dict[str, Any] = {"system": s}
        for q, name in (("q5", "most"), ("q6", "least")):
            per_item = votes[q]
            row[f"{name}_votes"] = sum(c[s] for c in per_item.values())
            row[f"{name}_majority_items"] = sum(
                1 for c in per_item.values() if c[s] and c[s] == max(c.values())
            )
        rows.append(row)
    return rows


def agreement(answers: list[Answer]) -> dict[str, Any]:
    """Alpha (MASI) for Q5/Q6, Randolph's kappa for each MultiCochrane scale."""
    out: dict[str, Any] = {}
    for qid in ("q5", "q6"):
        data = [
            (a.rater_id, a.item_id, a.value) for a in answers if a.form == "layperson" and a.question == qid
        ]
        out[f"alpha_masi_{qid}"] = _round(alpha_masi(data))
    for q in MULTICOCHRANE:
        units: dict[tuple[str, str], list[int]] = defaultdict(list)
        for a in answers:
            if a.form == "multicochrane" and a.question == q.qid:
                units[(a.item_id, a.system)].append(_int(a.value))
        out[f"randolph_kappa_{q.qid}"] = _round(randolph_kappa(units, len(q.options)))
    return out


def correlations(
    answers: list[Answer], metrics: dict[tuple[str, str], dict[str, float]]
) -> list[dict[str, Any]]:
    """Pearson, Spearman and Kendall (tau-b, PLABA's) correlation of each automatic metric with each human scale
    (mean over raters per item and system), for the expert and MultiCochrane forms.
    `better` says which way the scale improves: MultiCochrane factuality and fluency are
    lower-is-better (App. A), simplicity is best at 0, the expert scales higher-is-better."""
    from scipy.stats import kendalltau, pearsonr, spearmanr

    human: dict[tuple[str, str], dict[tuple[str, str], list[int]]] = defaultdict(lambda: defaultdict(list))
    for a in answers:
        if a.form in ("expert", "multicochrane") and a.system and isinstance(a.value, int):
            human[(a.form, a.question)][(a.item_id, a.system)].append(a.value)
    names = sorted({m for v in metrics.values() for m in v})
    rows = []
    for (form, question), scores in sorted(human.items()):
        for metric in names:
            keys = sorted(k for k in scores if k in metrics and metric in metrics[k])
            xs = [metrics[k][metric] for k in keys]
            ys = [sum(scores[k]) / len(scores[k]) for k in keys]
            ok = len(keys) >= 3 and len(set(xs)) > 1 and len(set(ys)) > 1
            better = (
                "lower"
                if form == "multicochrane" and question in LOWER_IS_BETTER
                else "zero"
                if form == "multicochrane" and question == "simplicity"
                else "higher"
            )
            rows.append(
                {
                    "form": form,
                    "question": question,
                    "better": better,
                    "metric": metric,
                    "n": len(keys),
                    "pearson": _round(float(pearsonr(xs, ys)[0])) if ok else None,
                    "spearman": _round(float(spearmanr(xs, ys)[0])) if ok else None,
                    "kendall_tau": _round(float(kendalltau(xs, ys)[0])) if ok else None,
                }
            )
    return rows


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)
