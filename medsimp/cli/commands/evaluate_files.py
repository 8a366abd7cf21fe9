"""`medsimp evaluate files`: score system output files against reference files (`--ref`, `--src`),
a MedLane-format evaluation file (`--medlane`, `--split`) or a builder config's split (`--dataset`,
`--config`, `--split`); print the table (and the paired bootstrap for several systems), write
`--json`, `--sentence-level`, `--report`. The scoring lives in training/evaluate_files.py.
"""

from __future__ import annotations

import argparse
import typing
from pathlib import Path

from medsimp.params_choices import Language

if typing.TYPE_CHECKING:
    from medsimp.params_choices import ScoringMode

LANGUAGES = typing.get_args(Language)  # params `evaluate.lang`


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
        "are set) and the length-bucket breakdown (most of them need sources: null with why without)",
    )


def check_flags(args: argparse.Namespace) -> None:
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


def run(args: argparse.Namespace, select: list[str] | None, options: dict) -> int:
    """Score every `--hyp` against the same evaluation set and report it. The flags are checked
    before the scoring code is imported (a refused command line costs no start-up)."""
    import sys

    from medsimp.atomic import check_file_target, is_stdout
    from medsimp.errors import InputError, UsageError

    check_flags(args)
    from medsimp.report.evaluate import print_results, write_out, write_report
    from training.evaluate_files import Against, check_dataset_language, score_systems
    from training.evaluation import Scorer

    if args.json and not is_stdout(args.json):
        check_file_target(args.json)  # refuse a file medsimp did not write before scoring
    p, cfg = args.params_data, args.params_data.evaluate
    mode: ScoringMode = args.mode or "default"
    options = {**options, "lang": args.lang, "src_lang": args.src_lang,
               "allow_cross_lingual": args.allow_cross_lingual, "not_clinical": _not_clinical(args)}  # fmt: skip
    scorer = Scorer(
        cfg, p.train, p.notes, args.params_dir, select, p.link, options, from_file=Path(args.params).is_file()
    )
    try:  # a ValueError from the data (a bad file, a mismatch) is bad input: one line
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
        against = Against(args.medlane, args.dataset, args.config, args.split, tuple(args.ref), args.src)
        scored = score_systems(systems, against, scorer, cfg, p.train.data, mode, extras=args.measures)
        bootstrap, not_tested = scored.bootstrap(scorer, cfg)
        if args.sentence_level:
            write_out(args.sentence_level, scored.sentence_lines(scorer))
        if args.json:
            write_out(args.json, scored.as_json(bootstrap, not_tested))
        title = f"evaluate ({mode}, n={len(scored.items)}" + (
            f", {len(systems)} systems)" if len(systems) > 1 else ")"
        )
        # results on stdout unless --json - took it (then the table goes to stderr)
        out = sys.stderr if is_stdout(args.json) or is_stdout(args.sentence_level) else sys.stdout
        print_results(title, scored, bootstrap, not_tested, scorer, out)
        if args.report:
            write_report(
                args.report, scored.results, bootstrap, scored.items, scored.hyp_lists, args.report_text
            )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return 0


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
