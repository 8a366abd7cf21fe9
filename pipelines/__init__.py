"""Beam jobs and the readers and text steps they wrap.

- `pipelines.sources`: source readers and parsers (MIMIC notes, Cochrane, MSD, PLABA, MedLane), the
  per-record guards and the common sentence rows. No Beam pipeline here (files open through Beam's
  FileSystems, so the same code reads gs:// and s3:// paths).
- `pipelines.text`: per-document steps in plain Python: section extraction, MedLane Algorithm 1,
  UMLS linking, per-note and radiology logic.
- `pipelines.jobs`: one Beam job per stage, each a composite `PTransform` plus a `run()` that does I/O.
"""

import medsimp  # noqa: F401  (first: pins CPU-independent kernels before numpy loads, medsimp.numerics)
