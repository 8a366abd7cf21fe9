"""The streaming MIMIC note reader: CSV edge cases, rejects with reasons, byte ranges, schemas."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pytest

from pipelines.sources import noteevents
from pipelines.sources.noteevents import Filtered, Note, NoteFileError, Reject, iter_records, plan_ranges

HEADER = (
    b'"ROW_ID","SUBJECT_ID","HADM_ID","CHARTDATE","CHARTTIME","STORETIME","CATEGORY",'
    b'"DESCRIPTION","CGID","ISERROR","TEXT"\n'
)
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def row(rid: int, text: bytes, cat: str = "Discharge summary", iserror: str = "", hadm: str = "123") -> bytes:
    return (f'{rid},{1000 + rid},{hadm},2151-08-04,,,"{cat}","Report",,{iserror},').encode() + text + b"\n"


def write(tmp_path: Path, *rows: bytes, name: str = "NOTEEVENTS.csv") -> str:
    path = tmp_path / name
    path.write_bytes(HEADER + b"".join(rows))
    return str(path)


def test_quoted_newlines_commas_and_escaped_quotes(tmp_path):
    text = b'"Brief Hospital Course:\nPt, 67 y/o, said ""fine"",\n\n2. HTN: cont. meds\n"'
    path = write(tmp_path, row(1, text), row(2, b'"second, note"', hadm=""))
    notes = list(iter_records(path))
    assert [type(n) for n in notes] == [Note, Note]
    assert notes[0].text == 'Brief Hospital Course:\nPt, 67 y/o, said "fine",\n\n2. HTN: cont. meds\n'
    assert (notes[0].note_id, notes[0].subject_id, notes[0].hadm_id) == ("1", 1001, 123)
    assert notes[1].hadm_id is None and notes[1].text == "second, note"
    assert notes[0].locator == f"NOTEEVENTS.csv@{len(HEADER)}"


def test_crlf_line_endings(tmp_path):
    path = write(tmp_path, row(1, b'"a\r\nb"')[:-1] + b"\r\n", row(2, b'"c"')[:-1] + b"\r\n")
    assert [n.text for n in iter_records(path)] == ["a\r\nb", "c"]


def test_each_broken_row_has_its_reason_and_the_rest_survive(tmp_path):
    path = write(
        tmp_path,
        row(1, b'"ok one"'),
        row(2, b'"He said "no" today"'),  # stray quotes inside a quoted field
        row(3, b'"never closed\nIMPRESSION: none.'),  # unbalanced quote: ends at the next row
        row(4, b'"fever 102\xff\xfe F"'),  # invalid UTF-8
        row(5, b'""'),  # empty TEXT
        row(6, b'"  \n "'),  # blank TEXT
        row(7, b'"x","extra field"'),  # 12 fields
        row(8, b'"ok two"'),
    )
    got = [(type(r).__name__, getattr(r, "reason", "")) for r in iter_records(path)]
    assert got == [
        ("Note", ""),
        ("Reject", "unparseable"),
        ("Reject", "unparseable"),
        ("Reject", "bad_utf8"),
        ("Reject", "missing_text"),
        ("Reject", "missing_text"),
        ("Reject", "wrong_field_count"),
        ("Note", ""),
    ]


def test_rejects_carry_offsets_and_field_names_never_text(tmp_path):
    secret = b"SECRET-NOTE-TEXT"
    path = write(
        tmp_path, row(1, b'"' + secret + b' \xff"'), row(2, b'"' + secret + b' "x" y"'), row(3, b'"' + secret)
    )
    rejects = [r for r in iter_records(path) if isinstance(r, Reject)]
    assert len(rejects) == 3
    bad = rejects[0]
    assert bad.detail == {
        "byte_offset": len(HEADER) + len(row(1, b'"' + secret + b" ")) - 1,
        "fields": ["TEXT"],
    }
    for r in rejects:
        assert "SECRET" not in repr(r.as_dict())


def test_category_and_iserror_filters(tmp_path):
    path = write(
        tmp_path,
        row(1, b'"a"'),
        row(2, b'"b"', cat="Radiology"),
        row(3, b'"c"', iserror="1"),
        row(4, b'"d"', cat="Physician "),
        row(5, b'"e"', cat="discharge SUMMARY"),
    )
    kinds = [r.reason if isinstance(r, Filtered) else r.note_id for r in iter_records(path)]
    assert kinds == ["1", "category", "iserror", "category", "5"]
    radiology = [r.note_id for r in iter_records(path, categories=["radiology"]) if isinstance(r, Note)]
    assert radiology == ["2"]
    everything = [r for r in iter_records(path, categories=None)]
    assert [type(r) for r in everything] == [Note, Note, Filtered, Note, Note]


def test_filtered_rows_skip_text_checks_but_not_quote_balance(tmp_path):
    path = write(
        tmp_path,
        row(1, b'"bad \xff bytes"', cat="Radiology"),
        row(2, b'"open quote', cat="Radiology"),
        row(3, b'"fine"'),
    )
    got = [getattr(r, "reason", "note") for r in iter_records(path)]
    assert got == ["category", "unparseable", "note"]


@pytest.mark.parametrize("parts", [2, 3, 5, 11])
def test_byte_ranges_yield_exactly_the_sequential_records(tmp_path, monkeypatch, parts):
    monkeypatch.setattr(noteevents, "CHUNK", 64)  # tiny reads: exercise buffer refills too
    monkeypatch.setattr(noteevents, "MAX_RECORD_BYTES", 300)
    rows = [row(i, b'"line one, with comma\n' + b"x" * (i * 7 % 50) + b'\n2. HTN:\n"') for i in range(1, 40)]
    rows[10] = row(11, b'"unterminated\nstill inside')
    rows[20] = row(21, b'"bad \xff"')
    rows[30] = row(31, b'"' + b"z" * 500 + b'"')  # too large: found at whatever point the buffer ends
    path = write(tmp_path, *rows)
    size = Path(path).stat().st_size
    sequential = [repr(r) for r in iter_records(path, categories=None)]
    ranges = plan_ranges(path, size, parts)
    assert len(ranges) == parts and ranges[0][0] == 0 and ranges[-1][1] is None
    split = [repr(r) for rg in ranges for r in iter_records(path, categories=None, byte_range=rg)]
    assert split == sequential and len(sequential) == 39


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
@pytest.mark.parametrize("chunk", [16, 64, 1000])
def test_cuts_are_the_grammar_scans_first_row_starts(tmp_path, monkeypatch, newline, chunk):
    """`plan_ranges` passes runs of whole rows in bulk: its cuts are still, for each multiple of
    size / parts, the first row start at or after it that the row-by-row grammar scan finds,
    across blank lines, malformed and too-large rows, any newline and buffer edges."""
    import random

    monkeypatch.setattr(noteevents, "CHUNK", chunk)
    monkeypatch.setattr(noteevents, "MAX_RECORD_BYTES", 300)
    rnd = random.Random(chunk)
    rows = [row(i, b'"a, b\n' + b"x" * rnd.randint(0, 60) + b'\n""q"" 2. HTN:"') for i in range(1, 80)]
    rows[7] = row(8, b'"never closed\nstill')
    rows[15] = b"\n\n" + rows[15]  # blank lines
    rows[30] = row(31, b'"' + b"z" * 400 + b'"')  # over MAX_RECORD_BYTES
    rows[44] = row(45, b'"text" after the quote')
    rows[60] = b"1,2,3\n"  # too few fields
    path = write(tmp_path, *(r.replace(b"\n", newline) for r in rows))
    size = Path(path).stat().st_size
    offsets = [
        c if isinstance(c, int) else c.offset
        for _, c in noteevents._Reader(path, None, "", lambda p: open(p, "rb")).cuts(
            0, None, wanted=lambda schema, category: False
        )
    ]
    for parts in (2, 3, 7, 19):
        step = -(-size // parts)
        firsts = [next((o for o in offsets if o >= i * step), None) for i in range(1, parts)]
        expected = sorted({0, *(o for o in firsts if o is not None)})
        ranges = plan_ranges(path, size, parts)
        assert [a for a, _ in ranges] == expected, parts


@pytest.mark.parametrize("chunk", [16, 64, 1000])
def test_runs_of_filtered_rows_count_the_rows_one_by_one_reading_gives(tmp_path, monkeypatch, chunk):
    """`iter_records(runs=True)` gives consecutive rows filtered by category as one Filtered
    whose `rows` counts them: expanded, the records are the row-by-row reading's, in order, in
    every byte range, across malformed rows, blank lines and buffer edges."""
    monkeypatch.setattr(noteevents, "CHUNK", chunk)
    cats = ["Radiology", "Nursing/other", "Discharge summary", "ECG"]
    rows = [row(i, b'"t, ' + b"y" * (i % 13) + b'\n"', cat=cats[i * 7 % 11 % 4]) for i in range(1, 90)]
    rows[5] = row(6, b'"open', cat="Radiology")
    rows[20] = b"\n" + rows[20]
    rows[33] = row(34, b'"x"', cat="Discharge summary", iserror="1")
    path = write(tmp_path, *rows)
    size = Path(path).stat().st_size

    def expanded(rg):
        for r in iter_records(path, byte_range=rg, runs=True):
            yield from [Filtered(r.reason)] * r.rows if isinstance(r, Filtered) else [r]

    for parts in (1, 2, 5):
        for rg in plan_ranges(path, size, parts) if parts > 1 else [(0, None)]:
            one_by_one = list(iter_records(path, byte_range=rg))
            assert list(expanded(rg)) == one_by_one
    runs = [r for r in iter_records(path, runs=True) if isinstance(r, Filtered)]
    assert max(r.rows for r in runs) > 1 and sum(r.rows for r in runs) == sum(
        isinstance(r, Filtered) for r in iter_records(path)
    )


def test_gzip_is_one_range_and_reads_the_same(tmp_path):
    plain = write(tmp_path, row(1, b'"a\nb"'), row(2, b'"c"'))
    gz = tmp_path / "NOTEEVENTS.csv.gz"
    gz.write_bytes(gzip.compress(Path(plain).read_bytes()))
    assert plan_ranges(str(gz), 10**9, 4) == [(0, None)]
    assert [n.text for n in iter_records(str(gz))] == ["a\nb", "c"]


def test_mimic4_discharge_sample():
    notes = list(iter_records(str(SAMPLE / "mimic4" / "discharge.csv.gz")))
    assert len(notes) == 4 and all(isinstance(n, Note) for n in notes)
    assert notes[0].note_id == "10000032-DS-21" and notes[0].category == "Discharge summary"
    assert notes[0].hadm_id == 22590853 and notes[0].chartdate == "2180-05-01"
    radiology = list(iter_records(str(SAMPLE / "mimic4" / "discharge.csv.gz"), categories=["Radiology"]))
    assert radiology == [Filtered("category")] * 4


def test_embedded_sample_outcomes():
    counts = Counter(
        type(r).__name__ + ":" + getattr(r, "reason", "")
        for r in iter_records(str(SAMPLE / "NOTEEVENTS.csv"))
    )
    assert counts == {
        "Note:": 10,
        "Filtered:category": 12,
        "Filtered:iserror": 1,
        "Reject:unparseable": 2,
        "Reject:bad_utf8": 1,
        "Reject:missing_text": 1,
        "Reject:wrong_field_count": 1,
    }


def test_unknown_header_is_a_clear_error(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(b"a,b,c\n1,2,3\n")
    with pytest.raises(
        NoteFileError, match="x.csv: the first line is not a note table header; expected mimic3"
    ):
        list(iter_records(str(path)))


def test_oversized_record_is_rejected_and_reading_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(noteevents, "CHUNK", 64)
    monkeypatch.setattr(noteevents, "MAX_RECORD_BYTES", 200)
    path = write(tmp_path, row(1, b'"' + b"y" * 1000 + b'"'), row(2, b'"ok"'))
    got = [getattr(r, "reason", "note") for r in iter_records(path)]
    assert got == ["record_too_large", "note"]


def test_oversized_record_of_an_unwanted_category_is_still_rejected(tmp_path, monkeypatch):
    # Rows of other categories are counted from their offsets; one over the limit is a
    # dead letter all the same.
    monkeypatch.setattr(noteevents, "MAX_RECORD_BYTES", 200)
    path = write(tmp_path, row(1, b'"' + b"y" * 300 + b'"', cat="Nursing"), row(2, b'"ok"', cat="Nursing"))
    got = [getattr(r, "reason", "note") for r in iter_records(path)]
    assert got == ["record_too_large", "category"]


def test_oversized_record_that_breaks_the_grammar_late_does_not_hang(tmp_path, monkeypatch):
    # The fault comes after the row's start has been dropped from the buffer.
    import threading

    monkeypatch.setattr(noteevents, "MAX_HEADER_BYTES", 200)  # the first read: just past the header
    monkeypatch.setattr(noteevents, "CHUNK", 256)
    monkeypatch.setattr(noteevents, "MAX_RECORD_BYTES", 1000)
    path = write(tmp_path, row(1, b"a" * 1300 + b'x"y'), row(2, b'"fine"'))
    got: list[str] = []
    reader = threading.Thread(
        target=lambda: got.extend(getattr(r, "reason", "note") for r in iter_records(path)), daemon=True
    )
    reader.start()
    reader.join(timeout=20)
    assert not reader.is_alive(), "the reader loops forever"
    assert got == ["record_too_large", "note"]
