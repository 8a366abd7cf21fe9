"""medsimp: the core (errors, params, config, atomic writes and ownership, stats, lineage, caches,
resources, text tools) and the layers built on it (corpora, annotate, humaneval, selfcorrect,
report, refresh, cli).

The domain packages `pipelines`, `alignment` and `training` are the repository's top-level
folders, imported under their own names (docs/architecture.md).
"""
