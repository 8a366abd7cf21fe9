"""Sentence alignment: neural CRF (English complex -> simple) and Vecalign (cross-lingual).

File mode (sentence-per-line files; prints Vecalign-style `[i, j]:[k]:score` lines, 0-based,
`[]` for an insertion or deletion; with --gold, strict and lax P/R/F1 as Vecalign's scorer):
    medsimp align --method vecalign --src doc.de --tgt doc.fr --src-lang de --tgt-lang fr [--gold g.txt]
    medsimp align --method crf --src abstract.txt --tgt pls.txt [--model DIR]
    medsimp align --method vecalign --batch pairs.tsv      # src<TAB>tgt<TAB>out per line, models load once
Corpus mode (Beam; `--input` holds sentences/*.parquet from `medsimp cochrane`):
    medsimp align --input out/cochrane --output out/align --metrics metrics/align.json
Training the CRF on gold alignments (jsonl DocPairs, PLABA json, MC-CLEAN json, wiki-auto tsv):
    medsimp align --train --gold data/sample/align_gold.jsonl --output out/models/crf_aligner
For CRF the source is the complex side, the target the simple side. Knobs: params `align`.
"""

from __future__ import annotations

import argparse
import sys

from medsimp.cli_args import add_beam_arguments, warm_beam_workers
from medsimp.inputs import read_lines

HELP = "align sentences (CRF / Vecalign): files, a corpus (Beam), or train the CRF"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--method", choices=["crf", "vecalign"], default="crf", help="file mode aligner")
    parser.add_argument("--src", help="source sentences, one per line (complex side for crf; - = stdin)")
    parser.add_argument("--tgt", help="target sentences, one per line (simple side for crf; - = stdin)")
    parser.add_argument("--src-lang", default="en", help="language of --src (default: en)")
    parser.add_argument("--tgt-lang", default="en", help="language of --tgt (default: en)")
    parser.add_argument(
        "--gold",
        help="file mode: gold alignments (Vecalign format); "
        "--train: gold document pairs (default: params align.gold)",
    )
    parser.add_argument("--gold-format", default=None, help="auto, jsonl, plaba, mc_clean, wiki_auto")
    parser.add_argument("--batch", help="tsv of src path, tgt path, output path: align many pairs")
    parser.add_argument("--model", help="CRF model directory (default: params align.model)")
    parser.add_argument("--train", action="store_true", help="train the CRF on --gold into --output")
    parser.add_argument("--input", help="corpus mode: stage output holding sentences/ (default: params)")
    parser.add_argument("--output", help="corpus mode output dir, or the model dir with --train")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


class _FileAligner:
    """Loads the chosen model once and aligns sentence-per-line files."""

    def __init__(self, method: str, params: dict, model_dir: str | None):
        from medsimp.alignment.crf import CRFAligner
        from medsimp.alignment.encoders import PairEncoders, make_encoder
        from medsimp.params_schema import default

        cache = params.get("_cache") or None
        self.method = method
        if method == "crf":
            crf_p = dict(params.get("crf", {}))
            enc = make_encoder(crf_p.get("encoder") or default("align.crf.encoder"), cache)
            self.model = CRFAligner.load(
                model_dir or params.get("model", "out/models/crf_aligner"),
                enc,
                {"merge": crf_p.get("merge", "union")},
            )
        else:
            vec_p = dict(params.get("vecalign", {}))
            self.encoders = PairEncoders(vec_p.pop("encoder", None), cache)
            self.vec_params = vec_p

    def align(self, src: list[str], tgt: list[str], src_lang: str, tgt_lang: str):
        if self.method == "crf":
            res = self.model.align(src, tgt, src_lang)
            return res.blocks, res.block_scores
        from medsimp.alignment import vecalign

        vec = vecalign.align(
            src,
            tgt,
            self.encoders.for_pair(src_lang, tgt_lang),
            src_lang=src_lang,
            tgt_lang=tgt_lang,
            params=self.vec_params,
        )
        return vec.blocks, vec.scores


def _batch_jobs(batch: str) -> list[tuple[str, str, str]]:
    """(src, tgt, out) per line of a batch file, all checked before anything is written: an
    output may not be an input of the batch, repeat another output, or replace a file
    medsimp did not write (UsageError, exit 2)."""
    from pathlib import Path

    from medsimp.errors import UsageError
    from medsimp.outputs import check_file_target

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


def _file_mode(args, params: dict) -> int:
    from medsimp.alignment.gold import read_blocks
    from medsimp.alignment.score import format_block, vecalign_scores
    from medsimp.outputs import atomic_file

    jobs = _batch_jobs(args.batch) if args.batch else []  # checked before the model loads
    aligner = _FileAligner(args.method, params, args.model)
    if args.method == "vecalign":
        try:  # the languages are the same for every pair of the run: check them once, up front
            aligner.encoders.for_pair(args.src_lang, args.tgt_lang)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.batch:
        for src, tgt, out in jobs:
            blocks, scores = aligner.align(
                read_lines(src, "--batch"), read_lines(tgt, "--batch"), args.src_lang, args.tgt_lang
            )
            with atomic_file(out) as tmp:
                tmp.write_text(
                    "".join(format_block(b, s) + "\n" for b, s in zip(blocks, scores)), encoding="utf-8"
                )
        print(f"aligned {len(jobs)} document pairs", file=sys.stderr)
        return 0
    if not (args.src and args.tgt):
        print("error: file mode needs --src and --tgt (or --batch)", file=sys.stderr)
        return 2
    blocks, scores = aligner.align(
        read_lines(args.src, "--src"), read_lines(args.tgt, "--tgt"), args.src_lang, args.tgt_lang
    )
    for b, s in zip(blocks, scores):
        print(format_block(b, s))
    if args.gold:
        res = vecalign_scores([read_blocks(args.gold)], [blocks])
        print(" ---------------------------------\n|             |  Strict |    Lax  |", file=sys.stderr)
        for name in ("precision", "recall", "f1"):
            print(
                f"| {name.capitalize():<11} |   {res[name + '_strict']:.3f} |   {res[name + '_lax']:.3f} |",
                file=sys.stderr,
            )
    return 0


def _train(args, params: dict) -> int:
    from medsimp.alignment.crf import CRFAligner
    from medsimp.alignment.encoders import make_encoder
    from medsimp.alignment.gold import read_gold
    from medsimp.alignment.score import pair_prf
    from medsimp.config import resolve_path
    from medsimp.errors import InputError
    from medsimp.outputs import atomic_dir, output_stats, print_summary, write_json, write_metrics
    from medsimp.params_schema import default

    gold = args.gold or resolve_path(params.get("gold", "data/sample/align_gold.jsonl"), args.params_dir)
    docs = read_gold(gold, args.gold_format or params.get("gold_format", "auto"))
    if not docs:
        raise InputError(f"no gold documents in {gold}")
    crf_p = dict(params.get("crf", {}))
    enc = make_encoder(crf_p.get("encoder") or default("align.crf.encoder"), params.get("_cache") or None)
    model = CRFAligner.train(docs, enc, crf_p)
    fit = pair_prf([set(d.pairs) for d in docs], [set(model.align(d.complex, d.simple).pairs) for d in docs])
    out = args.output or resolve_path(params.get("model", "out/models/crf_aligner"), args.params_dir)
    stats = {
        "documents": len(docs),
        "gold_pairs": sum(len(d.pairs) for d in docs),
        "train_f1": round(fit["f1"], 6),
        "train_precision": round(fit["precision"], 6),
        "train_recall": round(fit["recall"], 6),
        "encoder": enc.name,
        "cache_hits": enc.hits,
        "cache_misses": enc.misses,
    }
    with atomic_dir(out) as tmp:
        model.save(tmp)
        write_json(tmp / "stats.json", output_stats(stats))
    if args.metrics:
        write_metrics(args.metrics, stats, "align_train")
    print_summary("medsimp align --train", stats)
    return 0


# The flags each mode reads; a flag of another mode is refused rather than ignored.
_MODE_FLAGS = {
    "--train": {"gold", "gold_format", "output", "metrics", "model"},
    "file mode (--src/--tgt or --batch)": {
        "method",
        "src",
        "tgt",
        "src_lang",
        "tgt_lang",
        "gold",
        "batch",
        "model",
    },
    "corpus mode (--input)": {"input", "output", "metrics", "model", "beam_arg"},
}


def _check_flags(args: argparse.Namespace) -> None:
    """One line naming the flags the chosen mode would ignore (exit 2)."""
    from medsimp.errors import UsageError

    mode = (
        "--train"
        if args.train
        else "file mode (--src/--tgt or --batch)"
        if args.src or args.batch
        else "corpus mode (--input)"
    )
    defaults = {"method": "crf", "src_lang": "en", "tgt_lang": "en", "beam_arg": []}
    given = {
        dest
        for dest in (
            "method",
            "src",
            "tgt",
            "src_lang",
            "tgt_lang",
            "gold",
            "gold_format",
            "batch",
            "input",
            "output",
            "metrics",
            "beam_arg",
        )
        if getattr(args, dest) not in (None, defaults.get(dest))
    }
    unused = sorted(given - _MODE_FLAGS[mode])
    if unused:
        flags = ", ".join("--" + d.replace("_", "-") for d in unused)
        raise UsageError(f"{flags}: not used in {mode}; drop {'them' if len(unused) > 1 else 'it'}")


def run(args: argparse.Namespace) -> int:
    from medsimp.config import section

    _check_flags(args)
    params = dict(section(args.params_data, "align"))
    params["_cache"] = section(args.params_data, "cache").get("dir")
    if args.train:
        return _train(args, params)
    if args.src or args.batch:
        return _file_mode(args, params)
    return _corpus(args, params)


@warm_beam_workers
def _corpus(args: argparse.Namespace, params: dict) -> int:
    """The Beam job over a sentence table."""
    from medsimp.config import resolve_path, section
    from medsimp.outputs import atomic_dir
    from medsimp.pipelines import align_job

    params["model"] = args.model or resolve_path(
        params.get("model", "out/models/crf_aligner"), args.params_dir
    )
    cache = params.pop("_cache")
    with atomic_dir(args.output or resolve_path(params.get("output", "out/align"), args.params_dir)) as tmp:
        align_job.run(
            args.input or resolve_path(params.get("input", "out/cochrane"), args.params_dir),
            str(tmp),
            params,
            section(args.params_data, "beam"),
            args.beam_arg,
            args.metrics,
            cache,
        )
    return 0
