"""Whole-file checks (pipelines.sources.files) and per-record guards (records)."""

import bz2
import gzip
import json

import pytest

from medsimp.errors import InputError
from pipelines.sources import files as input_files
from pipelines.sources.files import check_file, iter_lines, list_inputs, read_text
from pipelines.sources.records import FormatError, guarded, loads, members

LINES = ["first", "", "th\u00efrd", "last"]


@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 20])
@pytest.mark.parametrize(
    "newline,bom,final",
    [
        ("\n", False, True),
        ("\r\n", False, True),
        ("\r", False, True),
        ("\n", True, False),
        ("\r\n", True, False),
        ("\r", False, False),
    ],
)
def test_lines_read_the_same_in_any_convention(tmp_path, monkeypatch, chunk, newline, bom, final):
    monkeypatch.setattr(input_files, "CHUNK", chunk)
    path = tmp_path / "f.txt"
    path.write_bytes(
        (b"\xef\xbb\xbf" if bom else b"") + (newline.join(LINES) + (newline if final else "")).encode()
    )
    assert list(iter_lines(str(path))) == list(enumerate(LINES, start=1))


def test_lf_file_keeps_a_stray_cr_inside_a_line_and_reports_bad_bytes(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"a\r\nb\rc\n\xffd\n")
    (n1, first), (n2, second), (n3, third) = iter_lines(str(path))
    assert (n1, first, n2, second) == (1, "a", 2, "b\rc")
    assert n3 == 3 and isinstance(third, UnicodeDecodeError) and third.start == 0


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress])
def test_compressed_files_read_and_truncation_is_an_input_error(tmp_path, compress):
    suffix = ".gz" if compress is gzip.compress else ".bz2"
    data = "\n".join(f"line {i}" for i in range(5000)).encode()
    good, cut = tmp_path / f"good{suffix}", tmp_path / f"cut{suffix}"
    good.write_bytes(compress(data))
    cut.write_bytes(compress(data)[:-20])
    check_file(str(good))
    assert [t for _, t in iter_lines(str(good))][-1] == "line 4999"
    with pytest.raises(InputError, match="truncated|corrupt"):
        check_file(str(cut))


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "empty file"),
        (b"\xef\xbb\xbf \n\r\n", "empty file"),
        (b"{}\x00\x01", "binary"),
        ("{}".encode("utf-16"), "UTF-16"),
        (b"\x1f\x8b\x08\x00garbage", "truncated|corrupt"),
    ],
)
def test_whole_file_faults(tmp_path, content, message):
    path = tmp_path / ("f.gz" if content.startswith(b"\x1f\x8b") else "f.txt")
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as err:
        check_file(str(path))
    assert str(err.value).startswith(str(path))


def test_folders_missing_paths_and_undecodable_text(tmp_path):
    with pytest.raises(InputError, match="is a folder"):
        check_file(str(tmp_path))
    with pytest.raises(InputError, match="no such file"):
        list_inputs(str(tmp_path / "missing"))
    (tmp_path / ".hidden").write_text("x")
    with pytest.raises(InputError, match="no input files"):
        list_inputs(str(tmp_path))
    (tmp_path / "b.json").write_bytes(b'{"a": "\xff"}')
    (tmp_path / "a.json").write_text("{}")
    assert list_inputs(str(tmp_path)) == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    with pytest.raises(InputError, match="offset 7"):
        read_text(str(tmp_path / "b.json"))


@pytest.mark.parametrize(
    "text,reason",
    [
        ('{"a": 1, "a": 2}', "duplicate_key"),
        ('{"a": NaN}', "bad_json"),
        ('{"a": 1e999999}', "bad_json"),
        ('{"a": "\\ud800"}', "lone_surrogate"),
        ('{"\\udfff": 1}', "lone_surrogate"),
        ("[" * 5000 + "]" * 5000, "too_deep"),
        ("[" * 70 + "]" * 70, "too_deep"),
        ('{"a": ' + "1" * 5000 + "}", "bad_json"),
        ('{"a": 1', "bad_json"),
    ],
)
def test_strict_json_reasons(text, reason):
    with pytest.raises(FormatError) as err:
        loads(text)
    assert err.value.reason == reason


def test_members_isolate_each_value_and_guarded_names_any_exception():
    text = '{"a": {"x": [1, "]}"]}, "b" : "s", "c": 12, "d": [' + "[" * 3000 + "]" * 3000 + "]}"
    spans = list(members(text))
    assert [k for k, _, _ in spans] == ["a", "b", "c", "d"]
    assert json.loads(text[spans[0][1] : spans[0][2]]) == {"x": [1, "]}"]}
    assert text[spans[2][1] : spans[2][2]] == "12"
    assert guarded(loads, text[spans[3][1] : spans[3][2]]).reason == "too_deep"
    for bad in ('{"a" 1}', '{"a": 1 "b": 2}', "[1]", '{"a": [1, 2}'):
        with pytest.raises(FormatError):
            list(members(bad))
    assert guarded(lambda: 1 / 0).reason == "unreadable_record"
    assert guarded(lambda: 1 / 0).detail == "ZeroDivisionError"
