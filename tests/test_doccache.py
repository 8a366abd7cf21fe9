"""The document cache's keys follow the code that computes a cached result."""

from __future__ import annotations

import sys

import pytest

from medsimp.doccache import code_version, content_key


def test_code_version_changes_with_the_source(tmp_path, monkeypatch):
    module = tmp_path / "cached_thing.py"
    module.write_text("def f():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code_version.cache_clear()
    before = code_version("cached_thing")
    module.write_text("def f():\n    return 2\n")
    code_version.cache_clear()
    after = code_version("cached_thing")
    assert before != after and len(after) == 16
    assert content_key(before, "text") != content_key(after, "text")
    sys.modules.pop("cached_thing", None)


def test_code_version_of_a_missing_module_is_an_error():
    with pytest.raises(ValueError, match="no source"):
        code_version("medsimp.no_such_module")


def test_link_and_embedding_keys_name_their_code():
    from pipelines.jobs import link

    assert "pipelines.text.umls" in link.CODE and "medsimp.text.readability" in link.CODE
    code_version.cache_clear()
    assert code_version(*link.CODE) == code_version(*link.CODE)
