"""The sentence aligners `medsimp align files --method NAME` offers: one module each, registered
by its file name (the way `medsimp.metrics` registers a metric family per module).

A module `alignment/aligners/<name>.py` defines `load(params, model_dir, cache)`, which returns
a `SentenceAligner` with its model loaded once. Adding an aligner (a LaBSE/Bertalign-style one,
say) is adding one such module and its test; `names()` lists the modules without importing
them, so `--method`'s choices cost nothing at start-up. docs/architecture.md "Extension points".
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from medsimp.errors import UsageError

if TYPE_CHECKING:  # only for the signatures: listing the names imports nothing heavy
    from alignment.gold import Block
    from medsimp.params_schema import Align


class SentenceAligner(Protocol):
    """Two sentence lists aligned: blocks (source ids, target ids) in order, and a score each.
    `check` raises ValueError (said in one line) for a language pair it cannot align, before any
    file is read."""

    def check(self, src_lang: str, tgt_lang: str) -> None: ...

    def align(
        self, src: Sequence[str], tgt: Sequence[str], src_lang: str, tgt_lang: str
    ) -> tuple[list[Block], list[float]]: ...


def names() -> tuple[str, ...]:
    """The registered aligners' names, sorted: this package's modules."""
    return tuple(
        sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
    )


def load(name: str, params: Align, model_dir: str | None, cache: str | None) -> SentenceAligner:
    """The aligner `name` with its model loaded (params `align`; `model_dir` overrides the
    params' model where the aligner has one; `cache`: the embedding cache folder or None)."""
    if name not in names():
        raise UsageError(f"unknown aligner {name!r}; choose from {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}").load(params, model_dir, cache or None)
