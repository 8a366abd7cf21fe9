"""`medsimp cochrane|msd|plaba`: run a source job into a local folder or an object store.

Its own module (not medsimp.cli.args) so that only these three stages depend on the
object-store code (dvc.yaml lists each stage's import closure).
"""

from __future__ import annotations

from contextlib import AbstractContextManager


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
