"""Score copy-the-source on the shared MedLane test sample in both scoring modes; with
`--released DIR`, check compat mode against the authors' released evaluation run.

    python scripts/eval_medlane_compat.py --data ../shared/data [--split test] [--json OUT]
    python scripts/eval_medlane_compat.py --released /work/.mirror/cscyuge+medlane/repo [--json OUT]

`--released DIR` is cscyuge/medlane as a checkout or as a git directory (what `fetch` brings;
read with `git show HEAD:path`). For each full test file it reports, per reference, how many
of the 1,016 test-half lines each compat preparation (`evaluate.medlane_references`) writes
byte for byte as the released `Bert/tmp/ref0..3.txt`; then BLEU-1..4, ROUGE-L and CIDEr of
each released system output (its last 1,016 lines, as the authors' `results[1015:]`) and of
`ref0.txt` itself, through compat mode on the test file and through pycocoevalcap directly on
the released reference files.

Skips cleanly (exit 0) when a data folder is absent. MedLane text is MIMIC-derived: only
counts and scores are printed, never sentences.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

# cscyuge/medlane: the prepared references and the outputs of its released evaluation run, and
# the full test files (`data/`: the root copy; `Bert/data/...-v2`: the copy beside the run).
RELEASED_REFS = tuple(f"Bert/tmp/ref{k}.txt" for k in range(4))
RELEASED_OUTPUTS = ("result/tmp.out.txt", "Bert/result/tmp.out.txt", "Bert/tmp/hyp.txt")
RELEASED_TESTS = ("data/test(2030).txt", "Bert/data/test(2030)-v2.txt")
N_VALIDATION = 1015  # the authors' `results[1015:]`


def _reader(folder: Path):
    """Text of a file of the released repository: from its work tree or its git directory."""
    bare = not (folder / "Bert").is_dir() and (folder / "HEAD").is_file()

    def read(path: str) -> str | None:
        if not bare:
            f = folder / path
            return f.read_text(encoding="utf-8") if f.is_file() else None
        got = subprocess.run(["git", "--git-dir", str(folder), "show", f"HEAD:{path}"], capture_output=True)
        return got.stdout.decode("utf-8") if got.returncode == 0 else None

    return read


def _coco(hyps: list[str], refs: list[list[str]]) -> dict[str, float]:
    """BLEU-1..4, ROUGE-L, CIDEr with pycocoevalcap itself (nlg-eval's `compute_metrics`:
    stripped lines, whitespace tokens)."""
    import contextlib
    import io

    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    gts = {i: [r.strip() for r in rs] for i, rs in enumerate(refs)}
    res = {i: [h.strip()] for i, h in enumerate(hyps)}
    with contextlib.redirect_stdout(io.StringIO()):
        bleu, _ = Bleu(4).compute_score(gts, res)
    out = {f"bleu_{n + 1}": float(b) for n, b in enumerate(bleu)}
    out["rouge_l"] = float(Rouge().compute_score(gts, res)[0])
    out["cider"] = float(Cider().compute_score(gts, res)[0])
    return out


def released_run(folder: Path) -> dict | None:
    """Compat mode against the released run (see the module docstring); None if not there."""
    import tempfile

    from medsimp.evaluation.stage import medlane_items
    from medsimp.metrics.base import MEDLANE_REFERENCES, ScoringOptions
    from medsimp.metrics.scoring import score
    from medsimp.text.medlane_refs import PREPARATIONS, obtain_line, reference_tokens

    read = _reader(folder)
    refs_text = [read(p) for p in RELEASED_REFS]
    if any(t is None for t in refs_text):
        return None
    released = [t.split("\n")[:-1] for t in refs_text if t is not None]  # their lines end in "\n"
    by_record = [list(rs) for rs in zip(*released, strict=True)]
    outputs = {}
    for path in RELEASED_OUTPUTS:
        text = read(path)
        if text is not None:
            lines = text.splitlines(keepends=True)
            outputs[path] = lines if path.endswith("hyp.txt") else lines[N_VALIDATION:]
    outputs["Bert/tmp/ref0.txt"] = [ln + "\n" for ln in released[0]]
    select = ["medlane_bleu", "rouge_l", "cider"]
    result: dict = {"released_refs": len(released[0]), "tests": {}, "pycocoevalcap": {}}
    for name, hyps in outputs.items():
        if len(hyps) == len(by_record):
            result["pycocoevalcap"][name] = _coco(hyps, by_record)
    with tempfile.TemporaryDirectory() as tmp:
        for path in RELEASED_TESTS:
            text = read(path)
            if text is None:
                continue
            local = Path(tmp) / Path(path).name
            local.write_text(text, encoding="utf-8")
            items = medlane_items(str(local), "test", "medlane").items
            entry: dict = {"records": len(items), "identical_lines": {}, "compat": {}}
            for prep in PREPARATIONS:
                entry["identical_lines"][prep] = (
                    [
                        sum(
                            obtain_line(reference_tokens(it.references[k], prep)[0]) == released[k][i]
                            for i, it in enumerate(items)
                        )
                        for k in range(MEDLANE_REFERENCES)
                    ]
                    if len(items) == len(released[0])
                    else None
                )
                entry["compat"][prep] = {
                    name: {
                        k: v
                        for k, v in score(
                            "medlane",
                            hyps,
                            items,
                            set(),
                            select,
                            ScoringOptions(meteor=False, medlane_references=prep),
                        ).items()
                        if k != "medlane_bleu"
                    }
                    for name, hyps in outputs.items()
                    if len(hyps) == len(items)
                }
            result["tests"][path] = entry
    return result


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
    parser.add_argument(
        "--released", help="cscyuge/medlane checkout or git directory: check against its released run"
    )
    args = parser.parse_args(argv)
    if args.released:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from medsimp.atomic import canonical_json, write_json

        folder = Path(args.released)
        got = released_run(folder) if folder.is_dir() else None
        if got is None:
            print(f"skip: no released run (Bert/tmp/ref0..3.txt) in {folder}", file=sys.stderr)
            return 0
        print(canonical_json(got), end="")
        if args.json:
            write_json(args.json, got)
        return 0
    path = Path(args.data) / "medlane" / "test-sample.txt"
    if not path.exists():
        print(f"skip: {path} not found", file=sys.stderr)
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from medsimp.atomic import canonical_json, write_json
    from medsimp.config import load_params, params_dir
    from medsimp.evaluation.scorer import Scorer
    from medsimp.evaluation.stage import medlane_items

    params = load_params(args.params)
    cfg = params.evaluate.model_copy(update={"meteor": not args.no_meteor and params.evaluate.meteor})
    scorer = Scorer(cfg, params.train, params.notes, params_dir(args.params))
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
