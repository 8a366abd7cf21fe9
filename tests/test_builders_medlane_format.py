"""The MedLane-format parser on the edge cases real files have."""

from __future__ import annotations

import pytest

from pipelines.sources.medlane import (
    MedLaneFormatError,
    expand_terms,
    read_medlane_eval,
    read_medlane_train,
    split_eval,
)

EVAL = (
    "pt was given abx .\n"
    "1 pt[patient] was given abx[antibiotics] .\n"
    "2 the patient was given medicine .\n"
    "3 you were given abx[antibiotics] .\n"
    "4 you were given medicine .\n"
    "\n"
    "70 yo man with hx of afib .\n"
    "170 yo[year old] man with hx[history] of afib .\n"  # prefix 1 glued to "70"
    "3you were seen for afib[atrial fibrillation] .\n"  # prefix 3 glued to a word
    "\n\n"
    "bp was low .\n"
    "1 blood pressure was low .\n"
    "1 blood pressure was low .\n"
    "\n   \n\n"  # trailing blank lines
)


def test_eval_records_parse_with_two_refs_glued_prefixes_and_trailing_blanks(tmp_path):
    path = tmp_path / "test.txt"
    path.write_text(EVAL, encoding="utf-8")
    recs = read_medlane_eval(path)
    assert [r["line"] for r in recs] == [1, 7, 12]
    assert recs[0]["reference_labels"] == [1, 2, 3, 4]
    assert recs[0]["references"][0] == "patient was given antibiotics ."
    assert recs[0]["raw_references"][0] == "pt[patient] was given abx[antibiotics] ."
    assert recs[0]["terms"] == [
        {"abbreviation": "pt", "expansion": "patient", "reference_index": 0},
        {"abbreviation": "abx", "expansion": "antibiotics", "reference_index": 0},
        {"abbreviation": "abx", "expansion": "antibiotics", "reference_index": 2},
    ]
    glued = recs[1]
    assert glued["reference_labels"] == [1, 3]
    assert glued["references"] == [
        "70 year old man with history of afib .",
        "you were seen for atrial fibrillation .",
    ]
    assert recs[2]["reference_labels"] == [1, 1] and len(recs[2]["terms"]) == 0


def test_train_records_and_crlf(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(
        b"pt is sob .\r\npatient is short of breath .\r\nyou are short of breath ."
        b"\r\n\r\nbp ok .\r\nblood pressure ok .\r\nyour blood pressure ok .\r\n\r\n\r\n"
    )
    recs = read_medlane_train(path)
    assert [(r["line"], r["target_second_person"]) for r in recs] == [
        (1, "you are short of breath ."),
        (5, "your blood pressure ok ."),
    ]


def test_bad_records_raise_or_are_rejected_without_text(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text(
        "secret source one .\nno prefix here .\n\nsecret two .\n\nok .\n1 fine .\n", encoding="utf-8"
    )
    with pytest.raises(MedLaneFormatError) as err:
        read_medlane_eval(path)
    assert "secret" not in str(err.value) and "bad.txt:2" in str(err.value)
    rejects: list[dict] = []
    recs = read_medlane_eval(path, rejects)
    assert [r["source"] for r in recs] == ["ok ."]
    assert [(r["locator"], r["reason"]) for r in rejects] == [
        ("bad.txt:2", "bad_reference_prefix"),
        ("bad.txt:4", "wrong_reference_count"),
    ]
    assert not any("secret" in r["detail"] or "prefix here" in r["detail"] for r in rejects)
    train_rejects: list[dict] = []
    assert read_medlane_train(path, train_rejects) == []
    assert {r["reason"] for r in train_rejects} == {"wrong_line_count"}


def test_split_eval_follows_the_paper():
    records = [{"n": i} for i in range(2031)]
    validation, test = split_eval(records)
    assert (len(validation), len(test)) == (1015, 1016)
    assert validation[-1]["n"] == 1014 and test[0]["n"] == 1015


def test_expand_terms_keeps_unannotated_text():
    assert (
        expand_terms("on iv[intravenous] abx , no [brackets] x[ ]")
        == "on intravenous abx , no [brackets] x[ ]"
    )
