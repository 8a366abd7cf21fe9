"""medsimp's domain packages are its own: `pipelines`, `alignment` and `training` are installed
beside `medsimp` as top-level packages (the design card's folders), and other projects use those
names too (huggingface's alignment-handbook and python-alignment install `alignment`; a user's
`training/` folder in a notebook's folder). One found elsewhere first on the path would mix
foreign code into a run silently, so the command stops on it, naming the path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DOMAIN_PACKAGES = ("pipelines", "alignment", "training")


def _where(name: str) -> Path | None:
    """The folder the package `name` is (or would be) imported from, without importing it."""
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None) if module is not None else None
    if origin is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        origin = spec.origin if spec is not None else None
        if origin is None and spec is not None and spec.submodule_search_locations:
            return Path(next(iter(spec.submodule_search_locations))).resolve()  # a namespace package
    return Path(origin).resolve().parent if origin else None


def foreign() -> list[tuple[str, Path | None, Path]]:
    """(name, where it is imported from, where medsimp's own is) for each domain package that
    is not medsimp's sibling (None: not found at all)."""
    home = Path(__file__).resolve().parent.parent
    found = []
    for name in DOMAIN_PACKAGES:
        where = _where(name)
        if where != home / name:
            found.append((name, where, home / name))
    return found


def check() -> str | None:
    """One line naming the first foreign (or missing) domain package; None when all are ours."""
    for name, where, ours in foreign():
        if where is None:
            return f"the package `{name}` is missing (medsimp's own is {ours}): reinstall medsimp"
        return (
            f"the package `{name}` is imported from {where}, not medsimp's own ({ours}): "
            "a folder or package of that name earlier on the path (the current folder, PYTHONPATH, "
            "another install) shadows it; rename or remove it"
        )
    return None
