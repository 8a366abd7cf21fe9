"""One text toolkit (issue 30, item 7): one stopword source, one tokenizer and one sentence
splitter per genre, read from the libraries directly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("medsimp", "pipelines", "alignment", "training", "scripts")


def _sources() -> dict[str, str]:
    return {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for package in PACKAGES
        for p in sorted((ROOT / package).rglob("*.py"))
    }


def test_one_stopword_source():
    """No NLTK corpus read back, sklearn's list only as the aligner's named pre-issue-30 option:
    spaCy's lists through medsimp.text.stopwords (medsimp.resources writes them as NLTK files
    for QuickUMLS only)."""
    found = {
        (path, pattern): 1
        for path, text in _sources().items()
        for pattern in (r"ENGLISH_STOP_WORDS", r"nltk\.corpus import stopwords", r"stopwords\.words\(")
        if re.search(pattern, text)
    }
    assert found == {("alignment/text.py", "ENGLISH_STOP_WORDS"): 1}
    readers = {path for path, text in _sources().items() if re.search(r"\.stop_words\b", text)}
    assert readers == {"medsimp/text/stopwords.py", "medsimp/resources/__init__.py"}


@pytest.mark.slow  # imports spaCy (seconds)
def test_stop_words_are_spacys_per_language():
    """The lists equal spaCy's `STOP_WORDS` (all 72 of spaCy 3.7.5 did when this was written)."""
    import importlib

    from medsimp.text.stopwords import _spacy_lang_dir, stop_words

    codes = {p.parent.name for p in _spacy_lang_dir().glob("*/stop_words.py")}
    assert {"en", "es", "fr", "fa", "de"} <= codes
    for code in ("en", "es", "fr", "fa", "de"):
        assert stop_words(code) == importlib.import_module(f"spacy.lang.{code}.stop_words").STOP_WORDS, code


def test_stop_words_are_read_without_importing_spacy():
    import subprocess
    import sys

    from medsimp.text.stopwords import stop_words

    assert stop_words("en_US") == stop_words("en") and len(stop_words("en")) == 326
    assert "patient" not in stop_words("en") and {"the", "using"} <= stop_words("en")
    assert stop_words("xx-unknown") == frozenset() and stop_words("../en") == frozenset()
    probe = "import sys; from medsimp.text.stopwords import stop_words; stop_words('en'); print('spacy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_aligner_content_tokens_use_the_toolkit():
    """spaCy's English list: "system" is a content word, "did"/"using" are not (sklearn's list
    had it the other way round)."""
    from alignment.text import content_tokens

    assert content_tokens("We did it using the system") == {"system"}
    with pytest.raises(ValueError, match="unknown stop-word list 'nltk'"):
        content_tokens("x", "nltk")


@pytest.mark.slow  # imports torch and scikit-learn (seconds)
def test_crf_keeps_its_stop_word_list(tmp_path):
    """A CRF trained with the named old list (params `align.crf.stopwords`) saves it and aligns
    with it after loading; the default's config has no such key (model bytes and content hash
    as before), and a config without it reads spaCy's list."""
    from alignment.text import content_tokens

    assert content_tokens("We did it using the system", "sklearn") == {"did", "using"}  # the old list
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "alignment"))
    from fakes import HashEncoder  # the CRF tests' deterministic encoder

    from alignment.crf import CRFAligner
    from alignment.gold import DocPair
    from medsimp.params_schema import Crf

    docs = [DocPair("d", ["A system failed.", "It was fixed."], ["The system broke."], frozenset({(0, 0)}))]
    CRFAligner.train(docs, HashEncoder(), Crf(epochs=2, stopwords="sklearn")).save(tmp_path / "old")
    CRFAligner.train(docs, HashEncoder(), Crf(epochs=2)).save(tmp_path / "new")
    assert '"stopwords": "sklearn"' in (tmp_path / "old" / "config.json").read_text()
    assert "stopwords" not in (tmp_path / "new" / "config.json").read_text()  # spaCy's: bytes as before
    loaded = CRFAligner.load(tmp_path / "old", HashEncoder())
    assert loaded.config.stopwords == "sklearn"
    # a model saved before the key was a param (no `stopwords` in its config) reads spaCy's list
    old = json.loads((tmp_path / "old" / "config.json").read_text())
    del old["stopwords"]
    (tmp_path / "old" / "config.json").write_text(json.dumps(old))
    assert CRFAligner.load(tmp_path / "old", HashEncoder()).config.stopwords == "spacy"
    loaded.align(["A system failed."], ["The system broke."])


def test_multilingual_word_tokens():
    from medsimp.text.multilingual import word_tokens

    assert word_tokens("Los NIÑOS tomaron 2,5 mg — l'hôpital; بیمار_ها") == [
        "los",
        "niños",
        "tomaron",
        "2",
        "5",
        "mg",
        "l",
        "hôpital",
        "بیمار_ها",
    ]


def _plaba(tmp_path: Path) -> Path:
    import json

    text = "It was lower in the group taking vitamin D. The other group had the same levels."
    rec = {"abstract": {"1": "Vitamin D lowered antibody levels."}, "translation1": {"1": text}}
    path = tmp_path / "plaba.json"
    path.write_text(json.dumps({"q1": {"question": "q?", "123": rec}}), encoding="utf-8")
    return path


@pytest.mark.slow  # spaCy's sentencizer: imports spaCy (seconds)
def test_plaba_gold_sentences_are_a_named_choice(tmp_path):
    """PLABA's adaptations are split by spaCy's sentencizer unless `multilingual` (the toolkit's
    splitter) is named: it lowered the CRF's F1 on PLABA dev (docs/alignment.md)."""
    from alignment.gold import read_plaba
    from medsimp.text.multilingual import split_sentences

    path = _plaba(tmp_path)
    (spacy_doc,) = read_plaba(path)
    (toolkit_doc,) = read_plaba(path, sentences="multilingual")
    assert len(spacy_doc.simple) == 1  # spaCy's sentencizer keeps "vitamin D. The" together
    text = spacy_doc.simple[0]
    assert toolkit_doc.simple == [s.text for s in split_sentences(text, "en")]
    assert len(toolkit_doc.simple) == 2 and toolkit_doc.pairs == {(0, 0), (0, 1)}
    with pytest.raises(ValueError, match="unknown PLABA sentence splitter 'pysbd'"):
        read_plaba(path, sentences="pysbd")
