"""Score simplifications with the MedLane metric suite (docs/metrics.md).

Files mode: `medsimp evaluate --hyp OUT.txt --ref R1.txt [--ref R2.txt ...] [--src SRC.txt]`
or `--medlane FILE [--split validation|test]` to take the sources, references and
`abbr[full]` term annotations from a MedLane-format evaluation file (`--split`
takes the authors' half of a combined file). `--mode default` (corrected) or
`--mode medlane` (the authors' scorer); `--json OUT` writes the scores.

Stage mode (no `--hyp`): scores `out/models/<model>/predictions/<split>.txt` for
every model in `evaluate.models` in both modes, writes `--metrics` (per model,
like the paper's Table 3) and `--plots` (AScore etc. per source-length bucket).
"""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = "score outputs: BLEU, METEOR, ROUGE-L, CIDEr, SARI, FKGL, BERTScore, HIT, CWR, AScore"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hyp", help="system output, one sentence per line")
    parser.add_argument("--ref", action="append", default=[], help="reference file (repeatable)")
    parser.add_argument("--src", help="source file (needed for SARI and default-mode HIT)")
    parser.add_argument("--medlane", help="MedLane-format evaluation file (sources, references, terms)")
    parser.add_argument("--split", choices=("validation", "test"),
                        help="with --medlane: the authors' first (validation) or second (test) half")
    parser.add_argument("--mode", choices=("default", "medlane"), default=None,
                        help="default: corrected metrics; medlane: the authors' scorer")
    parser.add_argument("--json", help="write the scores here")
    parser.add_argument("--metrics", help="stage mode: metrics file (metrics/eval.json)")
    parser.add_argument("--plots", help="stage mode: per-length-bucket plot data (plots/length_buckets.json)")


def _lines(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def medlane_items(path: str, split: str | None):
    """EvalItems of a MedLane evaluation file; `split` keeps the authors' half.

    The authors split the file text on blank lines and take the first `len // 2`
    blocks as validation (a trailing empty block counts), the rest as test.
    """
    from medsimp.pipelines.medlane_format import read_medlane_eval
    from medsimp.training.scoring import EvalItem

    records = read_medlane_eval(path)
    items = [EvalItem(r["source"], list(r["raw_references"])) for r in records]
    if split is None:
        return items
    half = len(Path(path).read_text(encoding="utf-8").split("\n\n")) // 2
    return items[:half] if split == "validation" else items[half:]


def file_items(refs: list[str], src: str | None, n: int):
    from medsimp.training.scoring import EvalItem

    ref_lines = [_lines(r) for r in refs]
    src_lines = _lines(src) if src else [None] * n
    for name, lines in [("--src", src_lines), *[(r, x) for r, x in zip(refs, ref_lines)]]:
        if len(lines) != n:
            raise SystemExit(f"{name} has {len(lines)} lines but --hyp has {n}")
    return [EvalItem(src_lines[i], [r[i] for r in ref_lines]) for i in range(n)]


class Scorer:
    """Both scoring modes with the shared resources loaded once."""

    def __init__(self, cfg: dict, train_cfg: dict, base: str | Path = "."):
        from medsimp.config import resolve_path
        from medsimp.params_schema import default
        from medsimp.resources import resolve_model
        from medsimp.training.lexicon import load_common_words, load_dictionary

        self.common = load_common_words(resolve_path(cfg.get("common_words", default("evaluate.common_words")), base))
        self.dictionary = load_dictionary([resolve_path(p, base) for p in
                                           cfg.get("dictionaries") or train_cfg.get("dictionaries") or []])
        self.meteor = bool(cfg.get("meteor", True))
        self.bert = resolve_model(cfg.get("bertscore_model", "minilm")) if cfg.get("bertscore", True) else None

    def score(self, hyps: list[str], items, mode: str, full: bool = True) -> dict:
        from medsimp.training import scoring

        if len(hyps) != len(items):
            raise SystemExit(f"{len(hyps)} outputs for {len(items)} evaluation sentences")
        if mode == "medlane":
            return scoring.score_medlane(hyps, items, self.common, set(self.dictionary), self.meteor and full)
        scoring.attach_terms(items, self.dictionary)
        return scoring.score_default(hyps, items, self.common, self.bert if full else None, self.meteor and full)


def _rounded(scores: dict) -> dict:
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in scores.items()}


def run(args: argparse.Namespace) -> int:
    from medsimp.config import section

    cfg = section(args.params_data, "evaluate")
    scorer = Scorer(cfg, section(args.params_data, "train"), args.params_dir)
    if args.hyp:
        return _run_files(args, scorer)
    return _run_stage(args, cfg, scorer)


def _run_files(args: argparse.Namespace, scorer: Scorer) -> int:
    from medsimp.outputs import print_summary, write_json

    hyps = _lines(args.hyp)
    if args.medlane:
        items = medlane_items(args.medlane, args.split)
    elif args.ref:
        items = file_items(args.ref, args.src, len(hyps))
    else:
        raise SystemExit("give --ref FILE (repeatable) or --medlane FILE")
    mode = args.mode or "default"
    scores = _rounded(scorer.score(hyps, items, mode))
    if args.json:
        write_json(args.json, {"mode": mode, "n": len(hyps), "scores": scores})
    print_summary(f"evaluate ({mode})", scores)
    return 0


def _run_stage(args: argparse.Namespace, cfg: dict, scorer: Scorer) -> int:
    from medsimp.config import section
    from medsimp.outputs import print_summary, write_json
    from medsimp.params_schema import default
    from medsimp.training.scoring import length_buckets

    train_cfg = section(args.params_data, "train")
    split = cfg.get("split", "test")
    data = train_cfg.get("data") or {}
    if data.get("format", "medlane") == "medlane":
        items = medlane_items(data[split], None)
    else:
        from medsimp.training.data import load_splits

        items = load_splits(train_cfg).eval[split]
    models = list(cfg.get("models") or ["declare", "dictionary", "copy"])
    models_dir = Path(cfg.get("models_dir", "out/models"))
    modes = [args.mode] if args.mode else ["default", "medlane"]
    edges = [int(x) for x in cfg.get("length_buckets", default("evaluate.length_buckets"))]
    labels = length_buckets(items, edges)
    results: dict = {mode: {} for mode in modes}
    buckets: dict[str, dict] = {}
    for model in models:
        hyps = _lines(str(models_dir / model / "predictions" / f"{split}.txt"))
        for mode in modes:
            results[mode][model] = _rounded(scorer.score(hyps, items, mode))
        for label in sorted(set(labels), key=lambda s: int(s.split("-")[0].rstrip("+"))):
            idx = [i for i, lab in enumerate(labels) if lab == label]
            sub = scorer.score([hyps[i] for i in idx], [items[i] for i in idx], "default", full=False)
            row = buckets.setdefault(label, {"bucket": label, "n": len(idx)})
            for key in ("bleu", "hit", "cwr", "ascore"):
                row[f"{model}_{key}"] = round(sub[key], 6) if sub[key] is not None else None
    metrics = {"split": split, "n": len(items), **results}
    write_json(args.metrics or "metrics/eval.json", metrics)
    write_json(args.plots or "plots/length_buckets.json", list(buckets.values()))
    for mode in modes:
        flat = {f"{m}.{k}": v for m, sc in results[mode].items() for k, v in sc.items()
                if k in ("bleu", "meteor", "rouge_l", "cider", "sari", "fkgl", "bertscore_f1", "hit", "cwr", "ascore")}
        print_summary(f"evaluate ({mode}, {split}, n={len(items)})", flat)
    return 0
