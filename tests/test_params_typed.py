"""Typed params sections reach the jobs (issue 30 item 2): Beam DoFns hold the pydantic
section itself, which must survive Beam's pickler; a plain dict (tests, scripts) is checked and
gets the schema's defaults, so the schema is the one home of defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from apache_beam.internal import pickler

from medsimp import config
from medsimp.params_schema import Notes, Radiology, Refresh, SchemaError

ROOT = Path(__file__).resolve().parents[1]


def test_dofns_pickle_with_their_typed_sections():
    from pipelines.jobs import align, notes, radiology

    params = config.load_params(ROOT / "params.yaml")
    fns = [
        (notes._SectionsFn(params.notes), params.notes),
        (notes._SentencesFn(params.notes, ([], []), "/tmp/x"), params.notes),
        (radiology._ExtractFn(params.radiology, None), params.radiology),
        (align.AlignDocFn(params.align, None), params.align),
    ]
    for fn, section in fns:
        back = pickler.loads(pickler.dumps(fn))
        assert type(back.params) is type(section) and back.params == section


def test_a_dict_gets_the_schema_defaults_and_unknown_keys_are_refused():
    from pipelines.jobs import notes, radiology
    from pipelines.text.notes import NoteProcessor

    fn = notes._SectionsFn({"batch_notes": 7})
    assert fn.params == Notes(batch_notes=7) and fn.batch == 7
    assert radiology._ExtractFn({}, None).params == Radiology()
    assert NoteProcessor({}, [], []).selector.min_tokens == Notes().min_tokens
    with pytest.raises(SchemaError, match="did you mean 'batch_notes'"):
        notes._SectionsFn({"batch_note": 7})


def test_refresh_config_reads_the_typed_section():
    from medsimp.refresh.run import RefreshConfig

    root = Path("/r")
    assert RefreshConfig.from_params({}, root) == RefreshConfig.from_params(Refresh(), root)
    cfg = RefreshConfig.from_params(Refresh(keep_reports=3, targets=["a"]), root)
    assert cfg.keep_reports == 3 and cfg.targets == ["a"] and cfg.report_dir == root / Refresh().report_dir


def test_the_section_bridge_is_gone():
    assert not hasattr(config, "section")  # code reads `params.<name>` (typed), not a dict bridge
