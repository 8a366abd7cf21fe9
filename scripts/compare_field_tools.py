"""medsimp's SARI, BLEU and ROUGE beside the field's reference tools on MultiCochrane's released outputs.

    python scripts/compare_field_tools.py --multicochrane DIR [--easse SRC] [--tolerance 1e-6]

DIR: a checkout (or `git archive` extract) of SebaJoe/MultiCochrane holding `data/sys_outputs/`,
e.g. `git -C MIRROR archive HEAD data/sys_outputs | tar -x -C /tmp/mc` then `--multicochrane /tmp/mc`.
SRC: a folder holding EASSE's `easse` package (an extract of feralvam/easse, 0.2.4), put on the path
when `easse` is not installed (it is not on PyPI; never vendored here).

Each system file is a JSON list of {input, output, gold}: `input` the complex English sentence,
`output` the system's simplification, `gold` the reference simplification. English: mT5
(`mt5/output_noisy_expand_en_wdois.json`) and GPT (`gpt/GPT_generations_full_English_plain.json`),
397 sentences. French: mT5 (`mt5/mt5_noisy_expand_base_fr_val_r{0,0.5}test_data.json`) and GPT
(`gpt/GPT_generations_full_French_plain.json`), 214 sentences whose `input` is the English
abstract sentence: SARI is cross-lingual there, which `medsimp evaluate` refuses unless asked
(`--allow-cross-lingual`); it is computed here, with that option, to check the arithmetic only.
Every text is whitespace-normalised as one line of a `--hyp` / `--ref` / `--src` file is
(GPT's outputs start with a blank line).

Printed: for every system, medsimp's value, the reference tool's, and |difference|:
`sari` (with `sari_keep/del/add`) and `sari_xu2016` against EASSE's `corpus_sari` /
`get_corpus_sari_operation_scores` (deletion F1 / precision), `bleu` against
`sacrebleu.corpus_bleu`, `rouge_1/2/l` (`--rouge-tokenizer rouge-score`) against rouge-score's
`RougeScorer` (default tokenizer, F1, mean over sentences); `sari_sentmean` (medsimp's SARI
before issue 29, NLTK tokens) has no field tool to equal and is printed alone. Exit 1 when a
difference exceeds the tolerance; exit 2 with a line saying what is missing when it cannot
compare: DIR, EASSE, or any of the system files (those found are still compared and printed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SYSTEMS: dict[str, list[tuple[str, str]]] = {
    "en": [
        ("mt5", "mt5/output_noisy_expand_en_wdois.json"),
        ("gpt", "gpt/GPT_generations_full_English_plain.json"),
    ],
    "fr": [
        ("mt5-r0", "mt5/mt5_noisy_expand_base_fr_val_r0test_data.json"),
        ("mt5-r0.5", "mt5/mt5_noisy_expand_base_fr_val_r0.5test_data.json"),
        ("gpt", "gpt/GPT_generations_full_French_plain.json"),
    ],
}
SOURCE_LANGUAGE = "en"  # MultiCochrane's complex side is the English abstract for every language


def line(text: str) -> str:
    """The text as one line of a medsimp input file: whitespace runs as one space, stripped."""
    return " ".join(str(text).split())


def load(path: Path) -> tuple[list[str], list[str], list[str]]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return (
        [line(r["input"]) for r in rows],
        [line(r["output"]) for r in rows],
        [line(r["gold"]) for r in rows],
    )


def medsimp_scores(src: list[str], hyp: list[str], ref: list[str], lang: str) -> tuple[dict, dict]:
    """medsimp's values (registry metrics, cross-lingual allowed) and, without the permission,
    which of them `evaluate` refuses and why."""
    from medsimp.metrics import Inputs, NotComputable, ScoringOptions, metrics
    from medsimp.metrics.base import check_needs

    names = ("sari", "sari_xu2016", "sari_sentmean", "bleu", "rouge_1", "rouge_2", "rouge_l")
    options = ScoringOptions(lang=lang, src_lang=SOURCE_LANGUAGE, rouge_tokenizer="rouge-score")
    allowed = Inputs(hyp, [[r] for r in ref], src, options=options.replace(allow_cross_lingual=True))
    plain = Inputs(hyp, [[r] for r in ref], src, options=options)
    out: dict[str, float] = {}
    refused: dict[str, str] = {}
    for name in names:
        metric = metrics()[name]
        out.update(metric.corpus(allowed))
        try:
            check_needs(metric, plain)
        except NotComputable as exc:
            refused[name] = str(exc)
    return out, refused


def field_scores(src: list[str], hyp: list[str], ref: list[str]) -> dict[str, float]:
    """EASSE 0.2.4, sacrebleu and rouge-score on the same lines."""
    import sacrebleu
    from easse.sari import corpus_sari, get_corpus_sari_operation_scores
    from rouge_score import rouge_scorer

    add, keep, dele = get_corpus_sari_operation_scores(src, hyp, [ref])
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    rouge = [scorer.score(r, h) for h, r in zip(hyp, ref, strict=True)]
    return {
        "sari": corpus_sari(src, hyp, [ref]),
        "sari_keep": keep,
        "sari_del": dele,
        "sari_add": add,
        "sari_xu2016": corpus_sari(src, hyp, [ref], use_f1_for_deletion=False),
        "bleu": sacrebleu.corpus_bleu(hyp, [ref]).score,
        **{
            ours: sum(s[theirs].fmeasure for s in rouge) / len(rouge)
            for ours, theirs in (("rouge_1", "rouge1"), ("rouge_2", "rouge2"), ("rouge_l", "rougeL"))
        },
    }


TOOL = {
    "sari": "easse corpus_sari",
    "sari_keep": "easse operation scores",
    "sari_del": "easse operation scores",
    "sari_add": "easse operation scores",
    "sari_xu2016": "easse corpus_sari del-precision",
    "sari_sentmean": "(no field tool)",
    "bleu": "sacrebleu corpus_bleu",
    "rouge_1": "rouge-score RougeScorer",
    "rouge_2": "rouge-score RougeScorer",
    "rouge_l": "rouge-score RougeScorer",
}


CANNOT_COMPARE = 2


def compare(folder: Path, tolerance: float) -> int:
    worst = 0.0
    missing: list[str] = []
    print(f"{'lang':<4} {'system':<8} {'metric':<13} {'medsimp':>11} {'field tool':>11} {'|diff|':>9}  tool")
    for lang, systems in SYSTEMS.items():
        for name, rel in systems:
            path = folder / "data" / "sys_outputs" / rel
            if not path.is_file():
                print(f"{lang:<4} {name:<8} missing {rel}: not compared")
                missing.append(rel)
                continue
            src, hyp, ref = load(path)
            ours, refused = medsimp_scores(src, hyp, ref, lang)
            theirs = field_scores(src, hyp, ref)
            for key in TOOL:
                value = ours[key]
                if key in theirs:
                    diff = abs(value - theirs[key])
                    worst = max(worst, diff)
                    print(
                        f"{lang:<4} {name:<8} {key:<13} {value:>11.6f} {theirs[key]:>11.6f} {diff:>9.1e}  {TOOL[key]}"
                    )
                else:
                    print(f"{lang:<4} {name:<8} {key:<13} {value:>11.6f} {'-':>11} {'-':>9}  {TOOL[key]}")
            print(f"{lang:<4} {name:<8} n={len(hyp)} sentences")
            if refused:
                print(
                    f"{lang:<4} {name:<8} `medsimp evaluate` refuses {', '.join(refused)} by default: "
                    f"{next(iter(refused.values()))}"
                )
    verdict = "ok" if worst <= tolerance else "FAIL"
    print(f"largest difference {worst:.3g} (tolerance {tolerance:g}): {verdict}")
    if worst > tolerance:
        return 1
    if missing:
        total = sum(len(v) for v in SYSTEMS.values())
        print(
            f"cannot compare {len(missing)} of {total} systems: missing {', '.join(missing)} under {folder}"
        )
        return CANNOT_COMPARE
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--multicochrane", required=True, help="a checkout of SebaJoe/MultiCochrane")
    parser.add_argument("--easse", help="a folder holding EASSE's `easse` package (when not installed)")
    parser.add_argument("--tolerance", type=float, default=1e-6)
    args = parser.parse_args(argv)
    folder = Path(args.multicochrane)
    if not (folder / "data" / "sys_outputs").is_dir():
        print(f"cannot compare: {folder} holds no data/sys_outputs (give a MultiCochrane checkout)")
        return CANNOT_COMPARE
    if args.easse:
        sys.path.insert(0, str(Path(args.easse).resolve()))
    try:
        import easse.sari  # noqa: F401
    except ImportError as exc:
        print(f"cannot compare: EASSE is not importable ({exc}); give --easse SRC (feralvam/easse 0.2.4)")
        return CANNOT_COMPARE
    return compare(folder, args.tolerance)


if __name__ == "__main__":
    sys.exit(main())
