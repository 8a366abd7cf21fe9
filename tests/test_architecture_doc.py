"""docs/architecture.md is true (issue 56 section 6: it cited an `outputs` module, metrics in
`training/` and `pipelines.input_files`, none of which exist): every module, name and path it
cites in backticks exists."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("medsimp", "pipelines", "alignment", "training")
OUR_MODULES = {p.stem for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")} - {"__init__"}
FILE_SUFFIXES = {"json", "jsonl", "lock", "yaml", "md", "py", "txt", "csv", "parquet", "pt", "toml"}


def _params_sections() -> set[str]:
    from medsimp.params_schema import Params

    # `align.crf` is a params key; `args.x` the namespace; `tool.mypy` a pyproject table
    return set(Params.model_fields) | {"args", "tool"}


def _cited() -> list[str]:
    words = []
    for span in re.findall(r"`([^`\n]+)`", DOC.read_text(encoding="utf-8")):
        words += [w.strip(".:;") for w in re.split(r"[\s,()\[\]=]+", span)]
    return [w for w in words if w]


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_every_module_name_and_path_the_architecture_cites_exists():
    missing = []
    for word in _cited():
        if re.fullmatch(rf"(?:{'|'.join(PACKAGES)}|builders|scripts|tests|docs|data)/[\w./-]*", word):
            if not (ROOT / word.split("::")[0]).exists():
                missing.append(word)
        elif re.fullmatch(rf"(?:{'|'.join(PACKAGES)})(?:\.\w+)+", word):
            if not _resolves(word):
                missing.append(word)
        elif (
            re.fullmatch(r"[a-z_]+\.[A-Za-z_]\w*", word)
            and word.split(".")[0] not in _params_sections()
            and word.split(".")[1] not in FILE_SUFFIXES
        ):
            if word.split(".")[0] not in OUR_MODULES:  # another library's (`os.replace`), or a module gone
                if importlib.util.find_spec(word.split(".")[0]) is None:
                    missing.append(word)
                continue
            module = word.split(".")[0]  # `stats.print_summary`: one of our modules of that name has it
            names = [
                ".".join((*p.relative_to(ROOT).with_suffix("").parts, word.split(".")[1]))
                for pkg in PACKAGES
                for p in (ROOT / pkg).rglob(f"{module}.py")
            ]
            if not any(_resolves(n) for n in names):
                missing.append(word)
    assert not missing, f"docs/architecture.md cites what does not exist: {sorted(set(missing))}"
    assert len(_cited()) > 100  # the check reads the document's citations
