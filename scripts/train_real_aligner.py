#!/usr/bin/env python
"""Train the English CRF aligner on real public gold from a fetched folder (not in this repo).

    python scripts/train_real_aligner.py --data DIR [--output out/models/crf_aligner_real]
        [--with-base] [--params params.yaml] [--set align.crf.epochs=20 ...]

DIR holds the authors' releases, read where they are (never copied into this repository):

- `plaba/data.json`: PLABA (Attal et al. 2023), attal-kush/PLABA `data/data.json` (also on
  OSF, osf.io/rnpmf): PubMed abstracts adapted sentence by sentence by NLM annotators,
  read as 1-to-N gold (`alignment.gold.read_plaba`). The main source: biomedical, real,
  document-level with the deletions and splits the CRF's transitions need.
- `multicochrane/mc_human.json` (optional): MultiCochrane's MC-CLEAN human alignments
  (SebaJoe/MultiCochrane `data/MultiCochrane/mc_human.json`, over 4 MiB, so a plain
  checkout or download), the in-domain Cochrane gold. Leave its 22 test reviews out when the
  model is scored on them (scripts/eval_alignment.py --only cochrane does the held-out run).
- `wiki-manual/*.tsv` (optional): Jiang et al.'s Wiki-Manual gold (chaojiang06/wiki-auto),
  the CRF paper's own data; out of domain (Wikipedia).

Every source found is passed to `medsimp align train --gold A --gold B ...`, so the model
is trained on their concatenation; `--with-base` puts params `align.gold` first (the
embedded sample, or the base gold plus annotated documents). The model folder and its
`stats.json` are what `align_train` writes; point `align.model` (or `--model`) at it.
Exits 0 saying so when DIR holds none of the files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SOURCES = ("plaba/data.json", "multicochrane/mc_human.json", "wiki-manual/*.tsv")


def real_gold(folder: Path) -> list[Path]:
    """The real gold files under `folder`, in the order of SOURCES."""
    return [p for pattern in SOURCES for p in sorted(folder.glob(pattern))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder holding plaba/data.json etc.")
    ap.add_argument("--output", default="out/models/crf_aligner_real")
    ap.add_argument("--metrics", default=None, help="also write the training stats here")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--with-base", action="store_true", help="train on params align.gold too (first)")
    args = ap.parse_args(argv)
    gold = real_gold(Path(args.data))
    if not gold:
        print(f"skip: no real gold under {args.data} ({', '.join(SOURCES)})", file=sys.stderr)
        return 0
    if args.with_base:
        from alignment.gold import gold_sources
        from medsimp.config import load_params, resolve_path

        base = gold_sources(load_params(args.params, args.overrides).align.gold)
        gold = [Path(resolve_path(g, Path(args.params).parent)) for g in base] + gold
    from medsimp.cli.app import main as medsimp

    # the real gold alone, as the documented rows were measured; `--set
    # align.self_training.enabled=true` (later, so it wins) self-trains on params align.input too
    cmd = ["--params", args.params, "--set", "align.self_training.enabled=false"]
    for o in args.overrides:
        cmd += ["--set", o]
    cmd += ["align", "train", "--output", args.output]
    for g in gold:
        cmd += ["--gold", str(g)]
    if args.metrics:
        cmd += ["--metrics", args.metrics]
    print("medsimp " + " ".join(cmd), file=sys.stderr)
    return medsimp(cmd)


if __name__ == "__main__":
    sys.exit(main())
