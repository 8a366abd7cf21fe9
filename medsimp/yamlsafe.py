"""Reading YAML a user wrote, bounded: no alias bombs, no deep nesting, no duplicate keys.

`load(text)` is `yaml.safe_load` with four changes, each a one-line `YamlError`:
- a document whose aliases expand past `MAX_NODES` nodes (a "billion laughs" bomb: 700 bytes
  that expand to 10^9 values) or that refers to itself is refused before any value is built;
- nesting deeper than `MAX_DEPTH` is refused (instead of a RecursionError);
- a mapping that repeats a key is refused, naming the key (YAML would keep the last silently);
- a float without a dot (`5e-5`, `1E3`) is a float, as in YAML 1.2 (YAML 1.1 reads a string).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

MAX_NODES = 100_000  # params.yaml holds about 500
MAX_DEPTH = 64


class YamlError(ValueError):
    """YAML that cannot be used (one line, no value of the document in it)."""


class _Loader(yaml.SafeLoader):
    pass


# YAML 1.2's float forms on top of 1.1's (which need a dot): 5e-5, 1E3, -2e+2
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _key_text(node: yaml.Node) -> str:
    text = str(node.value) if isinstance(node, yaml.ScalarNode) else f"<{type(node).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


def check_node(root: yaml.Node) -> None:
    """Raise YamlError unless `root` expands to at most MAX_NODES nodes, nests at most MAX_DEPTH
    deep, refers to no ancestor and repeats no mapping key. Linear in the composed (unexpanded)
    graph: aliases are the same node object, counted once per reference from a memo."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool, int]] = [(root, False, 1)]
    while stack:
        node, done, depth = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            total = 1 + sum(size[id(c)] for c in children)
            if total > MAX_NODES:
                raise YamlError(f"aliases expand past {MAX_NODES} values (an alias bomb?)")
            size[key] = total
            continue
        if key in size:
            continue
        if key in on_path:
            raise YamlError("an alias refers to a value that holds it (recursive alias)")
        if depth > MAX_DEPTH:
            raise YamlError(f"nested deeper than {MAX_DEPTH} levels")
        on_path.add(key)
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, Any]] = set()
            for k, _ in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                    ident = (k.tag, k.value)
                    if ident in seen:
                        line = k.start_mark.line + 1 if k.start_mark else 0
                        raise YamlError(f"duplicate key {_key_text(k)!r} (line {line})")
                    seen.add(ident)
        stack.append((node, True, depth))
        for child in _children(node):
            if id(child) in on_path:
                raise YamlError("an alias refers to a value that holds it (recursive alias)")
            if id(child) not in size:
                stack.append((child, False, depth + 1))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load(text: str) -> Any:
    """One YAML document, checked (see the module doc); raises YamlError with the line."""
    try:
        loader = _Loader(text)  # checks the characters (a NUL byte is an error here)
    except yaml.YAMLError:
        raise YamlError("not valid YAML (a character YAML does not allow)") from None
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YamlError(f"nested deeper than {MAX_DEPTH} levels") from None
        if node is None:
            return None
        check_node(node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise YamlError(f"not valid YAML{where}") from None
    finally:
        loader.dispose()
