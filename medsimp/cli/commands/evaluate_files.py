"""`medsimp evaluate files`: score system output files against reference files (`--ref`, `--src`),
a MedLane-format evaluation file (`--medlane`, `--split`) or a builder config's split (`--dataset`,
`--config`, `--split`); print the table (and the paired bootstrap for several systems), write
`--json`, `--sentence-level`, `--report`. The work is `medsimp.evaluation.files.evaluate_files`
(files in an object store: `medsimp.evaluation.store`).
"""

from __future__ import annotations

import argparse
import typing
from pathlib import Path

from medsimp.params_choices import Language

if typing.TYPE_CHECKING:
    from medsimp.params_schema import Params

LANGUAGES = typing.get_args(Language)  # params `evaluate.lang`


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    # fmt: off
    add("--hyp", required=True, action="append", default=[], help="system output, one sentence per line "
        "(repeatable to compare systems; a folder = its *.txt; - = stdin; s3://bucket/x.txt: read from a copy)")
    add("--name", action="append", default=[], help="system name per --hyp (default: file stem)")
    add("--report", help="write a self-contained HTML report here (metric table, charts, bootstrap)")
    add("--report-text", action="store_true", help="include a sample of source/reference/output text in "
        "the report (it may be MIMIC-derived: the report then carries a do-not-share banner)")
    add("--ref", action="append", default=[], help="reference file (repeatable; - = stdin)")
    add("--src", help="source file (needed for SARI and default-mode HIT; - = stdin)")
    add("--medlane", help="MedLane-format evaluation file (sources, references, terms)")
    add("--dataset", help="a builder of (complex, simple) pairs, e.g. builders/multicochrane (with --config, "
        "--split): sources and references in the order `medsimp train --dataset` predicts them")
    add("--config", help="the builder config, e.g. en (with --dataset)")
    add("--split", choices=("validation", "test"), help="with --medlane: the authors' first (validation) or "
        "second (test) half; with --dataset: the builder's split (default test)")
    add("--json", help="write the scores here (- = stdout); this, --sentence-level and --report may be "
        "s3:// files of one folder, published there unless an input is MIMIC-derived (docs/refresh.md)")
    add("--sentence-level", metavar="FILE", help="also write per-line scores here as JSON Lines (BLEU, "
        "ROUGE-L, SARI, FKGL, HIT, CWR, AScore of each output line alone; default mode)")
    add("--lang", choices=LANGUAGES, help="the outputs' and references' language (default: params "
        "evaluate.lang, en): picks the readability formula (en fkgl, es fernandez_huerta, fr kandel_moles, fa none)")
    add("--src-lang", choices=LANGUAGES, help="the sources' language (default: params evaluate.src_lang, "
        "else --lang); when it differs, SARI, HIT and AScore are refused (null + note)")
    add("--allow-cross-lingual", action="store_true", default=None, help="compute SARI, HIT and AScore "
        "across languages anyway, flagged in the table and JSON (params evaluate.allow_cross_lingual)")
    add("--measures", action="store_true", help="also the EASSE and copy measures, Cao et al.'s style "
        "accuracy, perplexity and UMLS-masked edit distance (when params evaluate.style_data / perplexity_model / "
        "umls_index are set) and the length-bucket breakdown (most of them need sources: null with why without)")
    # fmt: on


def run(args: argparse.Namespace, params: Params, select: list[str] | None) -> int:
    """Score every `--hyp` against the same evaluation set (`medsimp.evaluation.files`); `params`:
    the params with the flags applied. The flags are checked before the scoring code is
    imported (a refused command line costs no start-up)."""
    from medsimp.evaluation import files

    against = files.Against(args.medlane, args.dataset, args.config, args.split, tuple(args.ref), args.src)
    request = files.FilesRequest(
        files.systems_of(args.hyp, args.name), against, args.mode or "default", args.measures,
        args.json, args.sentence_level, args.report, args.report_text,
    )  # fmt: skip
    files.evaluate_files(
        request,
        params,
        args.params_dir,
        select,
        Path(args.params).is_file(),
        files.not_clinical(args.dataset),
    )
    return 0
