"""Clinical notes (invented text): MIMIC-III's "HOSPITAL COURSE:" header is one params line away
(the defaults are the paper's three sections), and list prefixes ("1.  CHF exacerbation:") are
taken out of sentences (issue 29)."""

from __future__ import annotations

import pytest

from medsimp.params_schema import Notes
from medsimp.text.sentences import splitter
from pipelines.text.sections import DEFAULT_TARGETS, HOSPITAL_COURSE, SectionExtractor, extractor_from_params

WIDER = extractor_from_params(Notes(headers={**DEFAULT_TARGETS, **HOSPITAL_COURSE}))

NOTE = (
    "Admission Date:  [**2101-1-1**]\n"
    "HISTORY OF PRESENT ILLNESS:  Pt is a 70 yo M with CHF who presented with SOB.\n"
    "HOSPITAL COURSE:\n"
    "1.  CHF exacerbation:  Pt was diuresed with IV lasix and his SOB improved over 3 days.\n"
    "2.  Afib:  Rate controlled with metoprolol, anticoagulated with coumadin.\n"
    "# HTN: BP stable on home meds.\n"
    "DISCHARGE MEDICATIONS:\n"
    "Lasix 40 mg PO daily.\n"
)


def test_hospital_course_header_is_the_documented_option():
    assert [s.name for s in SectionExtractor().extract(NOTE)] == ["History of Present Illness"]
    sections = [(s.name, s.text.splitlines()[0]) for s in WIDER.extract(NOTE)]
    assert sections == [
        ("History of Present Illness", "Pt is a 70 yo M with CHF who presented with SOB."),
        (
            "Hospital Course",
            "1.  CHF exacerbation:  Pt was diuresed with IV lasix and his SOB improved over 3 days.",
        ),
    ]


def test_brief_hospital_course_keeps_its_own_name():
    text = "Brief Hospital Course:\nStable.\nHospital Course:\nAlso stable.\n"
    assert [(s.name, s.text) for s in WIDER.extract(text)] == [
        ("Brief Hospital Course", "Stable."),
        ("Hospital Course", "Also stable."),
    ]


@pytest.mark.parametrize("name", ["rules", "rush"])
def test_list_prefixes_leave_the_sentence(name):
    (course,) = [s for s in WIDER.extract(NOTE) if s.name == "Hospital Course"]
    got = [course.text[a:b] for a, b in splitter(name)(course.text)]
    assert got[:4] == [
        "CHF exacerbation:",
        "Pt was diuresed with IV lasix and his SOB improved over 3 days.",
        "Afib:",
        "Rate controlled with metoprolol, anticoagulated with coumadin.",
    ]
    assert not any(g[0].isdigit() or g.startswith(("#", "-")) for g in got)


def test_sentences_without_a_list_prefix_are_unchanged():
    text = "Sodium was 3. Potassium was normal: 4.1 today.\nVitals: T 98.6 BP 120/80."
    assert [text[a:b] for a, b in splitter("rules")(text)] == [
        "Sodium was 3.",
        "Potassium was normal: 4.1 today.",
        "Vitals: T 98.6 BP 120/80.",
    ]
