"""Sentence aligners (neural CRF, Vecalign), encoders, gold readers, scorers and the overlap filter.

Plain typed Python: no Beam import here (pipelines/jobs/align.py wraps it).
"""

import medsimp  # noqa: F401  (first: pins CPU-independent kernels before numpy loads, medsimp.numerics)
