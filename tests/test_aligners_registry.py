"""Aligners are registered by file name (issue 56 section 4): `alignment/aligners/<name>.py`
with a `load(params, model_dir, cache)`; a new aligner is one file, and `align files --method`
offers it with nothing else changed."""

from __future__ import annotations

import sys

import pytest

from alignment import aligners
from medsimp.errors import UsageError
from medsimp.params_schema import Align

IDENTITY = '''
"""`identity`: the i-th source sentence with the i-th target sentence (a test aligner)."""


class Identity:
    def check(self, src_lang, tgt_lang):
        pass

    def align(self, src, tgt, src_lang, tgt_lang):
        n = min(len(src), len(tgt))
        return [((i,), (i,)) for i in range(n)], [1.0] * n


def load(params, model_dir, cache):
    return Identity()
'''


def test_the_registered_aligners_are_the_packages_modules():
    assert aligners.names() == ("crf", "vecalign")
    with pytest.raises(UsageError, match="unknown aligner 'labse'; choose from crf, vecalign"):
        aligners.load("labse", Align(), None, None)


def test_a_new_aligner_is_one_file(tmp_path, monkeypatch, capsys):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "identity.py").write_text(IDENTITY, encoding="utf-8")
    monkeypatch.setattr(aligners, "__path__", [*aligners.__path__, str(plugins)])
    monkeypatch.delitem(sys.modules, "alignment.aligners.identity", raising=False)
    assert aligners.names() == ("crf", "identity", "vecalign")
    found = aligners.load("identity", Align(), None, None)
    assert found.align(["a", "b", "c"], ["x", "y"], "en", "en") == ([((0,), (0,)), ((1,), (1,))], [1.0, 1.0])

    from medsimp.cli import main

    (tmp_path / "a.txt").write_text("One.\nTwo.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Uno.\nDos.\n", encoding="utf-8")
    argv = [
        "align",
        "files",
        "--method",
        "identity",
        "--src",
        str(tmp_path / "a.txt"),
        "--tgt",
        str(tmp_path / "b.txt"),
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == ["[0]:[0]:1.000000", "[1]:[1]:1.000000"]
