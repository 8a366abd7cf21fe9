"""Beam jobs: one module per stage, a composite PTransform and a run() that does the I/O."""
