"""Optional dependencies: the extras of pyproject.toml and the modules each brings.

The package's runtime dependencies are what the data stages need (the Beam jobs, the aligners,
training). What only some commands import is an extra: `refresh` (DVC, for `medsimp refresh`),
`eval` (pycocoevalcap's METEOR/BLEU/ROUGE-L/CIDEr, rouge-score, BERTScore, fastText for
`medsimp evaluate`) and
`datasets` (Hugging Face `datasets`, for `load_dataset` on the builders; no command imports it).
`scripts/bootstrap.sh` installs every extra. A command that meets a missing one stops with one
line naming it (medsimp.cli.app); tests/test_extras.py checks this table against pyproject.toml.
"""

from __future__ import annotations

import importlib.util

# import name -> the extra that installs its distribution
EXTRAS: dict[str, str] = {
    "dvc": "refresh",
    "networkx": "refresh",
    "_ruamel_yaml": "refresh",  # ruamel.yaml.clib: DVC's YAML loads in C (dvc reads a 230 KB dvc.lock)
    "pycocoevalcap": "eval",
    "bert_score": "eval",
    "fasttext": "eval",
    "rouge_score": "eval",
    "datasets": "datasets",
}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """One line for a module an extra installs and this environment lacks; None for any other."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None or importlib.util.find_spec(top) is not None:  # installed: another fault
        return None
    return (
        f"needs {top}, which the [{extra}] extra installs: pip install 'medsimp[{extra}]' "
        "(scripts/bootstrap.sh installs every extra)"
    )
