"""`medsimp evaluate files`: the evaluation set (reference files, a MedLane file, a builder
config's split), the checks that outputs are in its language and its order, every system scored,
the paired bootstrap across systems, and what is written (`evaluate_files`, the stage function the
command calls). A check that fails is one line (UsageError / InputError): nothing is scored."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from medsimp.atomic import check_file_target, is_stdout
from medsimp.errors import InputError, UsageError
from medsimp.evaluation import store
from medsimp.evaluation.scorer import Evaluation, Scorer
from medsimp.evaluation.stage import medlane_items  # MedLane files are read as the stage reads them
from medsimp.inputs import read_lines
from medsimp.metrics.roworder import MIN_SHARE, own_row_share
from medsimp.metrics.scoring import EvalItem
from medsimp.metrics.significance import paired_bootstrap
from medsimp.params_schema import Evaluate, Params, ScoringMode, TrainData
from medsimp.report.data import read_card
from medsimp.text.language import detect
from training.data import load_pairs


def dataset_items(dataset: str, config: str, split: str | None, data: TrainData, n: int) -> list[EvalItem]:
    """The `split` (default test) of a builder config as `medsimp train --dataset` loads it (same
    order); `n`, the number of output lines, must match it."""
    try:
        splits = load_pairs(
            f"{dataset.rstrip('/')}/{config}",
            data.complex_column,
            data.simple_column,
            float(data.validation_fraction),
            float(data.test_fraction),
            data.resplit,
        )
    except (FileNotFoundError, KeyError, ValueError) as exc:  # pyarrow: a missing column is ValueError
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"--dataset {dataset} --config {config}: {reason}") from None
    items = splits.eval[split or "test"]
    if len(items) != n:
        raise InputError(f"--hyp has {n} lines but the {split or 'test'} split has {len(items)} pairs")
    return items


def check_languages(path: str, hyps: list[str], items, lang: str, src_lang: str) -> None:
    """Refuse outputs (or sources) that read as another language than `--lang` (`--src-lang`):
    every language-specific score would be another language's formula (medsimp.text.language)."""
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
    match = own_row_share(hyps, [i.source for i in items], [i.references for i in items])
    if match.share < MIN_SHARE:
        raise InputError(
            f"--hyp {path}: only {match.share:.0%} of its {match.informative} lines with words are closest "
            f"to their own row of {where}; the outputs follow another order (they must follow the rows "
            "as load_dataset(...)[split] yields them), so nothing was scored"
        )


def file_items(refs: list[str], src: str | None, n: int) -> list[EvalItem]:
    """`--ref` files (one or more) and `--src` as items; every file has the outputs' `n` lines."""
    ref_lines = [read_lines(r, "--ref") for r in refs]
    src_lines = read_lines(src, "--src") if src else [None] * n
    for name, lines in [("--src", src_lines), *[(r, x) for r, x in zip(refs, ref_lines)]]:
        if len(lines) != n:
            raise InputError(f"{name} has {len(lines)} lines but --hyp has {n}")
    return [EvalItem(src_lines[i], [r[i] for r in ref_lines]) for i in range(n)]


def dataset_language(dataset: str, config: str) -> str | None:
    """The language of a builder config's simple side (its `language` column), when it holds
    one language; None when it holds none, several, or no such column."""
    import pyarrow.parquet as pq  # only for a builder's split (--dataset)

    found: set[str] = set()
    for path in sorted((Path(dataset) / config).glob("*.parquet")):
        if "language" not in pq.read_schema(path).names:
            return None
        found.update(v for v in pq.read_table(path, columns=["language"]).column(0).to_pylist() if v)
    return found.pop() if len(found) == 1 else None


def check_dataset_language(dataset: str | None, config: str | None, lang: str) -> None:
    """UsageError when `--dataset --config` holds outputs' references in another language than
    `--lang`: the readability formula and the cross-lingual rules follow `--lang`, so scoring
    French references as English would be silently wrong."""
    found = dataset_language(dataset, config) if dataset and config else None
    if found and found != lang:
        raise UsageError(
            f"--dataset {dataset} --config {config} holds {found} references but the outputs' "
            f"language is {lang} (--lang, params evaluate.lang): give --lang {found} and --src-lang for "
            "the complex side (MultiCochrane: en)"
        )


def paired_bootstraps(
    scorer: Scorer, hyp_lists: dict[str, list[str]], items, cfg: Evaluate, skipped: dict[str, dict[str, str]]
) -> dict:
    """Paired bootstrap of the first system against each other one ('A vs B': B - A), for every
    selected metric with a sentence reading (medsimp.metrics.significance). A metric left out
    of a pair because a sentence score is undefined goes, with the reason, into `skipped[pair]`."""
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


@dataclass(frozen=True)
class Against:
    """What `evaluate files` scores outputs against: a MedLane file (`medlane`, its `split`), a
    builder config's split (`dataset`, `config`, `split`), or reference files (`refs`, `src`)."""

    medlane: str | None = None
    dataset: str | None = None
    config: str | None = None
    split: str | None = None
    refs: tuple[str, ...] = ()
    src: str | None = None

    def items(
        self, path: str, hyps: list[str], mode: ScoringMode, data: TrainData
    ) -> tuple[list[str], list, list[dict]]:
        """(the output lines scored, their items, the records not scored) for the outputs at `path`."""
        if self.medlane:
            evalset = medlane_items(self.medlane, self.split, mode)
            return evalset.align(hyps), evalset.items, evalset.rejects
        if self.dataset and self.config:
            items = dataset_items(self.dataset, self.config, self.split, data, len(hyps))
            where = f"--dataset {self.dataset} --config {self.config} --split {self.split or 'test'}"
            check_row_order(path, hyps, items, where)
            return hyps, items, []
        return hyps, file_items(list(self.refs), self.src, len(hyps)), []


@dataclass
class Scored:
    """Every system's `Evaluation`, its output lines, the shared items and the records not scored."""

    mode: ScoringMode
    results: dict[str, Evaluation] = field(default_factory=dict)
    hyp_lists: dict[str, list[str]] = field(default_factory=dict)
    items: list = field(default_factory=list)
    rejects: list[dict] = field(default_factory=list)

    def not_scored(self) -> list[dict]:
        return [{k: r[k] for k in ("locator", "reason")} for r in self.rejects]

    def bootstrap(self, scorer: Scorer, cfg: Evaluate) -> tuple[dict, dict[str, dict[str, str]]]:
        """The paired bootstraps of several systems ({} for one), and per pair the metrics left
        out of it with the reason."""
        not_tested: dict[str, dict[str, str]] = {}
        if len(self.results) < 2:
            return {}, not_tested
        return paired_bootstraps(scorer, self.hyp_lists, self.items, cfg, not_tested), not_tested

    def sentence_lines(self, scorer: Scorer) -> str:
        """`--sentence-level`: each system's per-line scores as JSON Lines."""
        rows = [
            {"system": name, **row}
            for name, hyps in self.hyp_lists.items()
            for row in scorer.per_sentence(hyps, self.items)
        ]
        return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)

    def as_json(self, bootstrap: dict, not_tested: dict) -> dict:
        """`--json`: one system's `Evaluation`, or every system's with the paired bootstrap."""
        if len(self.results) == 1:
            return {**next(iter(self.results.values())).as_dict(), "not_scored": self.not_scored()}
        return {
            "mode": self.mode,
            "n": len(self.items),
            "names": list(self.results),
            "systems": {n: r.as_dict() for n, r in self.results.items()},
            "bootstrap": bootstrap,
            "bootstrap_skipped": not_tested,
            "not_scored": self.not_scored(),
        }


def score_systems(
    systems: list[tuple[str, str]], against: Against, scorer: Scorer, cfg: Evaluate, data: TrainData,
    mode: ScoringMode, extras: bool,
) -> Scored:  # fmt: skip
    """Score each (name, output file) against the same evaluation set; the checks of outputs'
    language and order come first, and a system with nothing to score is an InputError."""
    scored = Scored(mode)
    for name, path in systems:
        hyps, items, scored.rejects = against.items(path, read_lines(path, "--hyp"), mode, data)
        if not items:
            raise InputError(
                f"nothing to score: --hyp {path} has {len(hyps)} lines and the evaluation set has no usable record"
            )
        if cfg.check_language:
            check_languages(path, hyps, items, scorer.lang, scorer.src_lang)
        scored.items, scored.hyp_lists[name] = items, hyps
        scored.results[name] = scorer.evaluate(
            hyps, items, mode, extras=extras, bucket_edges=cfg.length_buckets
        )
    if scored.rejects:
        reasons = sorted({r["reason"] for r in scored.rejects})
        shown = ", ".join(r["locator"] for r in scored.rejects[:5]) + (
            " ..." if len(scored.rejects) > 5 else ""
        )
        print(
            f"warning: {len(scored.rejects)} record(s) not scored ({', '.join(reasons)}; {shown}); "
            "their output lines were skipped",
            file=sys.stderr,
        )
    return scored


@dataclass(frozen=True)
class FilesRequest:
    """What `evaluate files` was asked: the systems (name, output file), what they are scored
    against, the mode, `measures` (the EASSE, copy and style measures too) and the outputs."""

    systems: list[tuple[str, str]]
    against: Against
    mode: ScoringMode = "default"
    measures: bool = False
    json: str | None = None
    sentence_level: str | None = None
    report: str | None = None
    report_text: bool = False


def evaluate_files(
    request: FilesRequest, params: Params, base: str | Path, select: list[str] | None,
    from_file: bool = True, not_clinical: str | None = None,
) -> Scored:  # fmt: skip
    """Score every system of `request` against the same evaluation set and report it: the
    table on standard output (standard error when `--json -` takes standard output), `--json`,
    `--sentence-level`, `--report`. `params`: its `evaluate` section with the command's flags
    over it; `base`: the params file's folder; `select`: as `Scorer` takes it; `not_clinical`: what the data is when it is known not to be clinical
    notes. A ValueError from the data (a bad file, a mismatch) is an InputError (one line).
    Inputs or outputs in an object store: `medsimp.evaluation.store`."""
    if store.uses_store(request):
        run = partial(evaluate_files, params=params, base=base, select=select, from_file=from_file,
                      not_clinical=not_clinical)  # fmt: skip
        return store.evaluate_in_store(request, params.beam, run)
    from medsimp.evaluation.report import print_results, write_out, write_report

    if request.json and not is_stdout(request.json):
        check_file_target(request.json)  # refuse a file medsimp did not write before scoring
    cfg, mode, against = params.evaluate, request.mode, request.against
    scorer = Scorer(cfg, params.train, params.notes, base, select, params.link, from_file, not_clinical)
    try:
        if mode == "medlane" and scorer.lang_tag:
            raise UsageError(
                f"--mode medlane is the MedLane authors' English scorer; the outputs are {scorer.lang} and the "
                f"sources {scorer.src_lang} (--lang/--src-lang, params evaluate.lang): use --mode default"
            )
        if request.sentence_level and (mode != "default" or against.medlane):
            raise UsageError("--sentence-level scores --hyp against --ref/--src in --mode default")
        check_dataset_language(against.dataset, against.config, scorer.lang)
        if (request.report or len(request.systems) > 1) and mode == "medlane":
            raise UsageError("comparing systems (several --hyp or --report) uses --mode default")
        scored = score_systems(
            request.systems, against, scorer, cfg, params.train.data, mode, request.measures
        )
        bootstrap, not_tested = scored.bootstrap(scorer, cfg)
        if request.sentence_level:
            write_out(request.sentence_level, scored.sentence_lines(scorer))
        if request.json:
            write_out(request.json, scored.as_json(bootstrap, not_tested))
        n_systems = len(request.systems)
        title = f"evaluate ({mode}, n={len(scored.items)}" + (
            f", {n_systems} systems)" if n_systems > 1 else ")"
        )
        # results on stdout unless --json - took it (then the table goes to stderr)
        out = sys.stderr if is_stdout(request.json) or is_stdout(request.sentence_level) else sys.stdout
        print_results(title, scored, bootstrap, not_tested, scorer, out)
        if request.report:
            write_report(
                request.report, scored.results, bootstrap, scored.items, scored.hyp_lists, request.report_text
            )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return scored


def not_clinical(dataset: str | None) -> str | None:
    """What `--dataset` is when its card does not tag it `clinical` (the default abbreviation
    dictionary then does not fit it; docs/metrics.md); None for clinical builders, MedLane files
    and `--ref` files (the user's own data)."""
    if not dataset:
        return None

    try:
        tags = read_card(Path(dataset)).get("tags") or []
    except InputError:
        tags = []  # no card: load_pairs reports a folder that is not a builder
    return None if "clinical" in tags else f"{dataset.rstrip('/')} (its card is not tagged clinical)"


def systems_of(hyp: list[str], names: list[str]) -> list[tuple[str, str]]:
    """(name, path) per `--hyp` (a folder stands for its *.txt files, named by stem); `--name`
    renames."""
    paths = [str(p) for h in hyp for p in (sorted(Path(h).glob("*.txt")) if Path(h).is_dir() else [h])]
    names = names or ["stdin" if p == "-" else Path(p).stem for p in paths]
    if len(names) != len(paths):
        raise UsageError(f"{len(names)} --name for {len(paths)} system output files: give one per --hyp")
    if len(set(names)) != len(names):
        raise UsageError(f"system names must differ: {', '.join(names)} (use --name)")
    return list(zip(names, paths))
