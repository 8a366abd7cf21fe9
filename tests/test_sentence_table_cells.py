"""A sentence table's cells are checked before any work (issue 54, "Table cells are not
type-checked"): a null or non-string `text`/`doc_id`, a non-integer `sentence_index`, or a
document's rows copied into a second part file is one line naming the file, column and row,
from `align train` and `align corpus` alike, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsimp.cli import main
from medsimp.errors import InputError
from pipelines.sources.tables import check_sentence_table

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "data" / "sample" / "align_gold.jsonl"


def _rows(doc: str = "10.1002/14651858.CD123456") -> list[dict]:
    return [
        {
            "sentence_id": f"{doc}:{side}:{i}",
            "doc_id": doc,
            "side": side,
            "language": "en",
            "section": "",
            "sentence_index": i,
            "text": f"{side} sentence {i}.",
        }
        for side in ("complex", "simple")
        for i in range(2)
    ]


def _write(folder: Path, *parts: list[dict] | pa.Table) -> list[str]:
    (folder / "sentences").mkdir(parents=True)
    files = []
    for k, part in enumerate(parts):
        table = part if isinstance(part, pa.Table) else pa.Table.from_pylist(part)
        path = folder / "sentences" / f"part-{k}.parquet"
        pq.write_table(table, path)
        files.append(str(path))
    return files


def _with(rows: list[dict], row: int, **cells) -> list[dict]:
    rows = [dict(r) for r in rows]
    rows[row].update(cells)
    return rows


CASES = {
    "null text": (lambda: [_with(_rows(), 2, text=None)], "column text, row 3: empty (null)"),
    "null doc_id": (lambda: [_with(_rows(), 0, doc_id=None)], "column doc_id, row 1: empty (null)"),
    "null sentence_index": (
        lambda: [_with(_rows(), 1, sentence_index=None)],
        "column sentence_index, row 2: empty (null)",
    ),
    "numeric text": (
        lambda: [pa.Table.from_pylist(_rows()).set_column(6, "text", pa.array([1.5, 2.0, 3.0, 4.0]))],
        "column text holds double values, not strings",
    ),
    "string sentence_index": (
        lambda: [
            pa.Table.from_pylist(_rows()).set_column(5, "sentence_index", pa.array(["0", "1", "0", "1"]))
        ],
        "column sentence_index holds string values, not integers",
    ),
    "a part file twice": (lambda: [_rows(), _rows()], "appears twice (first in"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_cell_or_a_doubled_part_file_is_one_line_naming_where(tmp_path, case):
    make, expected = CASES[case]
    files = _write(tmp_path / "t", *make())
    with pytest.raises(InputError) as info:
        check_sentence_table(files)
    line = str(info.value)
    assert expected in line and "\n" not in line
    assert line.startswith(files[-1] if case == "a part file twice" else files[0])


def test_a_good_table_over_two_part_files_passes(tmp_path):
    files = _write(tmp_path / "t", _rows("a"), _rows("b"))
    check_sentence_table(files)


@pytest.mark.parametrize("subcommand", [["train", "--gold", str(GOLD)], ["corpus"]])
def test_align_refuses_a_doubled_table_before_any_work(tmp_path, capsys, subcommand):
    _write(tmp_path / "t", _rows(), _rows())
    argv = ["align", *subcommand, "--input", str(tmp_path / "t"), "--output", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "appears twice" in err[-1]
    assert not (tmp_path / "out").exists()
