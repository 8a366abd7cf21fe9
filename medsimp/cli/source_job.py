"""Where a job's output goes: a local folder, or an object store for public data.

`run_source_job` runs `medsimp cochrane|msd|plaba`; `stage_input` and `stage_output` are how
`link`, `filter` and `align train --input` read a published output and publish their own: the
command's flags handed to `pipelines.jobs.objstore.stage_input`/`stage_output`, which the stage
functions of `align corpus` (`pipelines.jobs.align.align_corpus`), `build`
(`medsimp.corpora.stage`) and `report` (`medsimp.report.stage`) call with plain values. Its own module (not medsimp.cli.args)
so that only the stages that may use a store depend on the object-store code (dvc.yaml lists
each stage's import closure).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any


def run_source_job(args, section_name: str, job) -> int:
    """Run `job.run(input, out, params, beam_params, beam_args, metrics)` into an atomic local
    folder, or under a fresh run prefix of an object store that is published when it completes
    (pipelines.jobs.objstore)."""
    from medsimp.atomic import atomic_dir
    from medsimp.config import resolve_path
    from pipelines.jobs import objstore
    from pipelines.jobs.store import use_store

    params = getattr(args.params_data, section_name)  # the typed section (medsimp.params_schema)
    source = args.input or resolve_path(params.input, args.params_dir)
    # the launcher reaches URLs with the job's own options; a store input is checked first
    use_store(args.params_data.beam, args.beam_arg, {"--input": source})
    output: AbstractContextManager = (
        objstore.publish(args.output, section_name, [section_name], force=args.force)
        if objstore.is_url(args.output)
        else atomic_dir(args.output)
    )
    with output as out:
        job.run(
            source,
            str(out),
            params,
            args.params_data.beam,
            args.beam_arg,
            args.metrics,
        )
    return 0


def stage_input(args, inputs: dict[str, str], beam_args=()) -> dict[str, str]:
    """`objstore.stage_input` with the command's params `beam`: the stage's inputs (flag ->
    path) as its job reads them (an object-store input checked, a published prefix read from
    its run)."""
    from pipelines.jobs import objstore

    return objstore.stage_input(args.params_data.beam, beam_args, inputs)


def stage_output(args, output: str, inputs: dict[str, str]) -> AbstractContextManager[Any]:
    """`objstore.stage_output` with the command's --force: a local atomic folder, or an
    object-store prefix published when the block ends, for inputs of public data only."""
    from pipelines.jobs import objstore

    return objstore.stage_output(output, inputs, force=args.force)
