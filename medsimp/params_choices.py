"""The choice lists of `params.yaml` keys that code outside `medsimp.params_schema` names too
(command-line `choices`, type hints), read with `typing.get_args`. They live here, without
pydantic, so a command parses its arguments without building the params schema (issue 57:
`medsimp --help` and a refused argument in <= 0.3 s); `medsimp.params_schema` types its fields
with these same aliases.
"""

from __future__ import annotations

from typing import Literal

Algorithm1Reading = Literal["pseudocode", "prose"]  # MedLane Algorithm 1's pseudocode | §3.1's prose
Comparison = Literal["gt", "ge"]
Language = Literal["en", "es", "fr", "fa"]
# how `evaluate` scores: medsimp's metrics, or the MedLane authors' scorer (docs/metrics.md)
ScoringMode = Literal["default", "medlane"]
# ROUGE's tokens: lowercased NLTK Treebank tokens | rouge-score's own (docs/metrics.md)
RougeTokenizer = Literal["nltk", "rouge-score"]
