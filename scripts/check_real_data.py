"""Run the source readers on real public files through the real CLI; print counts per file.

    python scripts/check_real_data.py --data ../shared/data [--public DIR ...]

Each folder is laid out by reader: `cochrane/` (Devaraj et al.'s X.source/X.target/X.doi
triples, or canonical *.jsonl), `plaba/*.json` (PLABA data.json shape), `msd/*` (MSD files).
`--data` is the shared development data; `--public` adds folders holding the authors' full
releases (e.g. Devaraj et al.'s data-1024 test/val and PLABA's data.json, read out of their
repositories into a temp folder, never into this repo). Every input runs as
`medsimp cochrane|plaba|msd --input FILE` into a temp folder; the line per input gives the
exit code, read/kept/filtered/rejected and the dead-letter reasons, plus, for Cochrane, the
sentences that end inside a statistic. Also reports how many MultiCochrane gold sentences
the sentence splitter keeps whole. Exits 0 (saying so) when no folder exists; 1 when a run
fails or its counts do not reconcile (rejected records are reported, not failures).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medsimp.cli import main as medsimp  # noqa: E402

# A sentence that ends inside a statistic: an open bracket, or "95% CI 0." / "RR 2." left dangling.
_BROKEN = re.compile(r"(\([^)]*$)|(\b(?:CI|RR|OR|MD|SMD|HR)\s+-?\d+\.$)")


def inputs(folder: Path) -> list[tuple[str, Path]]:
    """(reader, input path) for every input found under the folder's reader sub-folders."""
    found = []
    cochrane = folder / "cochrane"
    if cochrane.is_dir():
        prefixes = sorted(
            {
                p.with_suffix("")
                for p in cochrane.rglob("*.source")
                if all(p.with_suffix(ext).exists() for ext in (".target", ".doi"))
            }
        )
        found += [("cochrane", p) for p in prefixes]
        found += [("cochrane", p) for p in sorted(cochrane.rglob("*.jsonl"))]
    if (folder / "plaba").is_dir():
        found += [("plaba", p) for p in sorted((folder / "plaba").rglob("*.json"))]
    if (folder / "msd").is_dir():
        found += [("msd", p) for p in sorted((folder / "msd").rglob("*")) if p.is_file()]
    return found


def run(reader: str, path: Path) -> tuple[int, dict, str, Counter]:
    """Exit code, stats, the error line (if any) and extra counts of one CLI run."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = medsimp(
                [
                    "--params",
                    str(ROOT / "params.yaml"),
                    "--set",
                    "beam.num_workers=1",
                    reader,
                    "--input",
                    str(path),
                    "--output",
                    str(out),
                ]
            )
        if code != 0:
            return code, {}, err.getvalue().strip().splitlines()[-1:], Counter()
        stats = json.loads((out / "stats.json").read_text())
        extra: Counter = Counter()
        if reader == "cochrane":
            import pyarrow.parquet as pq

            for part in sorted((out / "sentences").glob("*.parquet")):
                texts = pq.read_table(part, columns=["text"]).column("text").to_pylist()
                extra["sentences"] += len(texts)
                extra["sentences_ending_inside_statistic"] += sum(bool(_BROKEN.search(t)) for t in texts)
        return code, stats, [], extra


def check_multicochrane(folder: Path) -> Counter:
    """How many MultiCochrane gold sentences (aligned by the authors) our splitter keeps whole."""
    from medsimp.pipelines.multilingual_sentences import split_sentences

    counts: Counter = Counter()
    for name, fields, language in (
        ("en-test-with-doi.json", ("input", "gold"), "en"),
        ("fr-test.json", ("gold",), "fr"),
    ):
        path = folder / name
        if not path.exists():
            continue
        for item in json.loads(path.read_text(encoding="utf-8")):
            for field in fields:
                counts[f"{language}.sentences"] += 1
                counts[f"{language}.kept_whole"] += len(split_sentences(item[field], language)) == 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data", help="shared development data folder")
    parser.add_argument(
        "--public",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of full public releases, laid out like --data (repeatable)",
    )
    args = parser.parse_args()
    folders = [Path(f) for f in [args.data, *args.public] if Path(f).is_dir()]
    if not folders:
        print(f"{args.data}: no real data here, skipping")
        return 0
    failed = 0
    for folder in folders:
        for reader, path in inputs(folder):
            code, stats, error, extra = run(reader, path)
            if code != 0:
                failed += 1
                print(f"{reader} {path}: exit {code}: {' '.join(error)}")
                continue
            counts = {k: stats.get(k, 0) for k in ("read", "kept", "filtered", "rejected")}
            failed += counts["read"] != counts["kept"] + counts["filtered"] + counts["rejected"]
            reasons = stats.get("rejected_by", {})
            print(
                f"{reader} {path}: "
                + ", ".join(f"{k}={v}" for k, v in counts.items())
                + (f", rejected_by={json.dumps(reasons, sort_keys=True)}" if reasons else "")
                + "".join(f", {k}={extra[k]}" for k in sorted(extra))
            )
        if (folder / "multicochrane").is_dir():
            counts = check_multicochrane(folder / "multicochrane")
            print("multicochrane splitting: " + ", ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
