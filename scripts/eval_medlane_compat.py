"""Score copy-the-source on the shared MedLane test sample in both scoring modes.

    python scripts/eval_medlane_compat.py --data ../shared/data [--split test] [--json OUT]

Skips cleanly (exit 0) when the shared data folder is absent. MedLane text is
MIMIC-derived: only scores are printed, never sentences.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="../shared/data", help="shared data folder")
    parser.add_argument(
        "--split",
        choices=("validation", "test", "all"),
        default="test",
        help="the authors' half of the file (default test), or all records",
    )
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--no-meteor", action="store_true", help="skip METEOR (starts a JVM)")
    parser.add_argument("--json", help="write the scores here")
    args = parser.parse_args(argv)
    path = Path(args.data) / "medlane" / "test-sample.txt"
    if not path.exists():
        print(f"skip: {path} not found", file=sys.stderr)
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from medsimp.commands.evaluate import medlane_items
    from medsimp.config import load_params, params_dir, section
    from medsimp.outputs import canonical_json, write_json
    from medsimp.training.evaluation import Scorer

    params = load_params(args.params)
    cfg = dict(section(params, "evaluate"))
    cfg["meteor"] = not args.no_meteor and cfg.get("meteor", True)
    scorer = Scorer(cfg, section(params, "train"), section(params, "notes"), params_dir(args.params))
    split = None if args.split == "all" else args.split
    result: dict = {"file": path.name, "split": args.split, "system": "copy-the-source"}
    for mode in ("medlane", "default"):
        items = medlane_items(str(path), split, mode).items  # each mode reads the file its own way
        result[mode] = scorer.score([it.source or "" for it in items], items, mode)
        result[f"n_{mode}"] = len(items)
    print(canonical_json(result), end="")
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
