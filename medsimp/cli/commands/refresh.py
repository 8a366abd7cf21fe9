"""Re-run the DAG on a schedule: only changed stages recompute; a run report is written.

Finds the DVC root as `dvc root` does (from a subfolder it runs as from the root), takes a lock
(a second run exits at once), asks `dvc status` whether anything changed,
runs `dvc repro`, restores the outputs of a failed or interrupted stage from the DVC
cache (published builders stay loadable), and writes `<report-dir>/<UTC time>.json`,
`.md` and `.log` plus `latest.json` / `latest.md` (see docs/refresh.md).

exit codes:
  0   success: stages ran and the report was written
  2   bad command-line arguments, not inside a DVC repository (nothing is written), or an
      error outside a stage (unreadable dvc.yaml, DVC missing, --set on a non-refresh key)
  3   nothing to do: every stage is up to date (a report is still written)
  4   a stage failed or the run was interrupted (outputs restored; next run resumes)
  75  lock held: another refresh (or a dvc command) is running; try again later
"""

from __future__ import annotations

HELP = "run the DAG on a schedule: lock, dvc repro of what changed, run report"


def add_arguments(parser) -> None:
    parser.add_argument(
        "--report-dir", default=None, help="where reports go (default: params refresh.report_dir)"
    )
    parser.add_argument(
        "--targets",
        nargs="+",
        default=None,
        metavar="STAGE",
        help="dvc.yaml stages to bring up to date with their upstream "
        "(default: params refresh.targets, empty = whole DAG)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the stages that would run; run nothing, write no report"
    )


def run(args) -> int:
    from medsimp.refresh.run import Request, refresh

    request = Request(
        args.params, args.params_named, args.overrides, args.report_dir, args.targets, args.dry_run
    )
    return refresh(request, args.params_data)
