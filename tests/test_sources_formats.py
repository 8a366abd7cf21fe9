"""Cochrane / MSD / PLABA formats, the DOI join, and sentence splitting of statistics."""

import json
from pathlib import Path

import pytest

from medsimp.errors import InputError
from medsimp.params_schema import Msd
from medsimp.text.multilingual import split_sentences
from pipelines.sources.cochrane import (
    FormatError,
    devaraj_prefixes,
    join_reviews,
    normalise_doi,
    parse_canonical_line,
    read_devaraj,
    split_doi,
)
from pipelines.sources.msd import assemble, parse_line, pcio_lookup
from pipelines.sources.plaba import document_sentence_rows, gold_pairs, iter_documents
from pipelines.sources.records import Line

FIX = Path(__file__).parent / "fixtures" / "sources"


def test_doi_normalisation():
    assert split_doi("10.1002/14651858.CD011364.pub2") == ("10.1002/14651858.CD011364", 2)
    assert split_doi("https://doi.org/10.1002/14651858.CD011364") == ("10.1002/14651858.CD011364", 1)
    assert normalise_doi(" 10.1002/14651858.CD000370.PUB12 ") == "10.1002/14651858.CD000370"


def _line(**obj):
    return json.dumps(obj)


def test_canonical_record_and_errors():
    rec = parse_canonical_line(_line(doi="10.1/x.CD1.pub3", language="es", title="t", pls="Texto."), "f:1")
    assert (rec.doi, rec.version, rec.language, rec.abstract) == ("10.1/x.CD1", 3, "es", ())
    assert rec.pls[0].text == "Texto."
    for bad, reason in [
        ("{", "bad_json"),
        (_line(language="en", pls="x"), "missing_doi"),
        (_line(doi="10.1/d", language="english", pls="x"), "bad_language"),
        (_line(doi="10.1/d", language="en", abstract=[], pls=""), "empty_record"),
        (_line(doi="10.1/d", language="en", abstract=[{"heading": "B"}]), "bad_abstract"),
        (_line(doi="d", language="en", pls="x"), "bad_doi"),
        (_line(doi="10.1/d.pub99999999999", language="en", pls="x"), "bad_doi"),
        (_line(doi="10.1/d", version=True, language="en", pls="x"), "bad_version"),
        (_line(doi="10.1/d", version=2**40, language="en", pls="x"), "bad_version"),
    ]:
        with pytest.raises(FormatError) as err:
            parse_canonical_line(bad, "f:2")
        assert err.value.reason == reason


def test_devaraj_directory_and_prefix():
    assert devaraj_prefixes(str(FIX / "devaraj")) == [str(FIX / "devaraj" / "val")]
    assert devaraj_prefixes(str(FIX / "devaraj" / "val")) == [str(FIX / "devaraj" / "val")]
    items = list(read_devaraj(str(FIX / "devaraj" / "val")))
    assert [loc for loc, _ in items] == [f"val.doi:{i}" for i in (1, 2, 3, 4)]
    first = items[0][1]
    assert (first.doi, first.version, first.language) == ("10.1002/14651858.CD000001", 2, "en")
    assert [e.reason for _, e in items[2:]] == ["empty_record", "line_counts_differ"]
    with pytest.raises(InputError, match="missing"):
        devaraj_prefixes(str(FIX / "nothing"))


def test_join_by_doi_keeps_latest_version_and_rejects_orphans():
    def rec(doi, lang, loc, abstract=True):
        return parse_canonical_line(
            _line(
                doi=doi,
                language=lang,
                pls="P.",
                abstract=[{"heading": "H", "text": "A."}] if abstract else None,
            ),
            loc,
        )

    old, new = rec("10.1/CD1.pub2", "en", "f:1"), rec("10.1/CD1.pub3", "en", "f:2")
    es, fr = rec("10.1/CD1.pub3", "es", "f:3", False), rec("10.1/CD1", "fr", "f:4", False)
    review, filtered, orphans = join_reviews([es, old, fr, new])
    assert review.abstract is new and sorted(review.pls) == ["en", "es", "fr"]
    assert filtered == [old] and orphans == []
    review, filtered, orphans = join_reviews([rec("10.1/CD2", "es", "f:9", False)])
    assert review is None and len(orphans) == 1


@pytest.mark.parametrize(
    "language,text,expected",
    [
        (
            "en",
            "Relapse fell (RR 2.34; 95% 1.19 to 4.61; 1 trial, 285 participants). Mortality fell "
            "(OR 0.31, 95% CI 0.14 to 0.68). We found 95% CI 0.14 to 0.68. Dr. Smith agreed.",
            4,
        ),
        (
            "es",
            "El riesgo fue menor (RR 0,45; IC del 95%: 0,21 a 0,97; 2 ensayos, 300 participantes). "
            "Aprox. 3 ensayos lo confirmaron.",
            2,
        ),
        ("fr", "La douleur a diminué (DM -1,2 ; IC à 95 % -2,0 à -0,4). Les effets étaient rares.", 2),
        (
            "fa",
            "آسم یک بیماری شایع است. سردرد با دارو و دارونما به یک اندازه شایع بود (RR 1.02; 95% 0.71 to 1.46).",
            2,
        ),
    ],
)
def test_sentence_splitting_keeps_statistics(language, text, expected):
    sents = split_sentences(text, language)
    assert len(sents) == expected
    for s in sents:
        assert text[s.start : s.end] == s.text
        assert s.text.count("(") == s.text.count(")")
    assert (
        "95% CI 0.14 to 0.68" in " ".join(s.text for s in split_sentences(text, language)) or language != "en"
    )


@pytest.mark.parametrize(
    "language,text,expected",
    [
        (
            "en",
            "Adults with chronic hepatitis C. Participants were 18 years or older.",
            ["Adults with chronic hepatitis C.", "Participants were 18 years or older."],
        ),
        (
            "es",
            "Pacientes con hepatitis B. Los ensayos eran pequeños.",
            ["Pacientes con hepatitis B.", "Los ensayos eran pequeños."],
        ),
        (
            "fr",
            "Le manque de vitamine D. Les essais étaient petits.",
            ["Le manque de vitamine D.", "Les essais étaient petits."],
        ),
        (
            "en",
            "Data from J. F. Kennedy Hospital. Group A. Group B had placebo (see appendix A. Table 2).",
            ["Data from J. F. Kennedy Hospital.", "Group A. Group B had placebo (see appendix A. Table 2)."],
        ),
    ],
)
def test_sentence_splitting_after_a_single_capital(language, text, expected):
    sents = split_sentences(text, language)
    assert [s.text for s in sents] == expected
    assert all(text[s.start : s.end] == s.text for s in sents)


def test_msd_dataset_pairs_and_pcio_groups():
    lines = (FIX / "msd_test.jsonl").read_text().splitlines()
    recs = [
        parse_line(Line(line, i + 1, i + 1, f"msd_test.jsonl:{i + 1}"), "msd_test", True)
        for i, line in enumerate(lines[:4])
    ]
    assert [r.doc_id for r in recs] == ["msd_test-1", "msd_test-1", "msd_test-2", "msd_test-2"]
    with pytest.raises(FormatError) as err:
        parse_line(Line(lines[4], 5, 5, "msd_test.jsonl:5"), "msd_test", True)
    assert err.value.reason == "bad_label"
    rows, groups, filtered, rejected = assemble("msd_test-1", recs[:2], {}, splitter=Msd().splitter)
    assert [g["pcio"] for g in groups] == ["test_pair"] and not rejected
    expert = [r for r in rows if r["side"] == "complex"][0]
    assert expert["gold_concepts"][1] == {"start": 12, "end": 22, "term": "chest pain", "cui": "C0008031"}
    _, _, _, rejected = assemble("msd_test-2", recs[2:], {}, splitter=Msd().splitter)
    assert [reason for _, reason in rejected] == ["bad_pair", "bad_pair"]
    lookup = pcio_lookup({"symptoms": ["Symptoms and Signs", "Symptoms"], "treatment": ["Treatment"]})
    docs = [
        parse_line(
            Line(json.dumps({"topic": "Gout", "audience": aud, "sections": secs}), i, i, f"m:{i}"), "m", False
        )
        for i, (aud, secs) in enumerate(
            [
                (
                    "professional",
                    [
                        {"heading": "Symptoms and Signs", "text": "Acute monoarthritis occurs."},
                        {"heading": "Etiology", "text": "Urate crystals deposit."},
                    ],
                ),
                ("consumer", [{"heading": "Symptoms", "text": "A joint gets very painful."}]),
            ],
            start=1,
        )
    ]
    rows, groups, _, _ = assemble("gout", docs, lookup, splitter=Msd().splitter)
    assert [(g["group_id"], g["n_complex"], g["n_simple"]) for g in groups] == [("gout:symptoms", 1, 1)]
    assert [r["pcio"] for r in rows] == ["symptoms", "", "symptoms"]


def test_plaba_deletions_splits_and_errors():
    data = {
        "7": {
            "question": "Q?",
            "111": {
                "Title": "T",
                "abstract": {"1": "First sentence.", "2": "Second sentence.", "3": "Third."},
                "translation1": {"1": "One. Two.", "2": ""},
                "translation2": {"1": "Only one.", "2": "Kept.", "3": "Also kept."},
            },
            "112": {"abstract": {"1": "x"}, "translation1": {"9": "no such number"}},
        },
        "8": [],
    }
    items = list(iter_documents(json.dumps(data), "p.json"))
    assert [loc for loc, _ in items] == ["p.json#7/111", "p.json#7/112", "p.json#8"]
    assert [v.reason for _, v in items[1:]] == ["unknown_sentence_number", "bad_question"]
    doc = items[0][1]
    rows = document_sentence_rows(doc, "p.json#7/111")
    pairs = gold_pairs(doc, rows)
    assert [(p["pair_id"], p["alignment"], p["n_simple"]) for p in pairs] == [
        ("7:111:1", "1-N", 2),
        ("7:111:2", "1-0", 0),
        ("7:111:3", "1-0", 0),
        ("7:111:a2:1", "1-1", 1),
        ("7:111:a2:2", "1-1", 1),
        ("7:111:a2:3", "1-1", 1),
    ]
    assert pairs[0]["simple_ids"] == ["plaba:7:111:simple:en:0", "plaba:7:111:simple:en:1"]
    assert pairs[3]["simple_ids"] == ["plaba:7:111:a2:simple:en:0"]
    assert len({r["sentence_id"] for r in rows}) == len(rows)


def test_jsonl_line_with_invalid_utf8_is_rejected_not_replaced(tmp_path):
    from pipelines.jobs.cochrane import read_spec
    from pipelines.sources.cochrane import FormatError

    good = (
        '{"doi": "10.1002/14651858.CD000001.pub2", "language": "en", "title": "T", '
        '"abstract": [{"heading": "Main results", "text": "It worked."}], "pls": "It helped."}'
    )
    path = tmp_path / "reviews.jsonl"
    path.write_bytes(good.encode() + b"\n" + b'{"doi": "x\xff"}\n\n')
    items = list(read_spec(("jsonl", str(path))))
    assert [loc for loc, _ in items] == ["reviews.jsonl:1", "reviews.jsonl:2"]
    assert not isinstance(items[0][1], FormatError)
    assert isinstance(items[1][1], FormatError) and items[1][1].reason == "bad_utf8"


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"abstract": {"1": "  "}, "translation1": {"1": "x"}}, "empty_abstract"),
        ({"abstract": {"1": "Asthma is common."}}, "no_adaptation"),
    ],
)
def test_plaba_document_faults_are_named(entry, reason):
    from pipelines.sources.plaba import parse_document
    from pipelines.sources.records import FormatError

    with pytest.raises(FormatError) as err:
        parse_document("q1", "What is asthma?", "123", entry)
    assert err.value.reason == reason


@pytest.mark.parametrize("topic", [None, 7, "", " -- "])
def test_msd_record_without_a_usable_topic_is_missing_topic(topic):
    from pipelines.sources.records import FormatError

    obj = {"topic": topic, "audience": "consumer", "sections": []}
    with pytest.raises(FormatError) as err:
        parse_line(Line(json.dumps(obj), 1, 1, "m:1"), "m", False)
    assert err.value.reason == "missing_topic"
