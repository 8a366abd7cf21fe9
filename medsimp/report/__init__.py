"""Reports a person reads: the per-builder data report, the evaluation report, stats tables."""
