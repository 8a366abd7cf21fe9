"""Typed params sections reach the jobs (issue 30 item 2): Beam DoFns hold the pydantic
section itself, which must survive Beam's pickler; a plain dict (tests, scripts) is checked and
gets the schema's defaults, so the schema is the one home of defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from apache_beam.internal import pickler

from medsimp import config
from medsimp.params_schema import Notes, Radiology, Refresh, SchemaError, section_of, updated

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


def test_section_of_fills_the_schema_defaults_and_refuses_unknown_keys():
    """Tests and scripts build a typed section from a dict with `section_of` (the domain code
    takes typed sections only); `updated` replaces keys, checked the same way."""
    from pipelines.jobs import notes

    fn = notes._SectionsFn(section_of(Notes, {"batch_notes": 7}))
    assert fn.params == Notes(batch_notes=7) and fn.batch == 7
    assert section_of(Radiology, {}) == Radiology()
    assert updated(Notes(), {"batch_notes": 7}) == Notes(batch_notes=7)
    with pytest.raises(SchemaError, match="did you mean 'batch_notes'"):
        section_of(Notes, {"batch_note": 7})
    with pytest.raises(SchemaError, match="did you mean 'batch_notes'"):
        updated(Notes(), {"batch_note": 7})


def test_refresh_config_reads_the_typed_section():
    from medsimp.refresh.run import RefreshConfig

    root = Path("/r")
    cfg = RefreshConfig.from_params(Refresh(keep_reports=3, targets=["a"]), root)
    assert cfg.keep_reports == 3 and cfg.targets == ["a"] and cfg.report_dir == root / Refresh().report_dir


def test_the_section_bridge_is_gone():
    assert not hasattr(config, "section")  # code reads `params.<name>` (typed), not a dict bridge


def test_domain_code_takes_typed_sections_without_round_trips():
    """Issue 38 item 2: the domain packages read typed sections; they never turn a dict into a
    section (`section_of`) or a section back into a dict, except where the dict is the point:
    a model's saved config (the CRF's config.json, DECLARE's settings.json) and a cache key."""
    root = Path(__file__).resolve().parents[1]
    allowed = {
        ("alignment/crf.py", "save"),
        ("training/trainer.py", "save"),
        ("training/neural.py", "data_key"),  # the checkpoint key
        ("alignment/stage.py", "_recipe"),  # the pinned aligner's recipe key (issue 55)
        ("pipelines/text/umls.py", "matcher_settings"),
    }
    found = []
    for package in ("alignment", "training", "pipelines"):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            function = ""
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.lstrip().startswith("def "):
                    function = line.split("def ", 1)[1].split("(", 1)[0]
                if "section_of(" in line or ("model_dump(" in line and (rel, function) not in allowed):
                    found.append(f"{rel}:{function}: {line.strip()}")
    assert found == []
