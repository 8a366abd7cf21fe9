"""`medsimp build NAME` as one stage function: the builder `medsimp.corpora.<NAME>` run on its
params section `build.NAME`, and its Hugging Face dataset folder written with the card's
provenance (`medsimp.corpora.card`) by `medsimp.corpora.writer.write_builder`. The command
(`medsimp.cli.commands.build`) parses its flags, calls `build` and prints the epilogue.

Inputs in an object store are read from a local copy (`pipelines.jobs.objstore.download`); an
output there (a corpus of public data only) is built in a local folder, then uploaded into a
fresh run prefix and published (`objstore.publish`; docs/refresh.md "Outputs in an object
store")."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable
from typing import Any

from medsimp import lineage
from medsimp.atomic import current_command, is_url
from medsimp.config import params_hash, resolve_path
from medsimp.corpora import BUILDERS, build_dataset
from medsimp.corpora.card import UPSTREAM, card_provenance, input_lineage
from medsimp.corpora.common import BuildError
from medsimp.corpora.writer import write_builder
from medsimp.errors import InputError, UsageError
from medsimp.params_schema import Params


def build(name: str, out: str | None, params: Params, base: str = ".", force: bool = False) -> dict[str, Any]:
    """Build the dataset `name` into the folder `out` (None: builders/<name>), or into the
    object-store prefix `out` for a corpus of public data; `params`: the whole params (the card
    records the upstream stages' sections), `base`: the params file's folder, `force`: write a
    store prefix another command wrote. -> the stats written (`write_builder`)."""
    if name not in BUILDERS:
        raise UsageError(f"unknown builder {name!r}; known: {', '.join(sorted(BUILDERS))}")
    cfg = getattr(params.build, name)  # the typed section build.<name>
    # its text values are input paths: relative to the params file's folder (the hash and the
    # card keep them as written)
    located = cfg.model_copy(update={k: resolve_path(v, base) for k, v in cfg if isinstance(v, str) and v})
    output = out or f"builders/{name}"
    try:
        with tempfile.TemporaryDirectory(prefix="medsimp-build-") as scratch:
            # inputs in an object store are read from a local copy; an output there is built in
            # a local folder, then published (pipelines.jobs.objstore)
            located, params = _local_inputs(name, located, params, scratch)
            if not is_url(output):
                return _build(name, cfg, located, params, base, output)
            return _build_to_store(name, cfg, located, params, base, output, scratch, force)
    except sqlite3.Error as exc:  # a builder's scratch database (its index is built while writing)
        raise UsageError(
            f"scratch database in {tempfile.gettempdir()}: {exc} (set TMPDIR to a folder with room)"
        ) from None


def _local_inputs(name: str, located: Any, params: Params, scratch: str) -> tuple[Any, Params]:
    """`located` (build.<name>, paths resolved) with every object-store input downloaded into
    `scratch` (the whole published output holding it, so a stage's stats.json beside it comes
    too: `objstore.download`), and the params with align.output downloaded likewise when the card
    reads it; both unchanged when no path is a URL."""
    urls = {f"build.{name}.{k}": v for k, v in located if isinstance(v, str) and is_url(v)}
    align_output = "align" in UPSTREAM.get(name, ()) and is_url(params.align.output)
    if align_output:
        urls["align.output"] = params.align.output
    if not urls:
        return located, params
    from pipelines.jobs import objstore

    objstore.stage_input(params.beam, (), urls)  # the store reached with the params' Beam options
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


def _build_to_store(
    name: str, cfg: Any, located: Any, params: Params, base: str, output: str, scratch: str, force: bool
) -> dict[str, Any]:
    """`_build` into a local folder under `scratch`, uploaded to a fresh run prefix of `output`
    and published when complete (`objstore.publish`); a corpus not of public data (by its inputs'
    lineage before the work, by the built dataset's after it) is one line and never uploaded."""
    from pipelines.jobs import objstore

    def refused(found: tuple[str, ...] | None) -> UsageError | None:
        if not lineage.is_restricted(found) and found == tags:
            return None
        return UsageError(
            f"--output {output}: this output goes to local folders only: the inputs of build.{name} "
            f"are not public data (lineage: {lineage.describe(found)}); MIMIC-derived text never "
            "leaves the machine (docs/refresh.md)"
        )

    tags = input_lineage(located.model_dump(), False, name)  # unknown (None) is refused
    error = refused(tags)
    if error is not None:  # before the store is touched
        raise error
    folder = os.path.join(scratch, "built")
    objstore.stage_input(params.beam, (), {})  # the store reached with the params' Beam options
    with objstore.publish(output, current_command(), lineage.marker_tags(tags), force=force) as prefix:
        # uploaded, and published, before the command writes the stage's metrics: they never
        # describe an unpublished run
        stats = _build(name, cfg, located, params, base, folder, check=refused)
        objstore.upload(folder, prefix)
        return stats


def _build(
    name: str,
    cfg: Any,
    located: Any,
    params: Params,
    base: str,
    output: str,
    check: Callable[[tuple[str, ...] | None], UsageError | None] | None = None,
) -> dict[str, Any]:
    """Build the dataset of `located` into the local folder `output`; `check(lineage)` may refuse
    the built dataset's lineage (an error returned) before it is written."""
    try:
        dataset = build_dataset(name, located, params.filter)
        with dataset:  # a streamed dataset's scratch files go when it is written
            dataset.lineage = input_lineage(located.model_dump(), dataset.mimic_derived, name)
            refused = check(dataset.lineage) if check else None
            if refused is not None:
                raise refused
            # the card records what determines the data (builders/README.md): the inputs' content,
            # the upstream params, the aligner and the code's revision (stable for one commit)
            provenance = {
                "stage": f"build@{name}",
                "command": f"medsimp build {name}",
                "params_section": f"build.{name}",
                "params_hash": params_hash(cfg),
                **card_provenance(name, params, base, cfg, located, dataset.aligner_scores),
            }
            return write_builder(dataset, output, provenance)
    except BuildError as exc:
        raise InputError(str(exc)) from None
