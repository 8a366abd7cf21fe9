"""Score simplifications with the MedLane metric suite (docs/metrics.md).

Files mode: `medsimp evaluate --hyp OUT.txt --ref R1.txt [--ref R2.txt ...] [--src SRC.txt]`
or `--medlane FILE [--split validation|test]` to take the sources, references and
`abbr[full]` term annotations from a MedLane-format evaluation file (`--split`
takes the authors' half of a combined file; OUT.txt has one line per record of the
split or of the whole file). `--mode default` (the paper's definitions) or
`--mode medlane` (the authors' scorer, step by step); `--json OUT` writes the scores.
A flag the chosen mode would ignore is refused (exit 2); so are empty inputs.

Stage mode (no `--hyp`): scores `out/models/<model>/predictions/<split>.txt` for
every model in `evaluate.models` in both modes, writes `--metrics` (per model,
like the paper's Table 3) and `--plots` (AScore etc. per source-length bucket).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from medsimp.inputs import read_lines

if TYPE_CHECKING:
    from medsimp.training.evaluation import Scorer

HELP = "score outputs: BLEU, METEOR, ROUGE-1/2/L, CIDEr, SARI, FKGL, BERTScore, HIT, CWR, AScore"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--hyp",
        action="append",
        default=[],
        help="system output, one sentence per line (repeatable to compare systems; a folder = its *.txt; - = stdin)",
    )
    parser.add_argument(
        "--name", action="append", default=[], help="system name per --hyp (default: file stem)"
    )
    parser.add_argument(
        "--report", help="write a self-contained HTML report here (metric table, charts, bootstrap)"
    )
    parser.add_argument(
        "--report-text",
        action="store_true",
        help="include a sample of source/reference/output text in the report "
        "(it may be MIMIC-derived: the report then carries a do-not-share banner)",
    )
    parser.add_argument("--ref", action="append", default=[], help="reference file (repeatable; - = stdin)")
    parser.add_argument("--src", help="source file (needed for SARI and default-mode HIT; - = stdin)")
    parser.add_argument("--medlane", help="MedLane-format evaluation file (sources, references, terms)")
    parser.add_argument(
        "--dataset",
        help="a builder of (complex, simple) pairs, e.g. builders/multicochrane (with --config, --split): "
        "sources and references in the order `medsimp train --dataset` predicts them",
    )
    parser.add_argument("--config", help="the builder config, e.g. en (with --dataset)")
    parser.add_argument(
        "--split",
        choices=("validation", "test"),
        help="with --medlane: the authors' first (validation) or second (test) half; "
        "with --dataset: the builder's split (default test)",
    )
    parser.add_argument(
        "--mode",
        choices=("default", "medlane"),
        default=None,
        help="default: corrected metrics; medlane: the authors' scorer",
    )
    parser.add_argument("--json", help="write the scores here")
    parser.add_argument(
        "--sentence-level",
        metavar="FILE",
        help="also write per-line scores here as JSON Lines (BLEU, ROUGE-L, SARI, FKGL, HIT, CWR, AScore "
        "of each output line alone; default mode)",
    )
    parser.add_argument(
        "--measures",
        action="store_true",
        help="also the EASSE and copy measures, Cao et al.'s style accuracy, perplexity and "
        "UMLS-masked edit distance (when params evaluate.style_data / perplexity_model / umls_index "
        "are set) and the length-bucket breakdown (needs sources)",
    )
    parser.add_argument(
        "--select",
        help="comma-separated metrics to compute (default: params evaluate.select, "
        "null = all): bleu, meteor, rouge_1, rouge_2, rouge_l, cider, sari, fkgl, bertscore, hit, cwr, ascore",
    )
    parser.add_argument(
        "--metrics",
        help="stage mode: headline metrics file, BLEU/SARI/FKGL/AScore per model (metrics/eval.json)",
    )
    parser.add_argument("--plots", help="stage mode: per-length-bucket plot data (plots/length_buckets.json)")
    parser.add_argument(
        "--scores",
        help="stage mode: every score of every model and mode, signatures, scales (out/eval/scores.json)",
    )


@dataclass
class MedLaneEval:
    """Scored items of a MedLane evaluation file and where each sits in the file.

    `positions[i]`: item i's 0-based record position in the whole file; `split_positions`:
    the positions of every record of the chosen split (scored or dead-lettered), in order.
    A hypothesis file has one line per record of the split, or per record of the file, or
    per scored record (as `medsimp train` writes its predictions).
    """

    items: list
    positions: list[int]
    split_positions: list[int]
    n_records: int
    rejects: list[dict]

    def align(self, hyps: list[str]) -> list[str]:
        """The output lines of the scored items (dead-lettered records' lines dropped)."""
        from medsimp.errors import InputError

        if len(hyps) == self.n_records:
            return [hyps[p] for p in self.positions]
        if len(hyps) == len(self.split_positions):
            index = {p: i for i, p in enumerate(self.split_positions)}
            return [hyps[index[p]] for p in self.positions]
        if len(hyps) == len(self.positions):
            return hyps
        whole = "" if len(self.split_positions) == self.n_records else f" (the whole file: {self.n_records})"
        raise InputError(
            f"--hyp has {len(hyps)} lines but the evaluation set has "
            f"{len(self.split_positions)} records{whole}; give one output line per record"
        )


def medlane_items(path: str, split: str | None, mode: str = "default") -> MedLaneEval:
    """The records of a MedLane evaluation file; `split` keeps the authors' half.

    `medlane` mode reads the file exactly as the authors' scorer does
    (`read_medlane_authors`: blank-line blocks of the lowercased text, the first
    `len(blocks) // 2` blocks are validation). Default mode uses `read_medlane_eval`:
    odd records are dead-lettered (and their output lines skipped), and the first
    `n_records // 2` records are validation.
    """
    from medsimp.errors import InputError
    from medsimp.pipelines.medlane_format import MedLaneFormatError, read_medlane_authors, read_medlane_eval
    from medsimp.training.scoring import EvalItem

    if not Path(path).is_file():
        raise InputError(f"--medlane {path}: not a file")
    rejects: list[dict] = []
    try:
        if mode == "medlane":
            records, rejects = read_medlane_authors(path)
            n = len(records)
            in_split = [split is None or r["split"] == split for r in records]
            items = [EvalItem(r["source"], list(r["references"])) for r in records]
        else:
            records = read_medlane_eval(path, rejects)
            n = len(records) + len(rejects)
            in_split = [split is None or (r["ordinal"] < n // 2) == (split == "validation") for r in records]
            items = [EvalItem(r["source"], list(r["raw_references"])) for r in records]
    except MedLaneFormatError as exc:
        raise InputError(f"--medlane {exc}") from None
    if mode == "medlane":
        split_positions = [r["ordinal"] for r, keep in zip(records, in_split) if keep]
    else:
        split_positions = [p for p in range(n) if split is None or (p < n // 2) == (split == "validation")]
        rejects = [r for r in rejects if r["ordinal"] in set(split_positions)]
    kept = [(it, r["ordinal"]) for it, r, keep in zip(items, records, in_split) if keep]
    return MedLaneEval([it for it, _ in kept], [p for _, p in kept], split_positions, n, rejects)


def dataset_items(args: argparse.Namespace, n: int):
    """The `--split` of a builder config as `medsimp train --dataset` loads it (same order)."""
    from medsimp.config import section
    from medsimp.errors import InputError
    from medsimp.training.data import load_pairs

    data = section(args.params_data, "train").get("data") or {}
    try:
        splits = load_pairs(
            f"{args.dataset.rstrip('/')}/{args.config}",
            data.get("complex_column", "complex_text"),
            data.get("simple_column", "simple_text"),
            float(data.get("validation_fraction", 0.1)),
            float(data.get("test_fraction", 0.1)),
            bool(data.get("resplit", False)),
        )
    except (FileNotFoundError, KeyError, ValueError) as exc:  # pyarrow: a missing column is ValueError
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"--dataset {args.dataset} --config {args.config}: {reason}") from None
    items = splits.eval[args.split or "test"]
    if len(items) != n:
        raise InputError(f"--hyp has {n} lines but the {args.split or 'test'} split has {len(items)} pairs")
    return items


def file_items(refs: list[str], src: str | None, n: int):
    from medsimp.errors import InputError
    from medsimp.training.scoring import EvalItem

    ref_lines = [read_lines(r, "--ref") for r in refs]
    src_lines = read_lines(src, "--src") if src else [None] * n
    for name, lines in [("--src", src_lines), *[(r, x) for r, x in zip(refs, ref_lines)]]:
        if len(lines) != n:
            raise InputError(f"{name} has {len(lines)} lines but --hyp has {n}")
    return [EvalItem(src_lines[i], [r[i] for r in ref_lines]) for i in range(n)]


HYP_ONLY = ("ref", "src", "medlane", "dataset", "config", "split", "json", "sentence_level", "report", "name")


def _check_flags(args: argparse.Namespace) -> None:
    """Refuse a flag the chosen mode would ignore (one line, exit 2)."""
    from medsimp.errors import UsageError

    given = lambda *names: [f"--{n}" for n in names if getattr(args, n)]  # noqa: E731
    if args.hyp:
        unused = given("metrics", "plots", "scores")
        if args.medlane:
            unused += given("ref", "src", "dataset", "config")
        elif args.dataset:
            unused += given("ref", "src")
            if not args.config:
                raise UsageError(
                    "--dataset needs --config (e.g. --dataset builders/multicochrane --config en)"
                )
        else:
            unused += given("split", "config")
            if not args.ref:
                raise UsageError(
                    "give --ref FILE (repeatable), --medlane FILE or --dataset DIR --config C with --hyp"
                )
        if unused:
            with_ = " --medlane" if args.medlane else " --dataset" if args.dataset else ""
            raise UsageError(
                f"{', '.join(unused)} cannot be used with --hyp{with_}: drop {'them' if len(unused) > 1 else 'it'}"
            )
    elif given(*HYP_ONLY):
        raise UsageError(
            f"{', '.join(given(*HYP_ONLY))}: only with --hyp "
            "(without --hyp, evaluate scores the stage's models and writes --metrics/--plots)"
        )


def run(args: argparse.Namespace) -> int:
    from medsimp.config import section
    from medsimp.errors import InputError, UsageError
    from medsimp.outputs import check_file_target
    from medsimp.training.evaluation import Scorer
    from medsimp.training.scoring import selection

    _check_flags(args)
    if args.hyp and args.json:
        check_file_target(args.json)  # refuse a file medsimp did not write before scoring
    cfg = section(args.params_data, "evaluate")
    select = [m.strip() for m in args.select.split(",") if m.strip()] if args.select else None
    try:
        selection(select if select is not None else cfg.get("select"))
    except ValueError as exc:
        raise UsageError(f"--select: {exc}") from None
    scorer = Scorer(
        cfg,
        section(args.params_data, "train"),
        section(args.params_data, "notes"),
        args.params_dir,
        select,
        section(args.params_data, "link"),
    )
    try:
        return _run_files(args, scorer, cfg) if args.hyp else _run_stage(args, cfg, scorer)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _systems(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(name, path) per `--hyp` (a folder stands for its *.txt files, named by stem); `--name` renames."""
    from medsimp.errors import UsageError

    paths = [str(p) for h in args.hyp for p in (sorted(Path(h).glob("*.txt")) if Path(h).is_dir() else [h])]
    names = args.name or ["stdin" if p == "-" else Path(p).stem for p in paths]
    if len(names) != len(paths):
        raise UsageError(f"{len(names)} --name for {len(paths)} system output files: give one per --hyp")
    if len(set(names)) != len(names):
        raise UsageError(f"system names must differ: {', '.join(names)} (use --name)")
    return list(zip(names, paths))


def _run_files(args: argparse.Namespace, scorer: Scorer, cfg: dict) -> int:
    import json
    import sys

    from medsimp.errors import InputError, UsageError
    from medsimp.outputs import print_summary, write_json, write_text
    from medsimp.params_schema import default

    mode = args.mode or "default"
    if args.sentence_level and (mode != "default" or args.medlane):
        raise UsageError("--sentence-level scores --hyp against --ref/--src in --mode default")
    systems = _systems(args)
    if (args.report or len(systems) > 1) and mode == "medlane":
        raise UsageError("comparing systems (several --hyp or --report) uses --mode default")
    results, rejects, hyp_lists = {}, [], {}
    for name, path in systems:
        hyps = read_lines(path, "--hyp")
        if args.medlane:
            evalset = medlane_items(args.medlane, args.split, mode)
            hyps, items, rejects = evalset.align(hyps), evalset.items, evalset.rejects
        elif args.dataset:
            items = dataset_items(args, len(hyps))
        else:
            items = file_items(args.ref, args.src, len(hyps))
        if not items:
            raise InputError(
                f"nothing to score: --hyp {path} has {len(hyps)} lines and the evaluation "
                "set has no usable record"
            )
        hyp_lists[name] = hyps
        results[name] = scorer.evaluate(
            hyps,
            items,
            mode,
            extras=args.measures or bool(args.report),
            bucket_edges=cfg.get("length_buckets", default("evaluate.length_buckets")),
        )
    if rejects:
        reasons = sorted({r["reason"] for r in rejects})
        print(
            f"warning: {len(rejects)} record(s) not scored ({', '.join(reasons)}; "
            f"{', '.join(r['locator'] for r in rejects[:5])}{' ...' if len(rejects) > 5 else ''}); "
            "their output lines were skipped",
            file=sys.stderr,
        )
    not_scored = [{k: r[k] for k in ("locator", "reason")} for r in rejects]
    bootstrap = _bootstrap(hyp_lists, items, cfg) if len(systems) > 1 else {}
    if args.sentence_level:
        rows = [
            {"system": name, **row}
            for name, hyps in hyp_lists.items()
            for row in scorer.per_sentence(hyps, items)
        ]
        write_text(
            args.sentence_level,
            "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows),
        )
    if len(systems) == 1:
        result = next(iter(results.values()))
        if args.json:
            write_json(args.json, {**result.as_dict(), "not_scored": not_scored})
        print_summary(
            f"evaluate ({mode}, n={len(items)})",
            _labelled({**result.scores, **result.extra.get("measures", {})}),
        )
    else:
        if args.json:
            write_json(
                args.json,
                {
                    "mode": mode,
                    "n": len(items),
                    "names": list(results),
                    "systems": {n: r.as_dict() for n, r in results.items()},
                    "bootstrap": bootstrap,
                    "not_scored": not_scored,
                },
            )
        table: dict[str, dict] = {}
        for name, r in results.items():
            for k, v in _labelled({**r.scores, **r.extra.get("measures", {})}).items():
                table.setdefault(k, {})[name] = v
        print_summary(f"evaluate ({mode}, n={len(items)}, {len(systems)} systems)", table)
        for pair, res in bootstrap.items():
            for m, v in res.items():
                print(
                    f"paired bootstrap {pair} {m}: delta {v['delta']:g}, p = {v['p_value']:g}, "
                    f"95% CI [{v['ci_low']:g}, {v['ci_high']:g}], Wilcoxon p = {v['wilcoxon_p']:g}",
                    file=sys.stderr,
                )
    for name, r in results.items():
        print(f"signature{'' if len(results) == 1 else ' ' + name}: {r.signature}", file=sys.stderr)
    for measure, why in scorer.unavailable.items():
        print(f"note: {measure} not computed (null): {why}", file=sys.stderr)
    if args.report:
        _write_report(args, results, bootstrap, items, hyp_lists)
    return 0


def _bootstrap(hyp_lists: dict[str, list[str]], items, cfg: dict) -> dict:
    """Paired bootstrap of the first system against each other one ('A vs B': B - A)."""
    from medsimp.evaluate_report import paired_bootstrap, sentence_stats

    names = list(hyp_lists)
    base = sentence_stats(hyp_lists[names[0]], items)
    return {
        f"{names[0]} vs {n}": paired_bootstrap(
            base,
            sentence_stats(hyp_lists[n], items),
            int(cfg.get("bootstrap_samples", 1000)),
            int(cfg.get("bootstrap_seed", 12345)),
        )
        for n in names[1:]
    }


def _write_report(args: argparse.Namespace, results: dict, bootstrap: dict, items, hyp_lists: dict) -> None:
    """The self-contained HTML report; output text only with --report-text (may be MIMIC-derived)."""
    from medsimp.evaluate_report import render
    from medsimp.outputs import write_text
    from medsimp.training.evaluation import SCALES

    sample = None
    if args.report_text:
        sample = [
            {
                "source": it.source,
                "references": it.references,
                "outputs": {n: h[i] for n, h in hyp_lists.items()},
            }
            for i, it in enumerate(items[:20])
        ]
    systems = {n: {**r.scores, **r.extra.get("measures", {})} for n, r in results.items()}
    buckets = {n: r.extra["length_buckets"] for n, r in results.items() if "length_buckets" in r.extra}
    write_text(
        args.report,
        render(systems, SCALES, {n: r.signature for n, r in results.items()}, bootstrap, buckets, sample),
    )


def _labelled(scores: dict) -> dict:
    """Table rows named with their scale: `sari (0-100)`."""
    from medsimp.training.evaluation import SCALES

    return {f"{k} ({SCALES[k]})" if k in SCALES else k: v for k, v in scores.items()}


HEADLINE = ("bleu", "sari", "fkgl", "ascore")  # per model, default mode: what `dvc metrics show` lists


def _run_stage(args: argparse.Namespace, cfg: dict, scorer: Scorer) -> int:
    from medsimp.config import section
    from medsimp.errors import UsageError

    if not (args.metrics and args.plots):
        raise UsageError(
            "stage mode (no --hyp) needs --metrics and --plots (dvc.yaml's evaluate stage names them); "
            "to score a file give --hyp and --ref"
        )
    from medsimp.outputs import print_summary, write_json
    from medsimp.params_schema import default
    from medsimp.training.evaluation import SCALES
    from medsimp.training.scoring import METRICS

    train_cfg = section(args.params_data, "train")
    split = cfg.get("split", "test")
    data = train_cfg.get("data") or {}
    modes = [args.mode] if args.mode else ["default", "medlane"]
    evalsets: dict[str, MedLaneEval] = {}
    if data.get("format", "medlane") == "medlane":
        evalsets = {mode: medlane_items(data[split], None, mode) for mode in {"default", *modes}}
        items = evalsets["default"].items
    else:
        from medsimp.training.data import load_splits

        items = load_splits(train_cfg).eval[split]
    models = list(cfg.get("models") or default("evaluate.models"))
    models_dir = Path(cfg.get("models_dir", default("evaluate.models_dir")))
    edges = [int(x) for x in cfg.get("length_buckets", default("evaluate.length_buckets"))]
    results: dict = {mode: {} for mode in modes}
    signatures: dict[str, str] = {}
    buckets: dict[str, dict] = {}
    for model in models:
        lines = read_lines(str(models_dir / model / "predictions" / f"{split}.txt"), "prediction file")
        for mode in modes:
            ev = evalsets.get(mode)
            result = scorer.evaluate(ev.align(lines) if ev else lines, ev.items if ev else items, mode)
            results[mode][model] = result.scores
            signatures[mode] = result.signature
        hyps = evalsets["default"].align(lines) if evalsets else lines
        for b in scorer.buckets(hyps, items, edges):
            row = buckets.setdefault(b["bucket"], {"bucket": b["bucket"], "n": b["n"]})
            row.update({f"{model}_{key}": b[key] for key in ("bleu", "hit", "cwr", "ascore")})
    metrics = {
        "split": split,
        "n": len(items),
        **results,
        "signature": signatures,
        "scales": {
            k: v for k, v in SCALES.items() if any(k in sc for r in results.values() for sc in r.values())
        },
    }
    if args.scores:
        write_json(args.scores, metrics)
    default_scores = results.get("default") or next(iter(results.values()))
    write_json(args.metrics, {m: {k: sc.get(k) for k in HEADLINE} for m, sc in default_scores.items()})
    write_json(args.plots, list(buckets.values()))
    for mode in modes:
        summary = {"bertscore_f1" if m == "bertscore" else m for m in METRICS}  # BERTScore as its F1
        flat = {f"{m}.{k}": v for m, sc in results[mode].items() for k, v in sc.items() if k in summary}
        print_summary(f"evaluate ({mode}, {split}, n={len(items)})", flat)
    return 0
