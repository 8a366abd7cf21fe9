"""Params `refresh`."""

from __future__ import annotations

from medsimp.sections.base import Count, Section


class Refresh(Section):
    report_dir: str = "reports/refresh"
    lock: str = ".dvc/tmp/medsimp-refresh.lock"
    targets: list[str] = []
    builders_dir: str = "builders"
    repro_args: list[str] = []
    restore_on_failure: bool = True
    keep_reports: Count = 200
