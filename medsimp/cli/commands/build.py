"""Build a Hugging Face dataset folder (parquet files + README.md card) from stage outputs.

    medsimp build multicochrane --output builders/multicochrane \
        --metrics metrics/build-multicochrane.json

Inputs and options come from the params section `build.<name>` (override with
`--set build.<name>.<key>=...`). The folder is written atomically and
deterministically; `datasets.load_dataset(folder, config)` then works offline. Inputs may be
in an object store, and so may --output for a corpus of public data (docs/refresh.md).
"""

from __future__ import annotations

import argparse

HELP = "build a Hugging Face dataset folder (multicochrane, medlane, msd, plaba, radiology)"


# What `dvc metrics show` shows for this stage: the counts every data stage shares, so the table
# stays narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="builder: multicochrane, medlane, msd, plaba or radiology")
    parser.add_argument(
        "--output",
        help="dataset folder to write (default: builders/<name>), or an object-store prefix for a "
        "corpus of public data (s3://bucket/x; docs/refresh.md)",
    )
    parser.add_argument("--metrics", help="also write the stats JSON here (DVC metrics)")


def code_modules(args: argparse.Namespace) -> list[str]:
    """The modules a `medsimp build NAME` run imports by name: the builder's."""
    from medsimp.corpora import builder_module

    return [builder_module(args.name)]


def params_sections(args: argparse.Namespace) -> list[str]:
    """The params a `medsimp build NAME` run reads: `build.NAME`, and the sections of the stages
    upstream of that builder (`UPSTREAM`), whose params hashes its card records (the build@NAME
    stage's params in dvc.yaml, written by medsimp.cli.dvc_deps)."""
    from medsimp.corpora.card import UPSTREAM

    return [f"build.{args.name}", *UPSTREAM.get(args.name, ())]


def run(args: argparse.Namespace) -> int:
    from medsimp.corpora.stage import build
    from medsimp.corpora.writer import git_revision
    from medsimp.stats import finish_stage

    stats = build(args.name, args.output, args.params_data, args.params_dir, args.force)
    flat = {k: v for k, v in stats.items() if k not in ("builder", "splits")}
    flat.update({f"rows {cfg}": splits for cfg, splits in stats["splits"].items()})
    finish_stage(
        f"build {args.name}",
        stats,
        HEADLINE,
        args.metrics,
        summary=flat,
        run={"git_revision": git_revision()},
    )
    return 0
