"""`medsimp align files`: sentence lists aligned by a model loaded once, and its batch file."""

from __future__ import annotations

from pathlib import Path

from alignment import vecalign
from alignment.crf import CRFAligner
from alignment.encoders import PairEncoders, make_encoder
from medsimp.atomic import check_file_target
from medsimp.errors import UsageError
from medsimp.inputs import read_lines
from medsimp.params_schema import Align


class FileAligner:
    """`align files`' aligner: the chosen model (the CRF, or Vecalign's encoders) loaded once,
    then any number of sentence-list pairs aligned with it."""

    def __init__(self, method: str, params: Align, model_dir: str | None, cache: str | None):
        self.method = method
        cache = cache or None
        if method == "crf":
            crf_p = params.crf
            enc = make_encoder(crf_p.encoder, cache)
            self.model = CRFAligner.load(model_dir or params.model, enc, crf_p.merge)
        else:
            self.encoders = PairEncoders(params.vecalign.encoder, cache)
            self.vec_params = params.vecalign

    def align(self, src: list[str], tgt: list[str], src_lang: str, tgt_lang: str):
        if self.method == "crf":
            res = self.model.align(src, tgt, src_lang)
            return res.blocks, res.block_scores
        vec = vecalign.align(
            src,
            tgt,
            self.encoders.for_pair(src_lang, tgt_lang),
            src_lang=src_lang,
            tgt_lang=tgt_lang,
            params=self.vec_params,
        )
        return vec.blocks, vec.scores


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
