"""Ingest the papers' released human evaluations with the kit's readers and check them
against what the papers state.

    python scripts/check_humaneval_data.py --data DIR [--papers DIR] [--json FILE]

DIR holds MultiCochrane's `data/eval_data` (or the repository root, or a folder with
`multicochrane/eval_data`): `<lang>/spreadsheets/**.xlsx` ratings and `<lang>/csvs/*.csv`
outputs (fetch github:SebaJoe/MultiCochrane and extract `data/eval_data` to /tmp; never
into the repository). Prints Table 5 (means per language and system, paper's scales:
lower factuality/fluency = better, simplicity 0 = ideal), per-annotator means, Randolph's
kappa where items have several annotators, and the statements of §5.3 checked on the
computed table. Skips cleanly (exit 0) when DIR has no such data; exit 2 on unreadable data.

Yang et al. (2024): when DIR (or DIR/yang-human-eval) holds their release
(Ziyu-Yang/Human-Evaluation), prints Tables 1-3 and Krippendorff's alpha computed from the
files as released beside the paper's numbers (what `medsimp humaneval released --data DIR`
writes) and Table 1's readability rows with the project's counting; exit 1 when a cell that
docs/humaneval.md lists as reproduced no longer is. `--papers DIR` (../shared/papers) also
checks the default prompt set (selfcorrect-yang2024.yaml) against App. A.3/A.4 of
radiology-self-correction-yang.txt, word for word (markdown and line breaks folded).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _find(root: Path) -> Path | None:
    for cand in (
        root,
        root / "data" / "eval_data",
        root / "eval_data",
        root / "multicochrane" / "eval_data",
        root / "multicochrane" / "data" / "eval_data",
    ):
        if cand.is_dir() and any(cand.glob("*/spreadsheets")):
            return cand
    return None


# Table 1 cells where the release and the paper differ (docs/humaneval.md): everything else
# must agree.
YANG_KNOWN_DIFFERENCES = {
    "correctness/CoT_SC",  # 4.575 in the release, 4.625 in the paper
    "hallucination/CoT_SC",  # 4.725 vs 4.825
    "q2/original",  # 1.577 vs 1.579
    "q3_mse/CoT_BS",  # the paper swaps the CoT_BS and CoT_SC Q3 cells
    "q3_mse/CoT_SC",
    "q3_acc/CoT_BS",
    "q3_acc/CoT_SC",
}
PLACEHOLDERS = {
    "sentence": "<RADIOLOGY SENTENCE>",
    "simplification": "<SIMPLIFICATION>",
    "feedback": "<FEEDBACK>",
    "radiologist_feedback": "<PROCESSED FEEDBACK>",
    "patient_feedback": "<PROCESSED FEEDBACK>",
}


def _fold(text: str) -> str:
    return " ".join(text.replace("*", " ").replace("#", " ").split())


def check_prompts(paper_file: Path) -> list[str]:
    """Problems (empty = every template of the default set is the paper's text)."""
    from medsimp.selfcorrect.prompts import load_prompts

    paper = _fold(paper_file.read_text(encoding="utf-8"))
    # the refine prompt is broken across Fig. 5 in the text file: join its two halves
    head, cut = "Radiologist's feedback: <PROCESSED", "FEEDBACK> Patient's feedback:"
    if head in paper and cut in paper[paper.index(head) :]:
        i = paper.index(head) + len(head)
        paper = paper[:i] + " " + paper[paper.index(cut, i) :]
    prompts = load_prompts()
    problems = []
    for role in (
        "generator_plain",
        "generator_cot",
        "radiologist",
        "patient",
        "processor",
        "generator_revise",
    ):
        text = prompts.raw[role]
        for name, mark in PLACEHOLDERS.items():
            text = text.replace("{{ " + name + " }}", mark)
        if _fold(text) not in paper:
            problems.append(f"{role}: not the paper's text")
    return problems


def _yang_dir(root: Path) -> Path | None:
    from medsimp.humaneval import released

    for cand in (root, root / "yang-human-eval"):
        if cand.is_dir() and released.is_yang(cand):
            return cand
    return None


def check_yang(root: Path, out: dict) -> int:
    """Print Yang et al.'s tables beside the paper's; 1 when an unexpected cell differs."""
    import csv
    import statistics

    from medsimp.humaneval import released
    from medsimp.text.readability import text_scores

    data = released.load_yang(root)
    for p in data.problems:
        print(f"  problem: {p}", file=sys.stderr)
    t1, t2 = released.yang_table1(data), released.yang_table2(data)
    t3, alpha = released.yang_table3(data)
    print(f"Yang et al. (2024) release in {root}: {json.dumps(data.info, sort_keys=True)}")
    print("\nTable 1 (computed | paper)")
    print(f"{'metric':14}" + "".join(f"{c:>18}" for c in ("original",) + released.YANG_SYSTEMS))
    for metric in released.YANG_PAPER_TABLE1:
        cells = [r for r in t1 if r["metric"] == metric]
        print(f"{metric:14}" + "".join(f"{_fmt(r['computed']):>9}|{_fmt(r['paper']):<8}" for r in cells))
    with open(root / released.YANG_FILES[0], newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))[1:]
    print("Readability, mean over the 40 texts of medsimp.text.readability.text_scores (computed | paper)")
    paper_read = {
        "fkgl": (12.344, 8.813, 7.010, 7.178, 8.548),
        "gunning_fog": (19.011, 14.632, 11.942, 10.990, 12.371),
        "ari": (9.940, 6.463, 4.941, 4.404, 6.006),
    }
    readability = {}
    for metric, paper in paper_read.items():
        got = [statistics.mean(text_scores(" ".join(r[k].split()))[metric] for r in rows) for k in range(5)]
        readability[metric] = got
        print(f"{metric:14}" + "".join(f"{g:>9.3f}|{p:<8}" for g, p in zip(got, paper)))
    print("\nTable 2 (pooled over the original and the four systems; computed | paper)")
    for r in t2:
        if r["condition"] == "all":
            print(
                f"  {r['confidence']:11} n={r['n']:<4} MSE {_fmt(r['mse'])}|{_fmt(r['paper_mse'])}  ACC {r['accuracy']}|{r['paper_accuracy']}"
            )
    print("\nTable 3 (sentences where the system holds the most votes; computed | paper)")
    for r in t3:
        print(f"  {r['preference']:6}{r['system']:10}{r['majority_sentences']:>4}|{r['paper']}")
    print(f"\nKrippendorff's alpha (MASI): {alpha}")
    differ = {f"{r['metric']}/{r['condition']}" for r in t1 if r["agrees"] is False}
    t3_bad = [r for r in t3 if r["majority_sentences"] != r["paper"]]
    alpha_bad = [k for k in ("most", "least") if alpha[f"alpha_masi_{k}"] != alpha[f"paper_alpha_{k}"]]
    out["yang"] = {
        "table1": t1,
        "table2": t2,
        "table3": t3,
        "alpha": alpha,
        "readability": readability,
        "info": data.info,
    }
    unexpected = sorted(differ - YANG_KNOWN_DIFFERENCES)
    if unexpected or t3_bad or alpha_bad:
        print(
            f"check_humaneval_data: unexpected differences from the paper: {unexpected} {t3_bad} {alpha_bad}",
            file=sys.stderr,
        )
        return 1
    print(
        f"Table 1: {sum(r['agrees'] is True for r in t1)} cells agree; the known differences: {sorted(differ)}"
    )
    return 0


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", required=True, help="folder with MultiCochrane's eval_data and/or yang-human-eval"
    )
    parser.add_argument("--papers", default=None, help="folder with radiology-self-correction-yang.txt")
    parser.add_argument("--json", default=None, help="also write every table here")
    args = parser.parse_args(argv)
    from medsimp.humaneval import released

    status, out = 0, {}
    if args.papers:
        paper = Path(args.papers) / "radiology-self-correction-yang.txt"
        if paper.is_file():
            bad = check_prompts(paper)
            print(f"prompt set yang2024 vs {paper.name}: " + ("verbatim" if not bad else "; ".join(bad)))
            status = max(status, 1 if bad else 0)
        else:
            print(f"check_humaneval_data: no {paper}; prompt check skipped")
    yang = _yang_dir(Path(args.data))
    if yang is not None:
        status = max(status, check_yang(yang, out))
    root = _find(Path(args.data))
    if root is None:
        print(f"check_humaneval_data: no MultiCochrane eval_data under {args.data}; skipped")
        if args.json and out:
            Path(args.json).write_text(json.dumps(out, indent=1, sort_keys=True, default=str))
        return status
    ratings, problems, info = released.load_multicochrane(root)
    if problems:
        print(f"check_humaneval_data: {len(problems)} problem(s) in {root}:", file=sys.stderr)
        for p in problems[:50]:
            print(f"  {p}", file=sys.stderr)
    if not ratings:
        print("check_humaneval_data: no ratings read", file=sys.stderr)
        return 2
    table = released.means(ratings)
    print(f"MultiCochrane released ratings: {len(ratings)} ratings from {root}")
    for dup in info["duplicate_workbooks"]:
        print(f"  skipped duplicate workbook {dup}")
    print(
        "\nTable 5 (computed; mean over all annotators' ratings; lower = better for "
        "factuality/fluency, 0 = ideal simplicity)"
    )
    print(f"{'lang':5}{'system':14}{'ann':>4}{'factuality':>12}{'fluency':>10}{'simplicity':>12}{'n':>6}")
    for r in table:
        print(
            f"{r['language']:5}{r['system']:14}{r['annotators']:>4}{_fmt(r['factuality']):>12}"
            f"{_fmt(r['fluency']):>10}{_fmt(r['simplicity']):>12}{r['factuality_n']:>6}"
        )
    per_annotator: dict[tuple, list[int]] = defaultdict(list)
    for x in ratings:
        per_annotator[(x.language, x.system, x.annotator, x.scale)].append(x.value)
    multi = {
        (lang, s)
        for (lang, s, _a, _q) in per_annotator
        if len({a for (l2, s2, a, _q) in per_annotator if (l2, s2) == (lang, s)}) > 1
    }
    if multi:
        print("\nPer annotator (systems with several annotators)")
        for (lang, system, annotator, scale), v in sorted(per_annotator.items()):
            if (lang, system) in multi:
                print(f"  {lang} {system:13} {annotator:11} {scale:11} {sum(v) / len(v):.3f} (n={len(v)})")
    agreement = released.agreement(ratings)
    print("\nAgreement (Randolph's free-marginal kappa over (system, item) units with >= 2 raters)")
    for r in agreement:
        if r["units"]:
            print(f"  {r['language']} {r['scale']:11} kappa {_fmt(r['randolph_kappa'])} ({r['units']} units)")
    checks = released.section_5_3_checks(table)
    held = sum(c["holds"] for c in checks)
    print(f"\n§5.3 statements on the computed table: {held}/{len(checks)} hold")
    for c in checks:
        nums = {k: v for k, v in c.items() if k not in ("claim", "expected", "holds")}
        print(
            f"  [{'ok' if c['holds'] else 'NO'}] {c['claim']} (paper: {'yes' if c['expected'] else 'no'}) "
            + " ".join(f"{k}={_fmt(v)}" for k, v in nums.items())
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "table5": table,
                    "agreement": agreement,
                    "checks": checks,
                    "info": info,
                    "problems": problems,
                    **out,
                },
                indent=1,
                sort_keys=True,
                default=str,
            )
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
