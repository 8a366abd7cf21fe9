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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="builder: multicochrane, medlane, msd, plaba or radiology")
    parser.add_argument("--output", help="dataset folder to write (default: builders/<name>)")
    parser.add_argument("--metrics", help="also write the stats JSON here (DVC metrics)")


# Raw (non-Parquet) builder inputs of a public source, by builder and params key.
RAW_PUBLIC_INPUTS = {("multicochrane", "mc_human"): "cochrane"}


def input_lineage(cfg: dict, mimic_derived: bool, name: str = "") -> tuple[str, ...] | None:
    """Union of the lineage of every input path named in the builder's params: a Parquet
    input's own lineage; any other file or folder is MIMIC when the builder's own inputs are
    (`mimic_derived`), a declared public source (RAW_PUBLIC_INPUTS), else unknown. So a
    MIMIC table or file swapped in by `--set` keeps the output restricted."""
    from pathlib import Path

    from medsimp import lineage

    found: list[tuple[str, ...] | None] = [(lineage.MIMIC,)] if mimic_derived else []
    for key, value in sorted(cfg.items()):
        if not isinstance(value, str) or not value or not Path(value).exists():
            continue
        path = Path(value)
        if path.suffix == ".parquet" or (path.is_dir() and any(path.rglob("*.parquet"))):
            found.append(lineage.read_lineage(path))
        elif (name, key) in RAW_PUBLIC_INPUTS:
            found.append((RAW_PUBLIC_INPUTS[name, key],))
        elif not mimic_derived:
            found.append(None)
    return lineage.union(*found)


def run(args: argparse.Namespace) -> int:
    from medsimp.builders import BUILDERS, build_dataset
    from medsimp.builders.common import BuildError
    from medsimp.builders.writer import git_revision, write_builder
    from medsimp.config import params_hash, section
    from medsimp.errors import InputError, UsageError
    from medsimp.outputs import print_summary, write_metrics

    if args.name not in BUILDERS:
        raise UsageError(f"unknown builder {args.name!r}; known: {', '.join(sorted(BUILDERS))}")
    cfg = section(section(args.params_data, "build"), args.name)
    try:
        dataset = build_dataset(args.name, cfg)
    except BuildError as exc:
        raise InputError(str(exc)) from None
    dataset.lineage = input_lineage(cfg, dataset.mimic_derived, args.name)
    # the card holds only what determines the data; the git revision changes with every commit,
    # so it goes to the metrics' run record (medsimp.outputs.write_metrics), not the card
    provenance = {
        "stage": f"build@{args.name}",
        "command": f"medsimp build {args.name}",
        "params_section": f"build.{args.name}",
        "params_hash": params_hash(cfg),
    }
    stats = write_builder(dataset, args.output or f"builders/{args.name}", provenance)
    if args.metrics:
        write_metrics(args.metrics, stats, "build", run={"git_revision": git_revision()})
    flat = {k: v for k, v in stats.items() if k not in ("builder", "splits")}
    flat.update({f"rows {cfg}": splits for cfg, splits in stats["splits"].items()})
    print_summary(f"build {args.name}", flat)
    return 0
