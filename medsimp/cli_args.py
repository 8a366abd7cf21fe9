"""Argument helpers shared by subcommands (kept free of heavy imports so `--help` is fast)."""

from __future__ import annotations

import functools


def add_beam_arguments(parser) -> None:
    """The `--beam-arg` flag every Beam subcommand accepts."""
    parser.add_argument(
        "--beam-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra Beam pipeline option, e.g. --beam-arg=--runner=FlinkRunner "
        "(repeatable; overrides params.beam)",
    )


def warm_beam_workers(run):
    """Decorate the function of a Beam command that runs a pipeline, `run(args, ...)`: it runs
    inside medsimp.pipelines.beam_worker.zygote, so local worker processes start warm. Apply
    it before the function imports Beam."""

    @functools.wraps(run)
    def wrapped(args, *rest):
        from medsimp.config import section
        from medsimp.pipelines.beam_worker import zygote

        with zygote(section(args.params_data, "beam"), args.beam_arg):
            return run(args, *rest)

    return wrapped


def add_job_arguments(parser, input_help: str, default_output: str) -> None:
    """--input/--output/--metrics/--beam-arg of a source job (cochrane, msd, plaba)."""
    parser.add_argument("--input", help=input_help)
    parser.add_argument("--output", default=default_output, help="output directory")
    parser.add_argument("--metrics", help="also write stats here (DVC metrics)")
    add_beam_arguments(parser)


def run_source_job(args, section_name: str, job) -> int:
    """Run `job.run(input, tmp_dir, params, beam_params, beam_args, metrics)` into an atomic dir."""
    from medsimp.config import resolve_path, section
    from medsimp.outputs import atomic_dir

    params = section(args.params_data, section_name)
    with atomic_dir(args.output) as tmp:
        job.run(
            args.input or resolve_path(params["input"], args.params_dir),
            str(tmp),
            params,
            section(args.params_data, "beam"),
            args.beam_arg,
            args.metrics,
        )
    return 0
