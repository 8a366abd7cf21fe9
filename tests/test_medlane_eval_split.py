"""MedLane's single evaluation file shorter than `validation_size`: split in the paper's
proportion (1015 of 2031 to validation), with a warning and a card note (issue 29)."""

from __future__ import annotations

import logging

from medsimp.corpora.medlane import build
from medsimp.params_schema import BuildMedlane


def _folder(tmp_path, n_eval: int):
    train = "pt has htn .\npatient has high blood pressure .\nyou have high blood pressure .\n\n"
    evaluation = "".join(
        f"bp was {100 + n} on admission .\n"
        + "".join(f"{k} bp[blood pressure] was {100 + n} when admitted .\n" for k in (1, 2, 3, 4))
        + "\n"
        for n in range(n_eval)
    )
    (tmp_path / "train.txt").write_text(train * 3, encoding="utf-8")
    (tmp_path / "test.txt").write_text(evaluation, encoding="utf-8")
    return tmp_path


def test_a_short_evaluation_file_keeps_a_test_split(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="medsimp"):
        ds = build(BuildMedlane(input=str(_folder(tmp_path, 10)), candidates=None))  # validation_size 1015
    sizes = {split: table.num_rows for split, table in ds.configs["annotated"].items()}
    assert sizes == {"train": 3, "validation": 5, "test": 5}
    assert "10 records, not more than validation_size 1015" in caplog.text
    assert any("validation gets the paper's share" in note for note in ds.notes)


def test_a_full_evaluation_file_splits_as_the_paper(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="medsimp"):
        ds = build(BuildMedlane(input=str(_folder(tmp_path, 12)), validation_size=7, candidates=None))
    sizes = {split: table.num_rows for split, table in ds.configs["annotated"].items()}
    assert sizes == {"train": 3, "validation": 7, "test": 5}
    assert not caplog.text and not any("paper's share" in note for note in ds.notes)
