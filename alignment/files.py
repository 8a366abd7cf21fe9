"""`medsimp align files` as one stage function (`align_files`) and its batch file (the aligners
themselves: `alignment.aligners`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from alignment import aligners
from alignment.gold import read_blocks
from alignment.score import format_block, vecalign_scores
from medsimp.atomic import atomic_file, check_file_target
from medsimp.errors import UsageError
from medsimp.inputs import read_lines
from medsimp.params_schema import Align


@dataclass(frozen=True)
class FilePairs:
    """What `align files` aligns: `src` and `tgt` (sentence-per-line files, `-` = stdin) or the
    pairs of a `batch` file, in `src_lang` -> `tgt_lang`; `gold`: Vecalign-format gold of
    src/tgt (strict and lax P/R/F1 on stderr)."""

    src: str | None = None
    tgt: str | None = None
    src_lang: str = "en"
    tgt_lang: str = "en"
    gold: list[str] | None = None
    batch: str | None = None


def align_files(inputs: FilePairs, method: str, params: Align, model: str | None, cache: str | None) -> None:
    """Align with the aligner `method` (`alignment.aligners`; `model`: the CRF's folder, None:
    params align.model): Vecalign-style `[i, j]:[k]:score` lines on stdout, or one output file
    per batch line."""
    if inputs.gold and len(inputs.gold) > 1:
        raise UsageError("align files takes one --gold (several are for align train)")
    jobs = batch_jobs(inputs.batch) if inputs.batch else []  # checked before the model loads
    aligner = aligners.load(method, params, model, cache)
    try:  # the languages are the same for every pair of the run: check them once, up front
        aligner.check(inputs.src_lang, inputs.tgt_lang)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if inputs.batch:
        for src, tgt, out in jobs:
            blocks, scores = aligner.align(
                read_lines(src, "--batch"), read_lines(tgt, "--batch"), inputs.src_lang, inputs.tgt_lang
            )
            with atomic_file(out) as tmp:
                tmp.write_text(
                    "".join(format_block(b, s) + "\n" for b, s in zip(blocks, scores)), encoding="utf-8"
                )
        print(f"aligned {len(jobs)} document pairs", file=sys.stderr)
        return
    if not (inputs.src and inputs.tgt):
        raise UsageError("align files needs --src and --tgt (or --batch)")
    blocks, scores = aligner.align(
        read_lines(inputs.src, "--src"), read_lines(inputs.tgt, "--tgt"), inputs.src_lang, inputs.tgt_lang
    )
    for b, s in zip(blocks, scores):
        print(format_block(b, s))
    if inputs.gold:
        res = vecalign_scores([read_blocks(inputs.gold[0])], [blocks])
        print(" ---------------------------------\n|             |  Strict |    Lax  |", file=sys.stderr)
        for name in ("precision", "recall", "f1"):
            print(
                f"| {name.capitalize():<11} |   {res[name + '_strict']:.3f} |   {res[name + '_lax']:.3f} |",
                file=sys.stderr,
            )


def batch_jobs(batch: str) -> list[tuple[str, str, str]]:
    """(src, tgt, out) per line of a batch file, all checked before anything is written: an
    output may not be an input of the batch, repeat another output, or replace a file
    medsimp did not write (UsageError, exit 2)."""
    jobs = []
    for lineno, line in enumerate(read_lines(batch, "--batch"), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise UsageError(f"{batch}:{lineno}: expected src<TAB>tgt<TAB>out")
        jobs.append((parts[0], parts[1], parts[2]))
    inputs = {Path(p).resolve() for src, tgt, _ in jobs for p in (src, tgt)} | {Path(batch).resolve()}
    outs: set[Path] = set()
    for n, (_, _, out) in enumerate(jobs, 1):
        where = Path(out).resolve()
        if where in inputs or where in outs:
            raise UsageError(f"{batch}: output {n} ({out}) is an input or another output of the batch")
        outs.add(where)
        check_file_target(out)
    return jobs
