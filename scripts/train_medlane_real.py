"""Train and score the MedLane models on real text: the public MedLane evaluation file.

    python scripts/train_medlane_real.py --released /work/.mirror/cscyuge+medlane/repo --work DIR
        [--models declare bertmt dictionary copy] [--validation 100] [--set KEY=VALUE ...]

MedLane's training set (12,801 records) is not public; its evaluation file is
(`data/test(2030).txt` of cscyuge/medlane, 2,031 records, read from a checkout or from the git
directory `fetch` brings). As issue 37 asks, its first 1,015 records (the paper's validation part)
train and its other 1,016 (the paper's test split) test:

- train: the first 1,015 records minus the last `--validation` of them, written in MedLane's
  training format (source, first reference with its `abbr[full]` annotations expanded, the same
  again as the unused second-person line);
- validation (early stopping): those last `--validation` records, evaluation format;
- test: records 1,016-2,031, evaluation format, never read before scoring.

The dictionary is the packaged one (`train.dictionaries`) plus the annotations of the training
records (`abbr -> full form`): the authors' pre-constructed dictionary is a pickle, which this
project does not load (unpickling runs code). The paper's settings hold (`train.epochs: 10`,
`train.head_lr: 5.0e-5`, `train.copy_attention: false`; the schema defaults) unless `--set` says otherwise; the encoder is
what `train.encoder`/`encoder_fallback` give here (MiniLM offline, PubMedBERT in the paper).
Each model is then scored on the test file in both modes (`evaluate files --mode medlane`: the
authors' scorer, Table 3's numbers; `--mode default`: the corrected metrics).

Everything is written under `--work` (a folder medsimp may create); MedLane text is
MIMIC-derived, so only counts and scores are printed, never sentences. Prints one table and
writes `DIR/summary.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TEST_FILE = "data/test(2030).txt"
N_TRAIN = 1015  # the paper's validation part: the first 1,015 records
MODELS = ("declare", "bertmt", "dictionary", "copy")
PAPER = {  # MedLane Table 3 (BLEU = mean of BLEU-1..4; SARI 0-100)
    "declare": {"medlane_bleu": 0.8165, "sari": 70.8583, "hit": 0.7986, "cwr": 0.7328, "ascore": 0.7983},
    "bertmt": {"medlane_bleu": 0.7228, "sari": 72.2260, "hit": 0.7808, "cwr": 0.7358, "ascore": 0.7417},
    "dictionary": {"medlane_bleu": 0.6070, "sari": 37.3391, "hit": 0.5572, "cwr": 0.6407, "ascore": 0.5948},
}
COLUMNS = ("medlane_bleu", "bleu_4", "meteor", "rouge_l", "cider", "sari", "hit", "cwr", "ascore", "fkgl")
TERM = re.compile(r"(\S+?)\[([^\]]+)\]")


def released_text(folder: Path) -> str:
    """The evaluation file from a cscyuge/medlane checkout or git directory."""
    if (folder / TEST_FILE).is_file():
        return (folder / TEST_FILE).read_text(encoding="utf-8")
    got = subprocess.run(
        ["git", "--git-dir", str(folder), "show", f"HEAD:{TEST_FILE}"], capture_output=True, check=False
    )
    if got.returncode != 0:
        raise SystemExit(f"{folder}: no {TEST_FILE} (a cscyuge/medlane checkout or git directory)")
    return got.stdout.decode("utf-8")


def blocks(text: str) -> list[list[str]]:
    """Blank-line separated blocks of stripped lines (as pipelines.sources.medlane reads them)."""
    out: list[list[str]] = []
    block: list[str] = []
    for line in text.splitlines():
        if line.strip():
            block.append(line.strip())
        elif block:
            out.append(block)
            block = []
    if block:
        out.append(block)
    return out


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def prepare(text: str, work: Path, n_validation: int) -> dict:
    """train.txt, validation.txt, test.txt and train_terms.json under `work/data`; counts."""
    from pipelines.sources.medlane import expand_terms

    records = blocks(text)
    first, test = records[:N_TRAIN], records[N_TRAIN:]
    train, validation = first[: N_TRAIN - n_validation], first[N_TRAIN - n_validation :]
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    train_lines, terms = [], {}
    for block in train:
        reference = block[1].split(" ", 1)[1] if len(block) > 1 and " " in block[1] else ""
        target = expand_terms(reference)
        train_lines += [block[0], target, target, ""]
        for abbr, full in TERM.findall(reference):
            slot = terms.setdefault(abbr.lower(), [])
            if full.strip().lower() not in slot:
                slot.append(full.strip().lower())
    write_lines(data / "train.txt", train_lines)
    write_lines(data / "validation.txt", [line for b in validation for line in (*b, "")])
    write_lines(data / "test.txt", [line for b in test for line in (*b, "")])
    (data / "train_terms.json").write_text(
        json.dumps(terms, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return {
        "records": len(records),
        "train": len(train),
        "validation": len(validation),
        "test": len(test),
        "train_terms": len(terms),
    }


def medsimp(args: list[str], log: Path) -> float:
    """Run one medsimp command (output to `log`); its wall time. A failure stops the script."""
    start = time.monotonic()
    with log.open("ab") as fh:
        got = subprocess.run([sys.executable, "-m", "medsimp.cli", *args], stdout=fh, stderr=fh, check=False)
    if got.returncode != 0:
        command = next(a for a in args if a in ("train", "evaluate"))
        raise SystemExit(f"medsimp {command} failed (exit {got.returncode}); see {log}")
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--released", required=True, type=Path, help="cscyuge/medlane checkout or git directory"
    )
    parser.add_argument(
        "--work", required=True, type=Path, help="folder for the split files, models and scores"
    )
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument(
        "--validation", type=int, default=100, help="records of the first 1,015 kept for early stopping"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="extra params override"
    )
    args = parser.parse_args(argv)

    from medsimp.config import load_params

    work = args.work.resolve()
    counts = prepare(released_text(args.released), work, args.validation)
    print(json.dumps(counts))
    params = load_params(str(REPO / "params.yaml"))
    dictionaries = [str((REPO / d).resolve()) for d in params.train.dictionaries] + [
        str(work / "data" / "train_terms.json")
    ]
    overrides = [
        f"train.data.train={work / 'data' / 'train.txt'}",
        f"train.data.validation={work / 'data' / 'validation.txt'}",
        f"train.data.test={work / 'data' / 'test.txt'}",
        f"train.dictionaries={json.dumps(dictionaries)}",
        "train.epochs=10",  # the paper's (params.yaml's sample profile says 4)
        "train.head_lr=5.0e-5",  # the paper's one rate (params.yaml's sample profile says 5e-3)
        "train.copy_attention=false",  # the paper's decoder
        f"cache.dir={work / 'cache'}",
        *args.set,
    ]
    common = ["--params", str(REPO / "params.yaml"), *[a for o in overrides for a in ("--set", o)]]
    log = work / "log.txt"
    summary_file = work / "summary.json"  # models of an earlier run in this folder are kept
    earlier = json.loads(summary_file.read_text(encoding="utf-8")) if summary_file.is_file() else {}
    summary: dict = {"counts": counts, "models": earlier.get("models", {})}
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for model in args.models:
        out = work / "models" / model
        seconds = medsimp(
            [*common, "--force", "train", "--model", model, "--output", str(out), "--no-progress"], log
        )
        row: dict = {"train_seconds": round(seconds, 1)}
        stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
        row["stats"] = {k: stats.get(k) for k in ("epochs_run", "best_epoch", "encoder", "paper_deviations")}
        for mode in ("medlane", "default"):
            scores = work / "eval" / f"{model}-{mode}.json"
            scores.parent.mkdir(parents=True, exist_ok=True)
            medsimp(
                [
                    *common,
                    "--force",
                    "evaluate",
                    "files",
                    "--hyp",
                    str(out / "predictions" / "test.txt"),
                    "--medlane",
                    str(work / "data" / "test.txt"),
                    "--mode",
                    mode,
                    "--json",
                    str(scores),
                ],
                log,
            )
            row[mode] = json.loads(scores.read_text(encoding="utf-8"))
        summary["models"][model] = {**row, "overrides": overrides}
    summary_file.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for model, row in summary["models"].items():
        medlane, default = row["medlane"]["scores"], row["default"]["scores"]
        print(
            model,
            f"train {row['train_seconds']} s",
            "authors' scorer:",
            json.dumps({k: medlane.get(k) for k in COLUMNS if k in medlane}),
            "default:",
            json.dumps({k: default.get(k) for k in COLUMNS if k in default}),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
