"""medsimp.

The domain layers live in the repository's top-level folders (`pipelines/`, `alignment/`,
`training/`) and are imported as `medsimp.pipelines`, `medsimp.alignment`, `medsimp.training`.
An installed distribution carries them inside this package (pyproject's package-dir mapping);
in a source checkout, `_CheckoutLayers` serves them from the folders beside this one, so every
clone and worktree runs its own copy.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_LAYERS = ("pipelines", "alignment", "training")


class _CheckoutLayers:
    """Meta-path finder for `medsimp.<layer>` from `<checkout>/<layer>/` (source checkouts only)."""

    @staticmethod
    def find_spec(fullname: str, path: object = None, target: object = None):
        head, _, layer = fullname.partition(".")
        if head != __name__ or layer not in _LAYERS:
            return None
        folder = _HERE.parent / layer
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


if not (_HERE / "pipelines").is_dir() and (_HERE.parent / "pyproject.toml").is_file():
    sys.meta_path.insert(0, _CheckoutLayers)
