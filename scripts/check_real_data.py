"""Run the source readers on real public files through the real CLI; print counts per file.

    python scripts/check_real_data.py --data ../shared/data [--public DIR ...]

Each folder is laid out by reader: `cochrane/` (Devaraj et al.'s X.source/X.target/X.doi
triples, or canonical *.jsonl), `plaba/*.json` (PLABA data.json shape), `msd/*` (MSD files).
`--data` is the shared development data; `--public` adds folders holding the authors' full
releases (e.g. Devaraj et al.'s data-1024 test/val and PLABA's data.json, read out of their
repositories into a temp folder, never into this repo). Every input runs as
`medsimp cochrane|plaba|msd --input FILE` into a temp folder; the line per input gives the
exit code, read/kept/filtered/rejected and the dead-letter reasons, plus, for Cochrane, the
sentences that end inside a statistic and the splitter's outliers (`outliers`): sentences over
80 words (`over_80_words`), those of them that hold a sentence boundary the source has
(`over_80_words_not_in_source`), sentences with such an internal boundary
(`internal_boundary`), pieces with no letters (`no_letter_fragment`: ".", '".', "3."), and the
longest sentence in words (`longest_words`). A boundary is `medsimp.text.boundaries` (the data
report's too): a full stop after a word, a bracket or a decimal, then a capitalised word, outside
every bracket pair the sentence closes: a sentence the authors wrote inside brackets ("(...; 2
deaths amongst 98 children. One additional death ...)") is theirs; one after a bracket they
never closed is not. Also reports how many
MultiCochrane gold sentences the sentence splitter keeps whole, and the default aligner's pair
P/R/F1 on real held-out Cochrane documents beside the lexical baselines (`alignment.heldout`, as
`scripts/eval_alignment.py --only cochrane`): MultiCochrane's released English test pairs
(`multicochrane/en-test-with-doi.json`, 22 reviews by DOI) placed in their documents from
Devaraj et al.'s test split (`--cochrane-test DIR` holding test.source/test.target, or a
`cochrane/` folder of --data/--public holding them; the 411 val reviews of the shared data
hold none of the 22). The default aligner is the CRF the DAG trains: params `align.model`
(out/models/crf_aligner) when present, else one trained on params `align.gold` alone (no
self-training: that needs the DAG's sentence table); it never saw these reviews. The Jaccard / TF-IDF thresholds are tuned on the other half
of the reviews (2-fold by review). Exits 0 (saying so) when no folder exists; 1 when a run
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

from medsimp.cli.app import main as medsimp  # noqa: E402
from medsimp.text.boundaries import internal_boundaries  # noqa: E402

# A sentence that ends inside a statistic: an open bracket, or "95% CI 0." / "RR 2." left dangling.
_BROKEN = re.compile(r"(\([^)]*$)|(\b(?:CI|RR|OR|MD|SMD|HR)\s+-?\d+\.$)")
_NO_LETTERS = re.compile(r"^[\W\d_]+$")
LONG = 80  # words


def outliers(texts: list[str]) -> Counter:
    """The splitter's outliers among sentence texts (see the module docstring)."""
    counts: Counter = Counter()
    for text in texts:
        words, inner = len(text.split()), internal_boundaries(text) > 0
        counts["outliers.over_80_words"] += words > LONG
        counts["outliers.over_80_words_not_in_source"] += words > LONG and inner
        counts["outliers.internal_boundary"] += inner
        counts["outliers.no_letter_fragment"] += bool(_NO_LETTERS.match(text.strip()))
        counts["outliers.longest_words"] = max(counts["outliers.longest_words"], words)
    return counts


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
                for key, value in outliers(texts).items():
                    extra[key] = (
                        max(extra[key], value) if key.endswith("longest_words") else extra[key] + value
                    )
        return code, stats, [], extra


def check_multicochrane(folder: Path) -> Counter:
    """How many MultiCochrane gold sentences (aligned by the authors) our splitter keeps whole."""
    from medsimp.text.multilingual import split_sentences

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


def default_model(params_path: Path, model: str | None) -> tuple[str, Path | None]:
    """The DAG's default CRF: `model` or params align.model when that folder exists (label,
    folder); else (label, None): trained on params align.gold alone (align_train without its
    self-training, which needs the DAG's sentence table)."""
    from medsimp.config import load_params, resolve_path

    path = Path(model or resolve_path(load_params(str(params_path)).align.model, params_path.parent))
    if (path / "config.json").exists():
        return f"crf_default ({path})", path
    return "crf_default (trained on params align.gold; no model folder at " + str(path) + ")", None


def check_alignment(pairs_path: Path, test_dir: Path, params_path: Path, model: str | None) -> list[str]:
    """Lines: the default CRF's and the baselines' pair P/R/F1 on the held-out Cochrane
    documents (`alignment.heldout`), and a one-line summary."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from alignment.gold import gold_sources, read_golds
    from alignment.heldout import cochrane_gold, eval_cochrane
    from medsimp.config import load_params, resolve_path

    align = load_params(str(params_path)).align
    docs, info = cochrane_gold(pairs_path, test_dir)
    label, folder = default_model(params_path, model)
    base = None
    if folder is None:
        base = read_golds(
            [resolve_path(g, params_path.parent) for g in gold_sources(align.gold)], align.gold_format
        )
    with tempfile.TemporaryDirectory(prefix="check-real-align-") as cache:
        scores = eval_cochrane(
            docs, align.crf, cache, base, {"crf_default": folder} if folder else {}, cv=False
        )
    scores["crf_default"] = scores.pop("crf_default", None) or scores.pop("crf_base_gold")
    gold = ", ".join(
        f"{k}={info[k]}"
        for k in ("reviews", "reviews_not_found", "documents", "gold_pairs_released", "gold_sentence_pairs")
    )
    lines = [f"cochrane alignment, held out by review ({pairs_path} in {test_dir}): {gold}"]
    for name in ("crf_default", "jaccard", "tfidf"):
        prf = scores[name]
        shown = label if name == "crf_default" else f"{name} (threshold tuned on the other half)"
        lines.append(
            f"  {shown}: precision={prf['precision']:.3f}, recall={prf['recall']:.3f}, f1={prf['f1']:.3f}"
        )
    thresholds = ", ".join(f"{k}={v}" for k, v in sorted(scores["thresholds"].items()))
    lines.append(f"  thresholds: {thresholds}")
    lines.append(
        f"alignment summary: default CRF F1 {scores['crf_default']['f1']:.3f} vs Jaccard "
        f"{scores['jaccard']['f1']:.3f}, TF-IDF {scores['tfidf']['f1']:.3f} on {info['documents']} "
        f"held-out Cochrane reviews ({info['gold_sentence_pairs']} gold pairs)"
    )
    return lines


def cochrane_test_dir(folders: list[Path], given: str | None) -> Path | None:
    """Where Devaraj et al.'s test split is: --cochrane-test, else a folder's cochrane/."""
    from alignment.heldout import has_test_files

    candidates = [Path(given)] if given else [f / "cochrane" for f in folders]
    return next((c for c in candidates if has_test_files(c)), None)


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
    parser.add_argument(
        "--cochrane-test",
        default=None,
        metavar="DIR",
        help="folder with Devaraj et al.'s test.source/test.target (data-1024, or MultiCochrane's copy "
        "code/anno_viewer/make-alignment-file/test.{source,target}.txt): scores the default aligner",
    )
    parser.add_argument("--model", default=None, help="CRF model folder (default: params align.model)")
    parser.add_argument("--params", default=str(ROOT / "params.yaml"), help="params file (align section)")
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
    found = [f / "multicochrane" / "en-test-with-doi.json" for f in folders]
    pairs = next((p for p in found if p.exists()), None)
    test_dir = cochrane_test_dir(folders, args.cochrane_test)
    if pairs is None or test_dir is None:
        print(
            "cochrane alignment: skipped (needs multicochrane/en-test-with-doi.json and Devaraj et al.'s "
            "test.source/test.target, e.g. MultiCochrane's code/anno_viewer/make-alignment-file/"
            "test.{source,target}.txt: --cochrane-test DIR; the 411 val reviews hold none of its 22)"
        )
    else:
        for line in check_alignment(pairs, test_dir, Path(args.params), args.model):
            print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
