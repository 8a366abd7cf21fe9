"""medsimp: the core (errors, params, config, atomic writes and ownership, stats, lineage, caches,
resources, text tools) and the layers built on it (corpora, annotate, humaneval, selfcorrect,
report, refresh, cli).

The domain packages `pipelines`, `alignment` and `training` are the repository's top-level
folders, imported under their own names (docs/architecture.md).
"""

from medsimp import numerics as _numerics

_numerics.pin()  # before any torch kernel of this process: the same numbers on any x86-64 CPU
