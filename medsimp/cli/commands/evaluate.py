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
from training.evaluate_stage import MedLaneEval, medlane_items

if TYPE_CHECKING:
    from medsimp.params_schema import Evaluate
    from training.evaluation import Scorer

__all__ = ["MedLaneEval", "medlane_items"]  # files mode reads MedLane files as the stage does

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


def dataset_items(args: argparse.Namespace, n: int):
    """The `--split` of a builder config as `medsimp train --dataset` loads it (same order)."""
    from medsimp.errors import InputError
    from training.data import load_pairs

    data = args.params_data.train.data
    try:
        splits = load_pairs(
            f"{args.dataset.rstrip('/')}/{args.config}",
            data.complex_column,
            data.simple_column,
            float(data.validation_fraction),
            float(data.test_fraction),
            data.resplit,
        )
    except (FileNotFoundError, KeyError, ValueError) as exc:  # pyarrow: a missing column is ValueError
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"--dataset {args.dataset} --config {args.config}: {reason}") from None
    items = splits.eval[args.split or "test"]
    if len(items) != n:
        raise InputError(f"--hyp has {n} lines but the {args.split or 'test'} split has {len(items)} pairs")
    return items


def check_languages(path: str, hyps: list[str], items, lang: str, src_lang: str) -> None:
    """Refuse outputs (or sources) that read as another language than `--lang` (`--src-lang`):
    every language-specific score would be another language's formula (medsimp.text.language)."""
    from medsimp.errors import UsageError
    from medsimp.text.language import detect

    for what, lines, claimed, flag in (
        (f"--hyp {path}", hyps, lang, "--lang"),
        ("the sources", [i.source for i in items], src_lang, "--src-lang"),
    ):
        found = detect(lines)
        if found.lang is not None and found.lang != claimed:
            raise UsageError(
                f"{what} read as {found.lang} (py3langid, p={found.probability:.2f}) but {flag} is "
                f"{claimed} (params evaluate.{'lang' if flag == '--lang' else 'src_lang'}): give {flag} "
                f"{found.lang}, or set evaluate.check_language false if the detection is wrong"
            )


def check_row_order(path: str, hyps: list[str], items, where: str) -> None:
    """Refuse outputs that do not follow the rows' order (medsimp.metrics.roworder)."""
    from medsimp.errors import InputError
    from medsimp.metrics.roworder import MIN_SHARE, own_row_share

    match = own_row_share(hyps, [i.source for i in items], [i.references for i in items])
    if match.share < MIN_SHARE:
        raise InputError(
            f"--hyp {path}: only {match.share:.0%} of its {match.informative} lines with words are closest "
            f"to their own row of {where}; the outputs follow another order (they must follow the rows "
            "as load_dataset(...)[split] yields them), so nothing was scored"
        )


def file_items(refs: list[str], src: str | None, n: int):
    from medsimp.errors import InputError
    from medsimp.metrics.scoring import EvalItem

    ref_lines = [read_lines(r, "--ref") for r in refs]
    src_lines = read_lines(src, "--src") if src else [None] * n
    for name, lines in [("--src", src_lines), *[(r, x) for r, x in zip(refs, ref_lines)]]:
        if len(lines) != n:
            raise InputError(f"{name} has {len(lines)} lines but --hyp has {n}")
    return [EvalItem(src_lines[i], [r[i] for r in ref_lines]) for i in range(n)]


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


def dataset_language(dataset: str, config: str) -> str | None:
    """The language of a builder config's simple side (its `language` column), when it holds
    one language; None when it holds none, several, or no such column."""
    import pyarrow.parquet as pq

    found: set[str] = set()
    for path in sorted((Path(dataset) / config).glob("*.parquet")):
        if "language" not in pq.read_schema(path).names:
            return None
        found.update(v for v in pq.read_table(path, columns=["language"]).column(0).to_pylist() if v)
    return found.pop() if len(found) == 1 else None


def check_dataset_language(args: argparse.Namespace, lang: str) -> None:
    """UsageError when `--dataset --config` holds outputs' references in another language than
    `--lang`: the readability formula and the cross-lingual rules follow `--lang`, so scoring
    French references as English would be silently wrong."""
    from medsimp.errors import UsageError

    found = dataset_language(args.dataset, args.config) if args.dataset and args.config else None
    if found and found != lang:
        raise UsageError(
            f"--dataset {args.dataset} --config {args.config} holds {found} references but the outputs' "
            f"language is {lang} (--lang, params evaluate.lang): give --lang {found} and --src-lang for "
            "the complex side (MultiCochrane: en)"
        )


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

    mode = args.mode or "default"
    if mode == "medlane" and scorer.lang_tag:
        raise UsageError(
            f"--mode medlane is the MedLane authors' English scorer; the outputs are {scorer.lang} and the "
            f"sources {scorer.src_lang} (--lang/--src-lang, params evaluate.lang): use --mode default"
        )
    if args.sentence_level and (mode != "default" or args.medlane):
        raise UsageError("--sentence-level scores --hyp against --ref/--src in --mode default")
    check_dataset_language(args, scorer.lang)
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
    bootstrap = _bootstrap(scorer, hyp_lists, items, cfg, not_tested) if len(systems) > 1 else {}
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
        _write_report(args, results, bootstrap, items, hyp_lists)
    return 0


def _bootstrap(
    scorer: Scorer, hyp_lists: dict[str, list[str]], items, cfg: Evaluate, skipped: dict[str, dict[str, str]]
) -> dict:
    """Paired bootstrap of the first system against each other one ('A vs B': B - A), for every
    selected metric with a sentence reading (medsimp.metrics.significance). A metric left out
    of a pair because a sentence score is undefined goes, with the reason, into `skipped[pair]`."""
    from medsimp.metrics.significance import paired_bootstrap

    names = list(hyp_lists)
    why_base: dict[str, str] = {}
    base = scorer.significance_stats(hyp_lists[names[0]], items, why_base)
    out = {}
    for n in names[1:]:
        why_other: dict[str, str] = {}
        other = scorer.significance_stats(hyp_lists[n], items, why_other)
        why = {**{m: f"{names[0]}: {w}" for m, w in why_base.items()},
               **{m: f"{n}: {w}" for m, w in why_other.items() if m not in why_base}}  # fmt: skip
        if why:
            skipped[f"{names[0]} vs {n}"] = dict(sorted(why.items()))
        out[f"{names[0]} vs {n}"] = paired_bootstrap(
            {m: (base[m][0], base[m][1], other[m][1]) for m in base if m in other},
            cfg.bootstrap_samples,
            cfg.bootstrap_seed,
        )
    return out


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


def _console(file):
    """A rich console as wide as the terminal: `COLUMNS` when set, else the terminal's width
    (80 when not a terminal)."""
    import os

    from rich.console import Console

    width = None
    if os.environ.get("COLUMNS", "").isdigit():
        width = int(os.environ["COLUMNS"])
    elif not file.isatty():
        width = 80
    return Console(file=file, width=width, highlight=False, soft_wrap=False)


def print_table(title: str, systems: dict[str, dict], file, flagged: set[str] | None = None) -> None:
    """One row per reported value (named with its scale), one column per system in the order
    given; cells never wrap (the metric name folds when the terminal is narrow). A value of a
    `flagged` metric (computed across languages on request) is labelled `[cross-lingual]`."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from medsimp.metrics import metric_of
    from training.evaluation import SCALES

    keys = list(dict.fromkeys(k for scores in systems.values() for k in scores))
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), show_edge=False)
    table.add_column("metric (scale)", overflow="fold", ratio=1)
    for name in systems:
        table.add_column(name, justify="right", no_wrap=True, overflow="ellipsis")
    for key in keys:
        label = f"{key} ({SCALES[key]})" if key in SCALES else key
        metric = metric_of(key)
        if flagged and metric is not None and metric.name in flagged:
            label += " [cross-lingual]"
        table.add_row(escape(label), *(_cell(scores.get(key)) for scores in systems.values()))
    _console(file).print(table)


def print_bootstrap(bootstrap: dict, file) -> None:
    """The paired bootstrap per pair and metric (p-values below 0.001 as `< 0.001`)."""
    from rich import box
    from rich.table import Table

    from medsimp.metrics.significance import format_p

    table = Table(
        title="paired bootstrap (B - A)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        show_edge=False,
    )
    for col in ("pair", "metric", "delta", "p", "95% CI", "Wilcoxon p"):
        table.add_column(col, justify="left" if col in ("pair", "metric") else "right", overflow="fold")
    for pair, res in bootstrap.items():
        for m, v in res.items():
            table.add_row(
                pair,
                m,
                f"{v['delta']:g}",
                format_p(v["p_value"]),
                f"[{v['ci_low']:g}, {v['ci_high']:g}]",
                format_p(v["wilcoxon_p"]),
            )
    _console(file).print(table)


def _cell(value) -> str:
    return "null" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _write_report(args: argparse.Namespace, results: dict, bootstrap: dict, items, hyp_lists: dict) -> None:
    """The self-contained HTML report; output text only with --report-text (may be MIMIC-derived)."""
    from medsimp.atomic import write_text
    from medsimp.report.evaluate import render
    from training.evaluation import SCALES

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
