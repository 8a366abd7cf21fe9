"""Params `beam`."""

from __future__ import annotations

from medsimp.sections.base import Count, Positive, Section


class Beam(Section):
    runner: str = "FnApiRunner"
    num_workers: Positive = 2
    log_level: str = "WARNING"
    options: list[str] = []
    running_mode: str | None = None  # DirectRunner: null = multi_processing if num_workers > 1
    # runs of a job after its first when an SDK worker dies under it (pipelines.jobs.beam_io)
    retries: Count = 2
