"""The hostile-input corpus (tests/hostile/) through the real CLI of every source reader.

Each crafted file either reconciles (read = kept + filtered + rejected, with the expected
counts and dead-letter reasons) or is refused in one line with exit code 2. Never a
traceback, and the marker planted in every record's text never reaches stdout, stderr,
stats or dead letters.
"""

import json
from pathlib import Path

import pytest
from fuzz_readers import error_lines

from medsimp.cli import main

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = Path(__file__).parent / "hostile"
MARKER = "QQLEAKMARKERQQ"
BASE = ["--params", str(ROOT / "params.yaml"), "--set", "beam.num_workers=1"]
EXIT2 = "exit 2"


def ok(read, kept, filtered=0, rejected=0, reasons=()):
    return {"counts": (read, kept, filtered, rejected), "reasons": set(reasons)}


CASES = [
    # Cochrane canonical JSONL: whole-file faults and newline conventions
    ("cochrane", "cochrane/bom.jsonl", ok(2, 2)),
    ("cochrane", "cochrane/crlf.jsonl", ok(2, 2)),
    ("cochrane", "cochrane/cr_only.jsonl", ok(2, 2)),
    ("cochrane", "cochrane/no_final_newline.jsonl", ok(2, 2)),
    ("cochrane", "cochrane/valid_bom.jsonl.gz", ok(2, 2)),
    ("cochrane", "cochrane/empty.jsonl", EXIT2),
    ("cochrane", "cochrane/blank_only.jsonl", EXIT2),
    ("cochrane", "cochrane/truncated.jsonl.gz", EXIT2),
    ("cochrane", "cochrane/corrupt.jsonl.gz", EXIT2),
    ("cochrane", "cochrane/binary.jsonl", EXIT2),
    ("cochrane", "cochrane/utf16.jsonl", EXIT2),
    ("cochrane", "cochrane/wrong_format.jsonl", EXIT2),
    # Cochrane: one bad record costs one record
    ("cochrane", "cochrane/lone_surrogate.jsonl", ok(3, 2, rejected=1, reasons=["lone_surrogate"])),
    ("cochrane", "cochrane/version_true.jsonl", ok(3, 2, rejected=1, reasons=["bad_version"])),
    ("cochrane", "cochrane/int_2_40.jsonl", ok(3, 2, rejected=1, reasons=["bad_version"])),
    ("cochrane", "cochrane/huge_integer.jsonl", ok(3, 2, rejected=1, reasons=["bad_json"])),
    ("cochrane", "cochrane/nan_version.jsonl", ok(3, 2, rejected=1, reasons=["bad_json"])),
    ("cochrane", "cochrane/doi_pub_overflow.jsonl", ok(3, 2, rejected=1, reasons=["bad_doi"])),
    ("cochrane", "cochrane/deep_nesting.jsonl", ok(3, 2, rejected=1, reasons=["too_deep"])),
    ("cochrane", "cochrane/duplicate_keys.jsonl", ok(3, 2, rejected=1, reasons=["duplicate_key"])),
    ("cochrane", "cochrane/invalid_utf8.jsonl", ok(3, 2, rejected=1, reasons=["bad_utf8"])),
    ("cochrane", "cochrane/control_chars.jsonl", ok(3, 2, rejected=1, reasons=["bad_json"])),
    ("cochrane", "cochrane/doi_case.jsonl", ok(2, 2)),
    ("cochrane", "cochrane/unicode_line_separators.jsonl", ok(2, 2)),
    (
        "cochrane",
        "cochrane/field_types.jsonl",
        ok(
            9,
            2,
            rejected=7,
            reasons=["bad_title", "bad_language", "bad_abstract", "missing_doi", "bad_pls", "not_an_object"],
        ),
    ),
    # Cochrane, Devaraj et al. line format (folders of X.source / X.target / X.doi)
    ("cochrane", "cochrane/devaraj_no_final_newline", ok(2, 2)),
    ("cochrane", "cochrane/devaraj_crlf", ok(2, 2)),
    ("cochrane", "cochrane/devaraj_cr_only", ok(2, 2)),
    ("cochrane", "cochrane/devaraj_bom", ok(2, 2)),
    ("cochrane", "cochrane/devaraj_doi_case", ok(2, 1, filtered=1)),
    ("cochrane", "cochrane/devaraj_pub_overflow", ok(3, 2, rejected=1, reasons=["bad_doi"])),
    ("cochrane", "cochrane/devaraj_line_counts", ok(3, 2, rejected=1, reasons=["line_counts_differ"])),
    ("cochrane", "cochrane/devaraj_bad_utf8", ok(2, 1, rejected=1, reasons=["bad_utf8"])),
    ("cochrane", "cochrane/devaraj_empty_doi", EXIT2),
    # MSD
    ("msd", "msd/bom.jsonl", ok(2, 2)),
    ("msd", "msd/crlf.jsonl", ok(2, 2)),
    ("msd", "msd/cr_only.jsonl", ok(2, 2)),
    ("msd", "msd/empty.jsonl", EXIT2),
    ("msd", "msd/truncated.jsonl.gz", EXIT2),
    ("msd", "msd/binary.jsonl", EXIT2),
    ("msd", "msd/msd_test_blank_line.jsonl", ok(4, 4)),
    ("msd", "msd/msd_test_crlf_blank.jsonl", ok(4, 4)),
    ("msd", "msd/msd_test_misaligned.jsonl", ok(5, 2, rejected=3, reasons=["bad_pair"])),
    ("msd", "msd/lone_surrogate.jsonl", ok(3, 2, rejected=1, reasons=["lone_surrogate"])),
    ("msd", "msd/label_true.jsonl", ok(3, 2, rejected=1, reasons=["bad_label"])),
    ("msd", "msd/int_2_40.jsonl", ok(4, 2, rejected=2, reasons=["bad_concepts", "bad_label"])),
    ("msd", "msd/deep_nesting.jsonl", ok(3, 2, rejected=1, reasons=["too_deep"])),
    ("msd", "msd/duplicate_keys.jsonl", ok(3, 2, rejected=1, reasons=["duplicate_key"])),
    (
        "msd",
        "msd/field_types.jsonl",
        ok(
            9,
            2,
            rejected=7,
            reasons=["bad_title", "bad_sections", "bad_concepts", "bad_audience", "not_an_object"],
        ),
    ),
    # PLABA
    ("plaba", "plaba/bom.json", ok(1, 1)),
    ("plaba", "plaba/crlf.json", ok(1, 1)),
    ("plaba", "plaba/valid.json.gz", ok(1, 1)),
    ("plaba", "plaba/empty.json", EXIT2),
    ("plaba", "plaba/truncated.json", EXIT2),
    ("plaba", "plaba/top_array.json", EXIT2),
    ("plaba", "plaba/trailing_garbage.json", EXIT2),
    ("plaba", "plaba/truncated.json.gz", EXIT2),
    ("plaba", "plaba/binary.json", EXIT2),
    ("plaba", "plaba/utf16.json", EXIT2),
    ("plaba", "plaba/ambiguous_keys.json", ok(2, 1, rejected=1, reasons=["ambiguous_sentence_number"])),
    ("plaba", "plaba/arabic_digit_key.json", ok(2, 1, rejected=1, reasons=["ambiguous_sentence_number"])),
    ("plaba", "plaba/superscript_key.json", ok(2, 1, rejected=1, reasons=["bad_sentence_number"])),
    ("plaba", "plaba/leading_zero_key.json", ok(2, 1, rejected=1, reasons=["bad_sentence_number"])),
    ("plaba", "plaba/int_2_40.json", ok(2, 1, rejected=1, reasons=["bad_sentence_number"])),
    ("plaba", "plaba/int_value.json", ok(2, 1, rejected=1, reasons=["bad_translation1"])),
    ("plaba", "plaba/duplicate_sentence_key.json", ok(2, 1, rejected=1, reasons=["duplicate_key"])),
    ("plaba", "plaba/duplicate_pmid.json", ok(3, 1, rejected=2, reasons=["duplicate_key"])),
    ("plaba", "plaba/duplicate_question.json", ok(3, 1, rejected=2, reasons=["duplicate_key"])),
    ("plaba", "plaba/lone_surrogate.json", ok(2, 1, rejected=1, reasons=["lone_surrogate"])),
    ("plaba", "plaba/deep_nesting.json", ok(2, 1, rejected=1, reasons=["too_deep"])),
    ("plaba", "plaba/nan.json", ok(2, 1, rejected=1, reasons=["bad_json"])),
    ("plaba", "plaba/bad_entry_syntax.json", ok(2, 1, rejected=1, reasons=["bad_json"])),
    (
        "plaba",
        "plaba/field_types.json",
        ok(6, 1, rejected=5, reasons=["bad_title", "not_an_object", "bad_abstract", "bad_question"]),
    ),
]


def run_reader(reader: str, input_path: Path, out: Path, capfd) -> tuple[int, str, str]:
    code = main(
        BASE
        + [
            reader,
            "--input",
            str(input_path),
            "--output",
            str(out),
            "--metrics",
            str(out.parent / "metrics.json"),
        ]
    )
    captured = capfd.readouterr()
    return code, captured.out, captured.err


def check_outcome(reader: str, code: int, out_text: str, err: str, out: Path, expected) -> None:
    """The hostile-suite property: one line and exit 2, or reconciled counts; no traceback,
    no marker text anywhere the user or a report can see."""
    assert "Traceback" not in out_text + err
    assert MARKER not in out_text + err
    if expected == EXIT2:
        assert code == 2, err
        assert len(error_lines(reader, err)) == 1, err
        assert not out.exists()
        return
    assert code == 0, err
    stats = json.loads((out / "stats.json").read_text())
    counts = (stats["read"], stats["kept"], stats["filtered"], stats["rejected"])
    assert counts[0] == sum(counts[1:])
    letters = [
        json.loads(line)
        for f in sorted((out / "dead_letter").glob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    assert len(letters) == stats["rejected"]
    for path in [out / "stats.json", out.parent / "metrics.json", *(out / "dead_letter").glob("*")]:
        assert MARKER not in path.read_text(encoding="utf-8", errors="replace"), path
    if expected is not None:
        assert counts == expected["counts"]
        assert {d["reason"] for d in letters} == expected["reasons"]


@pytest.mark.parametrize("reader,rel,expected", CASES, ids=[c[1] for c in CASES])
def test_hostile_file(reader, rel, expected, tmp_path, capfd):
    out = tmp_path / "out"
    code, stdout, stderr = run_reader(reader, HOSTILE / rel, out, capfd)
    check_outcome(reader, code, stdout, stderr, out, expected)


@pytest.mark.parametrize(
    "reader,name", [("cochrane", "reviews.jsonl"), ("msd", "msd.jsonl"), ("plaba", "plaba.json")]
)
def test_folder_given_as_file(reader, name, tmp_path, capfd):
    (tmp_path / name).mkdir()
    code, stdout, stderr = run_reader(reader, tmp_path / name, tmp_path / "out", capfd)
    check_outcome(reader, code, stdout, stderr, tmp_path / "out", EXIT2)
    assert "folder" in stderr


@pytest.mark.parametrize(
    "reader,rel", [("cochrane", "cochrane/bom.jsonl"), ("msd", "msd/bom.jsonl"), ("plaba", "plaba/bom.json")]
)
def test_no_permission(reader, rel, tmp_path, capfd, monkeypatch):
    """Tests run as root, where chmod 000 does not bite: the local filesystem refuses instead."""
    from apache_beam.io.localfilesystem import LocalFileSystem

    target = tmp_path / Path(rel).name
    target.write_bytes((HOSTILE / rel).read_bytes())
    real_open = LocalFileSystem.open

    def refuse(self, path, *args, **kwargs):
        if Path(path) == target:
            raise PermissionError(13, "Permission denied", path)
        return real_open(self, path, *args, **kwargs)

    monkeypatch.setattr(LocalFileSystem, "open", refuse)
    code, stdout, stderr = run_reader(reader, target, tmp_path / "out", capfd)
    check_outcome(reader, code, stdout, stderr, tmp_path / "out", EXIT2)
    assert "permission denied" in stderr


def test_msd_blank_line_keeps_the_pairing(tmp_path, capfd):
    """Records 2n-1 and 2n pair whatever blank lines sit between them."""
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    run_reader("msd", HOSTILE / "msd/msd_test_blank_line.jsonl", out, capfd)
    rows = [r for f in sorted((out / "sentences").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    docs = {}
    for r in rows:
        docs.setdefault(r["doc_id"], set()).add((r["side"], r["text"].split()[1]))
    assert docs == {
        "msd_test_blank_line-1": {("complex", "1"), ("simple", "1")},
        "msd_test_blank_line-2": {("complex", "2"), ("simple", "2")},
    }
