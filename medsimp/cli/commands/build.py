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


def _local_inputs(args: argparse.Namespace, located, scratch: str):
    """`located` (build.<name>, paths resolved) with every object-store input downloaded into
    `scratch` (the whole published output holding it, so a stage's stats.json beside it comes
    too: `objstore.download`), and the params with align.output downloaded likewise when the card
    reads it; both unchanged when no path is a URL."""
    import os

    from medsimp.atomic import is_url
    from medsimp.cli.source_job import stage_input
    from medsimp.corpora.card import UPSTREAM

    params = args.params_data
    urls = {f"build.{args.name}.{k}": v for k, v in located if isinstance(v, str) and is_url(v)}
    align_output = "align" in UPSTREAM.get(args.name, ()) and is_url(params.align.output)
    if align_output:
        urls["align.output"] = params.align.output
    if not urls:
        return located, params
    from pipelines.jobs import objstore

    stage_input(args, urls)  # the store reached with the params' Beam options; buckets checked
    local = {
        key: objstore.download(url, os.path.join(scratch, str(n)), key)
        for n, (key, url) in enumerate(sorted(urls.items()))
    }
    if align_output:
        params = params.model_copy(
            update={"align": params.align.model_copy(update={"output": local.pop("align.output")})}
        )
    located = located.model_copy(update={key.rsplit(".", 1)[1]: path for key, path in local.items()})
    return located, params


def run(args: argparse.Namespace) -> int:
    import sqlite3
    import tempfile

    from medsimp.atomic import is_url
    from medsimp.config import resolve_path
    from medsimp.corpora import BUILDERS
    from medsimp.errors import UsageError

    if args.name not in BUILDERS:
        raise UsageError(f"unknown builder {args.name!r}; known: {', '.join(sorted(BUILDERS))}")
    cfg = getattr(args.params_data.build, args.name)  # the typed section build.<name>
    # its text values are input paths: relative to the params file's folder (the hash and the
    # card keep them as written)
    located = cfg.model_copy(
        update={k: resolve_path(v, args.params_dir) for k, v in cfg if isinstance(v, str) and v}
    )
    output = args.output or f"builders/{args.name}"
    try:
        with tempfile.TemporaryDirectory(prefix="medsimp-build-") as scratch:
            # inputs in an object store are read from a local copy; an output there is built in
            # a local folder, then published (pipelines.jobs.objstore)
            located, params = _local_inputs(args, located, scratch)
            if not is_url(output):
                return _build(args, cfg, located, params, output)
            return _build_to_store(args, cfg, located, params, output, scratch)
    except sqlite3.Error as exc:  # a builder's scratch database (its index is built while writing)
        raise UsageError(
            f"scratch database in {tempfile.gettempdir()}: {exc} (set TMPDIR to a folder with room)"
        ) from None


def _build_to_store(args: argparse.Namespace, cfg, located, params, output: str, scratch: str) -> int:
    """`_build` into a local folder under `scratch`, uploaded to a fresh run prefix of `output`
    and published when complete (`objstore.publish`); a corpus not of public data (by its inputs'
    lineage before the work, by the built dataset's after it) is one line and never uploaded."""
    import os

    from medsimp import lineage
    from medsimp.atomic import current_command
    from medsimp.cli.source_job import stage_input
    from medsimp.corpora.card import input_lineage
    from medsimp.errors import UsageError
    from pipelines.jobs import objstore

    def refused(found: tuple[str, ...] | None) -> UsageError | None:
        if not lineage.is_restricted(found) and found == tags:
            return None
        return UsageError(
            f"--output {output}: this output goes to local folders only: the inputs of build.{args.name} "
            f"are not public data (lineage: {lineage.describe(found)}); MIMIC-derived text never "
            "leaves the machine (docs/refresh.md)"
        )

    tags = input_lineage(located.model_dump(), False, args.name)  # unknown (None) is refused
    error = refused(tags)
    if error is not None:  # before the store is touched
        raise error
    folder = os.path.join(scratch, "built")
    stage_input(args, {})  # the store reached with the params' Beam options (also with local inputs)
    with objstore.publish(output, current_command(), lineage.marker_tags(tags), force=args.force) as prefix:
        # uploaded before the stage's metrics are written: they never describe an unpublished run
        return _build(
            args, cfg, located, params, folder, check=refused, then=lambda: objstore.upload(folder, prefix)
        )


def _build(args: argparse.Namespace, cfg, located, params, output: str, check=None, then=None) -> int:
    """Build the dataset of `located` into the local folder `output`; `check(lineage)` may refuse
    the built dataset's lineage (an error returned) before it is written, and `then()` runs once
    it is written, before the stats are reported."""
    from medsimp.config import params_hash
    from medsimp.corpora import build_dataset
    from medsimp.corpora.card import card_provenance, input_lineage
    from medsimp.corpora.common import BuildError
    from medsimp.corpora.writer import git_revision, write_builder
    from medsimp.errors import InputError
    from medsimp.stats import finish_stage

    try:
        dataset = build_dataset(args.name, located, params.filter)
        with dataset:  # a streamed dataset's scratch files go when it is written
            dataset.lineage = input_lineage(located.model_dump(), dataset.mimic_derived, args.name)
            refused = check(dataset.lineage) if check else None
            if refused is not None:
                raise refused
            # the card records what determines the data (builders/README.md): the inputs' content,
            # the upstream params, the aligner and the code's revision (stable for one commit)
            provenance = {
                "stage": f"build@{args.name}",
                "command": f"medsimp build {args.name}",
                "params_section": f"build.{args.name}",
                "params_hash": params_hash(cfg),
                **card_provenance(args.name, params, args.params_dir, cfg, located, dataset.aligner_scores),
            }
            stats = write_builder(dataset, output, provenance)
    except BuildError as exc:
        raise InputError(str(exc)) from None
    if then is not None:
        then()
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
