"""Parse the real MedLane sample files with `pipelines.sources.medlane` and report counts.

Usage: python scripts/check_medlane.py --data ../shared/data
Skips cleanly (exit 0) when the data folder is absent. Prints counts only, never text.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.sources.medlane import read_medlane_eval, read_medlane_train  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data", help="shared data folder")
    args = parser.parse_args()
    folder = Path(args.data) / "medlane"
    if not folder.is_dir():
        print(f"skip: {folder} not found")
        return 0
    report: dict[str, dict] = {}
    for path in sorted(folder.glob("*.txt")):
        rejects: list[dict] = []
        if "train" in path.name:
            records = read_medlane_train(path, rejects)
            report[path.name] = {"records": len(records), "rejected": len(rejects)}
        else:
            records = read_medlane_eval(path, rejects)
            labels = collections.Counter("".join(map(str, r["reference_labels"])) for r in records)
            distinct = collections.Counter(len(set(r["raw_references"])) for r in records)
            report[path.name] = {
                "records": len(records),
                "rejected": len(rejects),
                "references": sum(len(r["references"]) for r in records),
                "terms": sum(len(r["terms"]) for r in records),
                "reference_label_patterns": dict(sorted(labels.items())),
                "distinct_references_per_record": {str(k): v for k, v in sorted(distinct.items())},
            }
        report[path.name]["reject_reasons"] = dict(collections.Counter(r["reason"] for r in rejects))
    print(json.dumps(report, indent=2, sort_keys=True))
    return 1 if any(v["rejected"] for v in report.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
