"""Stop words per language: spaCy's `STOP_WORDS` (`spacy/lang/<code>/stop_words.py`), the one
stopword list of the toolkit (the aligners' lexical features, MedLane's CWR, the lexical
complexity measure).

The module is read directly, as `medsimp.text.lemmas` reads spaCy's lemma tables: importing
the `spacy` package costs seconds per process (per Beam worker), while spaCy's
`stop_words.py` files are plain literals that import nothing (tests/test_text_toolkit.py
checks the lists equal `spacy.lang.<code>.stop_words.STOP_WORDS`).

QuickUMLS reads stop words as NLTK corpus files; `medsimp.resources.ensure_nltk_data` writes
these same lists in that format for it, and nothing else reads them back.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path


def _spacy_lang_dir() -> Path | None:
    """spaCy's `lang` folder, found without importing spaCy (None when it is not installed)."""
    spec = importlib.util.find_spec("spacy")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "lang"


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    """spaCy's `STOP_WORDS` for `language` (ISO 639-1 code, e.g. `en`, `fr`, `fa`; a region
    such as `en_US` is dropped); empty when spaCy has no list for it."""
    code = language.replace("-", "_").split("_")[0].lower()
    lang_dir = _spacy_lang_dir()
    if not code.isalpha() or lang_dir is None:
        return frozenset()
    path = lang_dir / code / "stop_words.py"
    if not path.is_file():
        return frozenset()
    spec = importlib.util.spec_from_file_location(f"spacy.lang.{code}.stop_words", path)
    if spec is None or spec.loader is None:
        return frozenset()
    module = importlib.util.module_from_spec(spec)  # not put in sys.modules
    spec.loader.exec_module(module)
    return frozenset(module.STOP_WORDS)
