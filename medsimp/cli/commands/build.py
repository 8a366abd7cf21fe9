"""Build a Hugging Face dataset folder (parquet files + README.md card) from stage outputs.

    medsimp build multicochrane --output builders/multicochrane \
        --metrics metrics/build-multicochrane.json

Inputs and options come from the params section `build.<name>` (override with
`--set build.<name>.<key>=...`). The folder is written atomically and
deterministically; `datasets.load_dataset(folder, config)` then works offline.
"""

from __future__ import annotations

import argparse

HELP = "build a Hugging Face dataset folder (multicochrane, medlane, msd, plaba, radiology)"


# What `dvc metrics show` shows for this stage: the counts every data stage shares, so the table
# stays narrow (the stage's full stats are its output's stats.json).
HEADLINE = ("read", "kept", "filtered", "rejected")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="builder: multicochrane, medlane, msd, plaba or radiology")
    parser.add_argument("--output", help="dataset folder to write (default: builders/<name>)")
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
    import sqlite3
    import tempfile

    from medsimp.config import params_hash, resolve_path
    from medsimp.corpora import BUILDERS, build_dataset
    from medsimp.corpora.card import card_provenance, input_lineage
    from medsimp.corpora.common import BuildError
    from medsimp.corpora.writer import git_revision, write_builder
    from medsimp.errors import InputError, UsageError
    from medsimp.stats import finish_stage

    if args.name not in BUILDERS:
        raise UsageError(f"unknown builder {args.name!r}; known: {', '.join(sorted(BUILDERS))}")
    cfg = getattr(args.params_data.build, args.name)  # the typed section build.<name>
    # its text values are input paths: relative to the params file's folder (the hash and the
    # card keep them as written)
    located = cfg.model_copy(
        update={k: resolve_path(v, args.params_dir) for k, v in cfg if isinstance(v, str) and v}
    )
    try:
        dataset = build_dataset(args.name, located, args.params_data.filter)
        with dataset:  # a streamed dataset's scratch files go when it is written
            dataset.lineage = input_lineage(located.model_dump(), dataset.mimic_derived, args.name)
            # the card records what determines the data (builders/README.md): the inputs' content,
            # the upstream params, the aligner and the code's revision (stable for one commit)
            provenance = {
                "stage": f"build@{args.name}",
                "command": f"medsimp build {args.name}",
                "params_section": f"build.{args.name}",
                "params_hash": params_hash(cfg),
                **card_provenance(
                    args.name, args.params_data, args.params_dir, cfg, located, dataset.aligner_scores
                ),
            }
            stats = write_builder(dataset, args.output or f"builders/{args.name}", provenance)
    except BuildError as exc:
        raise InputError(str(exc)) from None
    except sqlite3.Error as exc:  # a builder's scratch database (its index is built while writing)
        raise UsageError(
            f"scratch database in {tempfile.gettempdir()}: {exc} (set TMPDIR to a folder with room)"
        ) from None
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
