"""Score simplifications with the MedLane metric suite (docs/metrics.md).

`evaluate files`: `medsimp evaluate files --hyp OUT.txt --ref R1.txt [--ref R2.txt ...] [--src SRC.txt]`
or `--medlane FILE [--split validation|test]` to take the sources, references and
`abbr[full]` term annotations from a MedLane-format evaluation file (`--split`
takes the authors' half of a combined file; OUT.txt has one line per record of the
split or of the whole file). `--mode default` (the paper's definitions) or
`--mode medlane` (the authors' scorer, step by step); `--json OUT` writes the scores.
A flag the chosen source of references would ignore is refused (exit 2); so are empty inputs.

`evaluate stage` (the DVC `evaluate` stage, training/evaluate_stage.py): scores
`out/models/<model>/predictions/<split>.txt` for every model in `evaluate.models` in both
modes, writes `--metrics DIR` (`DIR/<model>.json`, like the paper's Table 3) and `--plots`
(AScore etc. per source-length bucket).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from medsimp.cli.args import global_options
from medsimp.inputs import read_lines
from training.evaluate_stage import medlane_items  # files mode reads MedLane files as the stage does

if TYPE_CHECKING:
    from medsimp.params_schema import Evaluate
    from training.evaluation import Scorer


LANGUAGES = ("en", "es", "fr", "fa")  # params_schema.Evaluate.lang
HELP = "score outputs with the metrics --select or params evaluate.select names; all of docs/metrics.md when neither does"


def _add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """The options both subcommands take: which metrics, which mode, ROUGE's tokens."""
    parser.add_argument(
        "--mode",
        choices=("default", "medlane"),
        default=None,
        help="default: corrected metrics; medlane: the authors' scorer (stage: both unless given)",
    )
    parser.add_argument(
        "--select",
        help="comma-separated metrics to compute (default: params evaluate.select, null = all): "
        + ", ".join(_metric_names()),
    )
    parser.add_argument(
        "--rouge-tokenizer",
        choices=("nltk", "rouge-score"),
        default="nltk",
        help="ROUGE's tokens: nltk (lowercased NLTK Treebank, punctuation kept; default) or "
        "rouge-score (rouge-score's own default: lowercase, alphanumeric runs)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    files = sub.add_parser(
        "files",
        help="score system output files against --ref files, a MedLane file or a builder's split",
        parents=[global_options(2)],
    )
    _add_file_arguments(files)
    _add_scoring_options(files)
    stage = sub.add_parser(
        "stage",
        help="score every model of params evaluate.models (the DVC `evaluate` stage)",
        parents=[global_options(2)],
    )
    stage.add_argument(
        "--metrics",
        required=True,
        help="folder for the headline metrics, one <model>.json each: MedLane BLEU, SARI, FKGL, "
        "AScore (metrics/eval)",
    )
    stage.add_argument(
        "--plots", required=True, help="per-length-bucket plot data (plots/length_buckets.json)"
    )
    stage.add_argument(
        "--scores", help="every score of every model and mode, signatures, scales (out/eval/scores.json)"
    )
    _add_scoring_options(stage)


def _add_file_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--hyp",
        required=True,
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
    parser.add_argument("--json", help="write the scores here (- = stdout)")
    parser.add_argument(
        "--sentence-level",
        metavar="FILE",
        help="also write per-line scores here as JSON Lines (BLEU, ROUGE-L, SARI, FKGL, HIT, CWR, AScore "
        "of each output line alone; default mode)",
    )
    parser.add_argument(
        "--lang",
        choices=LANGUAGES,
        help="the outputs' and references' language (default: params evaluate.lang, en): picks the "
        "readability formula (en fkgl, es fernandez_huerta, fr kandel_moles, fa none)",
    )
    parser.add_argument(
        "--src-lang",
        choices=LANGUAGES,
        help="the sources' language (default: params evaluate.src_lang, else --lang); when it differs, "
        "SARI, HIT and AScore are refused (null + note)",
    )
    parser.add_argument(
        "--allow-cross-lingual",
        action="store_true",
        default=None,
        help="compute SARI, HIT and AScore across languages anyway, flagged in the table and JSON "
        "(params evaluate.allow_cross_lingual)",
    )
    parser.add_argument(
        "--measures",
        action="store_true",
        help="also the EASSE and copy measures, Cao et al.'s style accuracy, perplexity and "
        "UMLS-masked edit distance (when params evaluate.style_data / perplexity_model / umls_index "
        "are set) and the length-bucket breakdown (needs sources)",
    )


def _metric_names() -> tuple[str, ...]:
    from medsimp.metrics import names

    return names()


def _check_flags(args: argparse.Namespace) -> None:
    """Refuse a flag the chosen source of references would ignore (one line, exit 2)."""
    from medsimp.errors import UsageError

    given = lambda *names: [f"--{n}" for n in names if getattr(args, n)]  # noqa: E731
    unused = []
    if args.medlane:
        unused += given("ref", "src", "dataset", "config")
    elif args.dataset:
        unused += given("ref", "src")
        if not args.config:
            raise UsageError("--dataset needs --config (e.g. --dataset builders/multicochrane --config en)")
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


def _select(args: argparse.Namespace) -> list[str] | None:
    """`--select` as a list (None: params evaluate.select); an unknown metric is a usage error."""
    from medsimp.errors import UsageError
    from medsimp.metrics import selection

    select = [m.strip() for m in args.select.split(",") if m.strip()] if args.select else None
    try:
        selection(select if select is not None else args.params_data.evaluate.select)
    except ValueError as exc:
        raise UsageError(f"--select: {exc}") from None
    return select


def run(args: argparse.Namespace) -> int:
    from medsimp.errors import InputError

    select = _select(args)
    options: dict = {"rouge_tokenizer": args.rouge_tokenizer}
    if args.action == "files":
        options.update(
            lang=args.lang,
            src_lang=args.src_lang,
            allow_cross_lingual=args.allow_cross_lingual,
            not_clinical=_not_clinical(args),
        )
    from_file = Path(args.params).is_file()
    if args.action == "stage":
        from medsimp.stats import finish_stage
        from training.evaluate_stage import run_stage

        result = run_stage(
            args.params_data,
            args.params_dir,
            metrics_dir=args.metrics,
            plots=args.plots,
            scores=args.scores,
            mode=args.mode,
            select=select,
            options=options,
            from_file=from_file,
        )
        finish_stage(result.title, result.summary, ())
        return 0
    from medsimp.atomic import check_file_target
    from training.evaluation import Scorer

    _check_flags(args)
    if args.json and not _stdout(args.json):
        check_file_target(args.json)  # refuse a file medsimp did not write before scoring
    cfg = args.params_data.evaluate
    p = args.params_data
    scorer = Scorer(cfg, p.train, p.notes, args.params_dir, select, p.link, options, from_file=from_file)
    try:
        return _run_files(args, scorer, cfg)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _not_clinical(args: argparse.Namespace) -> str | None:
    """What `--dataset` is when its card does not tag it `clinical` (the default abbreviation
    dictionary then does not fit it; docs/metrics.md); None for clinical builders, MedLane files
    and `--ref` files (the user's own data)."""
    if not args.dataset:
        return None
    from medsimp.errors import InputError
    from medsimp.report.data import read_card

    try:
        tags = read_card(Path(args.dataset)).get("tags") or []
    except InputError:
        tags = []  # no card: load_pairs reports a folder that is not a builder
    return None if "clinical" in tags else f"{args.dataset.rstrip('/')} (its card is not tagged clinical)"


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


def _run_files(args: argparse.Namespace, scorer: Scorer, cfg: Evaluate) -> int:
    import json
    import sys

    from medsimp.errors import InputError, UsageError
    from medsimp.report.evaluate import print_bootstrap, print_table, write_report
    from training.evaluate_files import (
        check_dataset_language,
        check_languages,
        check_row_order,
        dataset_items,
        file_items,
        paired_bootstraps,
    )

    mode = args.mode or "default"
    if mode == "medlane" and scorer.lang_tag:
        raise UsageError(
            f"--mode medlane is the MedLane authors' English scorer; the outputs are {scorer.lang} and the "
            f"sources {scorer.src_lang} (--lang/--src-lang, params evaluate.lang): use --mode default"
        )
    if args.sentence_level and (mode != "default" or args.medlane):
        raise UsageError("--sentence-level scores --hyp against --ref/--src in --mode default")
    check_dataset_language(args.dataset, args.config, scorer.lang)
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
            items = dataset_items(
                args.dataset, args.config, args.split, args.params_data.train.data, len(hyps)
            )
            check_row_order(
                path,
                hyps,
                items,
                f"--dataset {args.dataset} --config {args.config} --split {args.split or 'test'}",
            )
        else:
            items = file_items(args.ref, args.src, len(hyps))
        if not items:
            raise InputError(
                f"nothing to score: --hyp {path} has {len(hyps)} lines and the evaluation "
                "set has no usable record"
            )
        if cfg.check_language:
            check_languages(path, hyps, items, scorer.lang, scorer.src_lang)
        hyp_lists[name] = hyps
        results[name] = scorer.evaluate(
            hyps,
            items,
            mode,
            extras=args.measures,  # --report shows what was asked for, no more
            bucket_edges=cfg.length_buckets,
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
    not_tested: dict[str, dict[str, str]] = {}  # pair -> metric -> why it is not in the bootstrap
    bootstrap = paired_bootstraps(scorer, hyp_lists, items, cfg, not_tested) if len(systems) > 1 else {}
    if args.sentence_level:
        rows = [
            {"system": name, **row}
            for name, hyps in hyp_lists.items()
            for row in scorer.per_sentence(hyps, items)
        ]
        _write(
            args.sentence_level,
            "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows),
        )
    if len(systems) == 1:
        result = next(iter(results.values()))
        if args.json:
            _write(args.json, {**result.as_dict(), "not_scored": not_scored})
        title = f"evaluate ({mode}, n={len(items)})"
    else:
        if args.json:
            _write(
                args.json,
                {
                    "mode": mode,
                    "n": len(items),
                    "names": list(results),
                    "systems": {n: r.as_dict() for n, r in results.items()},
                    "bootstrap": bootstrap,
                    "bootstrap_skipped": not_tested,
                    "not_scored": not_scored,
                },
            )
        title = f"evaluate ({mode}, n={len(items)}, {len(systems)} systems)"
    # results on stdout unless --json - took it (then the table goes to stderr)
    table_out = sys.stderr if _stdout(args.json) or _stdout(args.sentence_level) else sys.stdout
    if scorer.lang_tag:
        title = f"{title[:-1]}, {scorer.lang_tag})"
    print_table(
        title,
        {n: {**r.scores, **r.extra.get("measures", {})} for n, r in results.items()},
        table_out,
        set(scorer.flagged),
    )
    if bootstrap:
        print_bootstrap(bootstrap, table_out)
    for pair, skipped in not_tested.items():
        for metric, why in skipped.items():
            print(f"note: {metric} not in the paired bootstrap ({pair}): {why}", file=sys.stderr)
    for name, r in results.items():
        print(f"signature{'' if len(results) == 1 else ' ' + name}: {r.signature}", file=sys.stderr)
    for measure, why in scorer.unavailable.items():
        print(f"note: {measure} not computed (null): {why}", file=sys.stderr)
    for measure, why in scorer.flagged.items():
        print(f"note: {measure} (cross-lingual): {why}", file=sys.stderr)
    if args.report:
        write_report(args.report, results, bootstrap, items, hyp_lists, args.report_text)
    return 0


def _stdout(path: str | None) -> bool:
    """`-` (and /dev/stdout) name standard output."""
    return path in ("-", "/dev/stdout")


def _write(path: str, content) -> None:
    """JSON (a dict) or text to `path`, or to stdout for `-` / `/dev/stdout`."""
    import json
    import sys

    from medsimp.atomic import write_json, write_text

    if _stdout(path):
        text = content if isinstance(content, str) else json.dumps(content, indent=2, sort_keys=True) + "\n"
        sys.stdout.write(text)
        sys.stdout.flush()
    elif isinstance(content, str):
        write_text(path, content)
    else:
        write_json(path, content)
