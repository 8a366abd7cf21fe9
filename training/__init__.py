"""DECLARE, its baselines and their training loop (plain typed Python, no Beam)."""

import medsimp  # noqa: F401  (first: pins CPU-independent kernels before numpy loads, medsimp.numerics)
