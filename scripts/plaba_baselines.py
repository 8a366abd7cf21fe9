"""PLABA (Attal et al. 2023) at abstract level: Table 3's "abstract as candidate" row and the
paper's significance tests.

Usage: python scripts/plaba_baselines.py --data DIR [--bertscore-model minilm|PATH] [--json FILE]

DIR holds `plaba/dev.json` (PLABA's `data.json` layout; `../shared/data`), or is the file
itself. Exit 0 with a note when it is absent.

Unit: each PubMed abstract is the source document ("Experimental setup"); its sentences in
PLABA's numbering are joined; each adaptation (translationK) is its sentences joined in the
same order (a missing or empty number is a deletion) and is one reference. Table 3 scores
the abstracts as candidates against the adaptations as references (the paper: "since BLEU-4
can only match multiple references to a single candidate"):
- BLEU-4: corpus BLEU-4 over the abstracts, multi-reference, unsmoothed, lowercased NLTK
  tokens (`medsimp.metrics.bleu.corpus_bleu_n`);
- BERTScore-F1: best reference, no idf, no rescaling (`medsimp.metrics.bertscore`), with the
  packaged MiniLM-L6 by default (the paper does not name its model; long abstracts are
  truncated at the model's 512 tokens);
- FKGL (the readability section): mean FKGL of the abstracts and of the adaptations
  (`medsimp.text.readability.document_scores`, sentences as split: PLABA's numbering for
  abstracts, the toolkit's splitter for adaptations), and Kendall's tau as the paper's
  significance test that adaptations have lower FKGL (`kendall_group_test`).
Table 6 (outputs against the source) is the same computation with a system's outputs as
candidates and the abstracts as the single reference: `table6(outputs, abstracts)`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def read_abstracts(path: Path) -> list[dict[str, Any]]:
    """[{question_id, pmid, sentences, source, references}] from PLABA's data.json layout."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for qid, entry in sorted(data.items()):
        for pmid, doc in sorted(entry.items()):
            if pmid == "question" or not isinstance(doc, dict):
                continue
            numbers = sorted(doc.get("abstract", {}), key=int)
            sentences = [doc["abstract"][n] for n in numbers]
            refs = []
            for key in sorted(k for k in doc if k.startswith("translation")):
                parts = [str(doc[key].get(n) or "").strip() for n in numbers]
                text = " ".join(p for p in parts if p)
                if text:
                    refs.append(text)
            if sentences and refs:
                out.append(
                    {
                        "question_id": qid,
                        "pmid": pmid,
                        "sentences": sentences,
                        "source": " ".join(sentences),
                        "references": refs,
                    }
                )
    return out


def bleu4(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU-4, multi-reference, unsmoothed, on evaluate's tokens."""
    from medsimp.metrics.bleu import corpus_bleu_n
    from medsimp.metrics.scoring import tokenize

    return corpus_bleu_n([tokenize(c) for c in candidates], [[tokenize(r) for r in rs] for rs in references])[
        3
    ]


def fkgl_of(text: str) -> float:
    from medsimp.text.readability import text_scores

    return float(text_scores(text)["fkgl"])


def kendall_group_test(first: Sequence[float], second: Sequence[float]) -> tuple[float, float]:
    """Kendall's tau-b between group membership (0 = `first`, 1 = `second`) and the values,
    with scipy's two-sided p: the paper's use of Kendall's tau as a significance test that
    one group's FKGL differs (tau < 0: `second` is lower). Our reading; the paper gives only
    "p < 0.0001, Kendall's tau"."""
    from scipy.stats import kendalltau

    labels = [0] * len(first) + [1] * len(second)
    res = kendalltau(labels, [*first, *second])
    return float(res.statistic), float(res.pvalue)


def wilcoxon_across_metrics(
    a: Mapping[str, Sequence[float]],
    b: Mapping[str, Sequence[float]],
    lower_is_better: Sequence[str] = ("fkgl",),
) -> tuple[float, int]:
    """Two-sided Wilcoxon signed-rank p of system b against system a over the paired
    per-document scores of every metric the two share (Tables 4-5: "across all metrics"),
    signs flipped for lower-is-better metrics so a positive difference always means b is
    better; zero differences dropped (scipy's default). Returns (p, number of pairs)."""
    from scipy.stats import wilcoxon

    diffs: list[float] = []
    for metric in sorted(set(a) & set(b)):
        if len(a[metric]) != len(b[metric]):
            raise ValueError(f"{metric}: {len(a[metric])} vs {len(b[metric])} paired scores")
        sign = -1.0 if metric in lower_is_better else 1.0
        diffs.extend(sign * (y - x) for x, y in zip(a[metric], b[metric]))
    if not any(diffs):
        return 1.0, len(diffs)
    return float(wilcoxon(diffs).pvalue), len(diffs)


def table3(abstracts: list[dict[str, Any]], bertscore_model: str | None) -> dict[str, Any]:
    """Abstracts as candidates, adaptations as references."""
    from medsimp.text.readability import document_scores

    cands = [a["source"] for a in abstracts]
    refs = [a["references"] for a in abstracts]
    out: dict[str, Any] = {"abstracts": len(abstracts), "references": sum(len(r) for r in refs)}
    out["bleu_4"] = round(bleu4(cands, refs), 4)
    if bertscore_model:
        from medsimp.metrics.bertscore import bertscore_f1
        from medsimp.resources import resolve_model

        out["bertscore_f1"] = round(bertscore_f1(cands, refs, resolve_model(bertscore_model)), 4)
        out["bertscore_model"] = bertscore_model
    fk_abs = [float(document_scores(a["sentences"], "en", ["en"])["fkgl"]) for a in abstracts]
    fk_ad = [fkgl_of(r) for a in abstracts for r in a["references"]]
    out["fkgl_abstracts"] = round(sum(fk_abs) / len(fk_abs), 3)
    out["fkgl_adaptations"] = round(sum(fk_ad) / len(fk_ad), 3)
    tau, p = kendall_group_test(fk_abs, fk_ad)
    out["kendall_tau_fkgl"] = round(tau, 4)
    out["kendall_p_fkgl"] = float(f"{p:.3g}")
    return out


def table6(outputs: Sequence[str], abstracts: list[dict[str, Any]]) -> dict[str, float]:
    """A system's outputs (one per abstract) against the source abstracts (Table 6)."""
    return {"bleu_4": round(bleu4(outputs, [[a["source"]] for a in abstracts]), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="../shared/data, or a PLABA data.json")
    ap.add_argument(
        "--bertscore-model", default="minilm", help="minilm (packaged), a local path, or '' to skip"
    )
    ap.add_argument("--json", help="write the numbers here too")
    args = ap.parse_args(argv)
    path = Path(args.data)
    if path.is_dir():
        path = path / "plaba" / "dev.json"
    if not path.is_file():
        print(f"{path}: not found; nothing to score")
        return 0
    abstracts = read_abstracts(path)
    row = table3(abstracts, args.bertscore_model or None)
    print("Table 3 (abstracts as candidates, adaptations as references), abstract level:")
    for k, v in row.items():
        print(f"  {k}: {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(row, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
