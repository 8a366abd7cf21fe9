"""Where a job's output goes: a local folder, or an object store for public data.

`run_source_job` runs `medsimp cochrane|msd|plaba`; `stage_input` and `stage_output` are how
the later stages of public data (`link`, `align corpus`, `filter`, `build`) read a published
output and publish their own (pipelines.jobs.objstore). Its own module (not medsimp.cli.args)
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
    """The stage's inputs (flag -> path) as its job reads them: every object-store input is
    checked reachable (`store.use_store`, which also hands Beam the job's store options), and
    one at or under a prefix a medsimp stage published to is read from its published run
    (`objstore.published_input`). Local paths are returned as they are."""
    from pipelines.jobs import objstore
    from pipelines.jobs.store import use_store

    use_store(args.params_data.beam, beam_args, dict(inputs))
    return {flag: objstore.published_input(path, flag) for flag, path in inputs.items()}


def stage_output(args, output: str, inputs: dict[str, str]) -> AbstractContextManager[Any]:
    """The folder a stage writes into: a local atomic folder (`atomic_dir`), or for a URL a fresh
    run prefix that is published when the block ends (`objstore.publish`), after checking,
    before any write, that every input (flag -> path, as named) is public data
    (`objstore.check_public`: MIMIC-derived or unknown lineage is one line, exit 2)."""
    from medsimp.atomic import atomic_dir, current_command
    from pipelines.jobs import objstore

    if not objstore.is_url(output):
        return atomic_dir(output)
    lineage = objstore.check_public(output, inputs)
    return objstore.publish(output, current_command(), lineage, force=args.force)
