"""scripts/train_medlane_real.py's split of MedLane's evaluation file, on a hand-written file in
the same format (no ../shared, no MIMIC text): the first 1,015 records train (the last
`--validation` of them for early stopping), the other records test, untouched."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pipelines.sources.medlane import read_medlane_eval, read_medlane_train

SCRIPT = Path(__file__).parents[1] / "scripts" / "train_medlane_real.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("train_medlane_real", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(i: int) -> str:
    return (
        f"pt {i} with sob on cxr .\n"
        f"1 patient {i} with sob[shortness of breath] on cxr[chest x-ray] .\n"
        f"2 patient {i} had trouble breathing on the chest x-ray .\n"
    )


def test_the_first_1015_records_train_and_the_rest_test(script, tmp_path):
    text = "\n".join(_record(i) for i in range(2031))
    counts = script.prepare(text, tmp_path, 100)
    assert counts == {"records": 2031, "train": 915, "validation": 100, "test": 1016, "train_terms": 2}
    data = tmp_path / "data"
    train = read_medlane_train(data / "train.txt")
    assert [r["source"] for r in train] == [f"pt {i} with sob on cxr ." for i in range(915)]
    assert train[0]["target"] == "patient 0 with shortness of breath on chest x-ray ."  # annotations expanded
    validation, test = read_medlane_eval(data / "validation.txt"), read_medlane_eval(data / "test.txt")
    assert [r["source"] for r in validation] == [f"pt {i} with sob on cxr ." for i in range(915, 1015)]
    assert [r["source"] for r in test] == [f"pt {i} with sob on cxr ." for i in range(1015, 2031)]
    assert test[0]["raw_references"][0] == "patient 1015 with sob[shortness of breath] on cxr[chest x-ray] ."
    terms = json.loads((data / "train_terms.json").read_text(encoding="utf-8"))
    assert terms == {"cxr": ["chest x-ray"], "sob": ["shortness of breath"]}
