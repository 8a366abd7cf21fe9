"""Our modules' import graph, read from their source (no import runs): the import closure of a
set of modules, and the packaged resources they name. DVC stage deps (`medsimp.cli.dvc_deps`)
and the model checkpoint key (`training.neural`) are computed from it.

An import counts at any depth of a file (function-level imports too), a string constant that
is a dotted name in one of our packages counts as an import, a module that lists its package with
`pkgutil.iter_modules(__path__)` (a registry, `medsimp.metrics`) imports every module of it, and
parent packages' `__init__.py` run too. A module name built at run time (`medsimp train` imports
its model's step as `f"training.{step}"`) is not followed: the command names such modules in
`code_modules(args)`, which `medsimp.cli.dvc_deps` adds to each stage that runs them.
Module names become files through `importlib.util.find_spec`. A resource counts when a module
calls `resources.path("<name>")` or holds a string constant naming a packaged file
(`"prompts/selfcorrect-v1.yaml"` in a table of choices); `medsimp/resources/...` strings are
params defaults, which a stage tracks through its params paths instead.

A composer (`COMPOSERS`: the params root, `medsimp.params_schema`, which builds `Params` from every
section module and re-exports their names) is not followed: a name imported from it counts as an
import of the module that defines it (`from medsimp.params_schema import Filter` is
`medsimp.sections.filter`), and its own code is in no closure. Otherwise every stage would hold
every params section; DVC stages add the sections they list under `params:` instead
(`medsimp.cli.dvc_deps`), and tests/test_params.py checks that the root adds nothing to what the
sections read.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import pkgutil
import re
from collections.abc import Iterable
from pathlib import Path

ROOT_PACKAGES = ("medsimp", "pipelines", "alignment", "training")
COMPOSERS = ("medsimp.params_schema",)


@functools.cache
def module_file(name: str) -> Path | None:
    """The source file of our module `name` (None for other modules or names that are not modules)."""
    if name.partition(".")[0] not in ROOT_PACKAGES:
        return None
    parent = name.rpartition(".")[0]
    if parent and ((pf := module_file(parent)) is None or pf.name != "__init__.py"):
        return None  # `from module import function`: not a submodule (and never import `module`)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).resolve()


@functools.cache
def packaged_files() -> frozenset[str]:
    """The files under `medsimp/resources` by their resource name (`prompts/x.yaml`)."""
    spec = importlib.util.find_spec("medsimp.resources")
    if spec is None or not spec.origin:
        return frozenset()
    root = Path(spec.origin).parent
    return frozenset(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    )


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


@functools.cache
def _imports(name: str, path: Path) -> tuple[frozenset[str], frozenset[str]]:
    """Module names `name` imports (any depth of the file) and its `resources.path` literals."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    resources: set[str] = set()
    package = _package_of(name, path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if re.fullmatch(rf"(?:{'|'.join(ROOT_PACKAGES)})(\.\w+)+", node.value):
                names.add(node.value)
            elif node.value in packaged_files():
                resources.add(node.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "iter_modules"
            and any(isinstance(a, ast.Name) and a.id == "__path__" for a in node.args)
        ):  # a registry that imports its package's modules by listing them: every submodule
            names.update(f"{package}.{info.name}" for info in pkgutil.iter_modules([str(path.parent)]))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "path"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "resources"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            resources.add(node.args[0].value)
    return frozenset(names), frozenset(resources)


@functools.cache
def reexports(name: str) -> dict[str, str]:
    """The names the module `name` imports from our other modules (its top-level
    `from package.module import X`) -> the module each comes from."""
    path = module_file(name)
    if path is None:
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module and node.module.partition(".")[0] in ROOT_PACKAGES
        for alias in node.names
    }


def closure(roots: Iterable[str], composers: Iterable[str] = COMPOSERS) -> tuple[dict[str, Path], set[str]]:
    """Our modules reachable from `roots` (name -> file) and the packaged resources they name;
    a name imported from one of `composers` is read as an import of its own module."""
    seen: dict[str, Path] = {}
    resources: set[str] = set()
    stop = frozenset(composers)
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name in stop:
            continue
        composer, _, attr = name.rpartition(".")
        if composer in stop:  # `from medsimp.params_schema import Filter`
            if attr in reexports(composer):
                todo.append(reexports(composer)[attr])
            continue
        path = module_file(name)
        if path is None:
            continue
        seen[name] = path
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run too
        names, found = _imports(name, path)
        todo.extend(names)
        resources |= found
    return seen, resources
