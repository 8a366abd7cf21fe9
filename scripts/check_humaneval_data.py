"""Ingest the papers' released human evaluations with the kit's readers and check them
against what the papers state.

    python scripts/check_humaneval_data.py --data DIR [--json FILE]

DIR holds MultiCochrane's `data/eval_data` (or the repository root, or a folder with
`multicochrane/eval_data`): `<lang>/spreadsheets/**.xlsx` ratings and `<lang>/csvs/*.csv`
outputs (fetch github:SebaJoe/MultiCochrane and extract `data/eval_data` to /tmp; never
into the repository). Prints Table 5 (means per language and system, paper's scales:
lower factuality/fluency = better, simplicity 0 = ideal), per-annotator means, Randolph's
kappa where items have several annotators, and the statements of §5.3 checked on the
computed table. Skips cleanly (exit 0) when DIR has no such data; exit 2 on unreadable data.

Yang et al. (2024) released ratings: not located from this machine (see docs/humaneval.md);
`medsimp.humaneval.schema.recode_severity(v, "critical_first")` is the documented mapping
for their severity coding (Critical = 1).
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


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with MultiCochrane's eval_data")
    parser.add_argument("--json", default=None, help="also write every table here")
    args = parser.parse_args(argv)
    from medsimp.humaneval import released

    root = _find(Path(args.data))
    if root is None:
        print(f"check_humaneval_data: no MultiCochrane eval_data under {args.data}; skipped")
        return 0
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
                },
                indent=1,
                sort_keys=True,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
