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

import contextlib
import sys
from pathlib import Path

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
    from medsimp.config import load_params
    from medsimp.errors import UsageError
    from medsimp.places import check_writable_folder
    from medsimp.refresh.dvc import DvcError, find_root
    from medsimp.refresh.run import EXIT_ERROR, RefreshConfig, run_refresh

    foreign = [o for o in args.overrides if not o.strip().startswith("refresh.")]
    if foreign:
        print(
            f"refresh: --set {foreign[0]!r} would not reach the stages: dvc repro reads "
            f"{args.params} from disk; edit it instead (only refresh.* may be overridden)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    here = Path.cwd()
    root = find_root(here)  # before anything is written: never a .dvc/ of our own making
    report_dir = str(here / args.report_dir) if args.report_dir else None  # as typed, from here
    # from a subfolder, refresh runs as from the root (stage names, the params.yaml DVC reads)
    with contextlib.chdir(root):
        if args.params_named:  # as named: never the implicit rule
            params_data = args.params_data
            params = load_params(here / args.params, required=True)
        else:  # the root's params.yaml (the one DVC reads), by the implicit rule
            params_data = args.params_data if root == here else load_params(args.params, args.overrides)
            params = load_params(args.params, required=False)
        cfg = RefreshConfig.from_params(params_data.refresh, root, report_dir, args.targets)
        if not args.dry_run:  # before any stage runs, not when the report is written after them
            try:
                check_writable_folder(
                    cfg.report_dir, "--report-dir" if args.report_dir else "refresh.report_dir"
                )
            except UsageError as exc:
                print(f"refresh: {exc}", file=sys.stderr)
                return EXIT_ERROR
        try:
            code, _report = run_refresh(
                cfg,
                params.raw,
                args.dry_run,
                echo=lambda line: print(line, flush=True),
            )
        except DvcError as exc:
            print(f"refresh: {exc}", file=sys.stderr)
            return EXIT_ERROR
    return code
