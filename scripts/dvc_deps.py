"""Keep dvc.yaml's code deps equal to each stage command's import closure (medsimp.dvc_deps).

python scripts/dvc_deps.py --write   # rewrite the code lines of every stage's deps
python scripts/dvc_deps.py --check   # exit 1 naming the lines that differ (CI)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medsimp import dvc_deps

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    args = parser.parse_args()
    path = ROOT / "dvc.yaml"
    text = path.read_text(encoding="utf-8")
    new = dvc_deps.rewrite(text, dvc_deps.expected(ROOT))
    if args.write:
        if new != text:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(new, encoding="utf-8")
            tmp.replace(path)
        return 0
    if new != text:
        old_lines, new_lines = set(text.splitlines()), set(new.splitlines())
        stale = sorted({line.strip() for line in old_lines ^ new_lines})
        print(
            f"dvc.yaml code deps are stale ({len(stale)} lines differ, e.g. {stale[:3]}); "
            "run: python scripts/dvc_deps.py --write",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
