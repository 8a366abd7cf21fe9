"""Red team of `medsimp publish` (issue 18): every way we could think of to get MIMIC-derived
or uncheckable data onto a hub is refused with exit 3, before any connection to the hub.

The hub is a local listening socket (HF_ENDPOINT) that counts accepted connections. Each
case starts from a clean, publishable Cochrane folder (checked to pass) and adds one trick.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from medsimp import lineage
from medsimp.cli import main
from medsimp.corpora.publish import check_publishable
from medsimp.errors import Refused

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "builders"))
import upstream  # noqa: E402

PLACEHOLDER = "pt seen at [**Hospital1 18**] on [**2101-3-4**]"


@pytest.fixture()
def hub():
    """A listening socket standing in for the hub; counts every connection it accepts."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    accepted: list[int] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(1)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", accepted
    stop.set()
    thread.join(2)
    server.close()


def _write(path: Path, table: pa.Table, tags) -> None:
    if tags is not None:
        table = table.cast(lineage.with_lineage(table.schema, tags))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def _plain(text: str = "the trial found no difference") -> pa.Table:
    return pa.table({"complex": [text], "simple": ["it did not help"]})


def _clean(tmp_path: Path) -> Path:
    folder = tmp_path / "multicochrane"
    _write(folder / "train" / "part-0.parquet", _plain(), ["cochrane"])
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files: "
        "train/*.parquet\nmedsimp:\n  builder: multicochrane\n"
        "  mimic_derived: false\n---\n# MultiCochrane\n"
    )
    (folder / "stats.json").write_text('{"read": 1}\n')
    (folder / ".medsimp-output").write_text('{"command": "build", "lineage": ["cochrane"]}\n')
    check_publishable(folder)
    return folder


def _mimic(path: Path, tags=("mimic-iii",)) -> None:
    _write(path, _plain(PLACEHOLDER), list(tags))


def _struct_table() -> pa.Table:
    return pa.table({"complex": pa.array([{"a": 1, "b": PLACEHOLDER}])})


TRICKS = {
    # copies and renames of a MIMIC table
    "mimic_parquet_copied_in": lambda f: _mimic(f / "train" / "part-1.parquet"),
    "mimic_iv_note_copied_in": lambda f: _mimic(f / "test" / "x.parquet", ["mimic-iv-note"]),
    "mimic_generic_tag": lambda f: _mimic(f / "validation" / "x.parquet", ["mimic"]),
    "renamed_txt": lambda f: _mimic(f / "train" / "notes.txt"),
    "renamed_json": lambda f: _mimic(f / "train" / "part-2.json"),
    "renamed_upper_suffix": lambda f: _mimic(f / "train" / "part-2.PARQUET"),
    "renamed_no_suffix": lambda f: _mimic(f / "train" / "part-2"),
    "renamed_bak": lambda f: _mimic(f / "train" / "part-2.parquet.bak"),
    "csv_named_parquet": lambda f: (f / "train" / "x.parquet").write_text("text\n[**Name**]\n"),
    "nested_folder": lambda f: _mimic(f / "extra" / "deep" / "x.parquet"),
    "train_readme": lambda f: (f / "train" / "README.md").write_text("notes\n"),
    # glob characters that `allow_patterns` would expand to the dead letters or hidden files
    "glob_star": lambda f: (
        _write(f / "train" / "*.parquet", _plain(), ["cochrane"]),
        _mimic(f / "dead_letter" / "part-0.parquet"),
    ),
    "glob_question": lambda f: (
        _write(f / "train" / "part-?.parquet", _plain(), ["cochrane"]),
        _mimic(f / "train" / ".part-9.parquet"),
    ),
    "glob_brackets": lambda f: _write(f / "[tv]rain" / "x.parquet", _plain(), ["cochrane"]),
    # placeholders in every column type, under a public lineage
    "string_column": lambda f: _write(f / "train" / "s.parquet", _plain(PLACEHOLDER), ["cochrane"]),
    "large_string": lambda f: _write(
        f / "train" / "s.parquet", pa.table({"t": pa.array([PLACEHOLDER], pa.large_string())}), ["cochrane"]
    ),
    "string_view": lambda f: _write(
        f / "train" / "s.parquet", pa.table({"t": pa.array([PLACEHOLDER], pa.string_view())}), ["cochrane"]
    ),
    "dictionary": lambda f: _write(
        f / "train" / "s.parquet",
        pa.table({"t": pa.array([PLACEHOLDER, "x"]).dictionary_encode()}),
        ["cochrane"],
    ),
    "list": lambda f: _write(
        f / "train" / "s.parquet", pa.table({"t": pa.array([["ok", PLACEHOLDER]])}), ["cochrane"]
    ),
    "list_of_struct": lambda f: _write(
        f / "train" / "s.parquet", pa.table({"t": pa.array([[{"x": [PLACEHOLDER]}]])}), ["cochrane"]
    ),
    "struct": lambda f: _write(f / "train" / "s.parquet", _struct_table(), ["cochrane"]),
    "map": lambda f: _write(
        f / "train" / "s.parquet",
        pa.table({"t": pa.array([[("k", PLACEHOLDER)]], pa.map_(pa.string(), pa.string()))}),
        ["cochrane"],
    ),
    "map_key": lambda f: _write(
        f / "train" / "s.parquet",
        pa.table({"t": pa.array([[(PLACEHOLDER, 1)]], pa.map_(pa.string(), pa.int64()))}),
        ["cochrane"],
    ),
    "binary": lambda f: _write(
        f / "train" / "s.parquet",
        pa.table({"t": pa.array([PLACEHOLDER.encode("utf-16")], pa.binary())}),
        ["cochrane"],
    ),
    "large_binary": lambda f: _write(
        f / "train" / "s.parquet", pa.table({"t": pa.array([b"x"], pa.large_binary())}), ["cochrane"]
    ),
    "placeholder_in_column_name": lambda f: _write(
        f / "train" / "s.parquet", pa.table({"[**Known lastname 12**]": ["x"]}), ["cochrane"]
    ),
    "placeholder_in_schema_metadata": lambda f: _write(
        f / "train" / "s.parquet",
        _plain().replace_schema_metadata({"note": "[**Hospital1 18**]"}),
        ["cochrane"],
    ),
    "placeholder_in_field_metadata": lambda f: _write(
        f / "train" / "s.parquet",
        pa.table({"t": ["x"]}, schema=pa.schema([pa.field("t", pa.string(), metadata={"d": "[**Name**]"})])),
        ["cochrane"],
    ),
    "utf16_text_in_string": lambda f: _write(
        f / "train" / "s.parquet", _plain(PLACEHOLDER.encode("utf-16-le").decode("utf-8")), ["cochrane"]
    ),
    "zero_width_split": lambda f: _write(f / "train" / "s.parquet", _plain("[\u200b**Name**]"), ["cochrane"]),
    "fullwidth": lambda f: _write(f / "train" / "s.parquet", _plain("［＊＊Name＊＊］"), ["cochrane"]),
    "spaced_tokens": lambda f: _write(
        f / "train" / "s.parquet", _plain("at [ * * Hospital1 * * ]"), ["cochrane"]
    ),
    "mimic_iv_underscores": lambda f: _write(
        f / "train" / "s.parquet", _plain("Name: ___ Unit No: ___ Admission Date: ___"), ["cochrane"]
    ),
    "placeholder_in_last_batch": lambda f: _write(
        f / "train" / "big.parquet",
        pa.table({"t": ["clean sentence"] * 200_000 + [PLACEHOLDER]}),
        ["cochrane"],
    ),
    # lineage removed or edited
    "lineage_removed": lambda f: _write(f / "train" / "s.parquet", _plain(), None),
    "lineage_removed_with_shapes": lambda f: _write(f / "train" / "s.parquet", _plain(PLACEHOLDER), None),
    "lineage_empty_list": lambda f: _write(f / "train" / "s.parquet", _plain(), []),
    "lineage_unknown_tag": lambda f: _write(f / "train" / "s.parquet", _plain(), ["cochrane", "other"]),
    "lineage_homoglyph": lambda f: _write(f / "train" / "s.parquet", _plain(), ["m\u0456mic-iii"]),
    "lineage_upper_case": lambda f: _write(f / "train" / "s.parquet", _plain(), ["MIMIC-III"]),
    "lineage_not_json": lambda f: pq.write_table(
        _plain().replace_schema_metadata({b"medsimp.lineage": b"cochrane"}), f / "train" / "s.parquet"
    ),
    "lineage_json_string": lambda f: pq.write_table(
        _plain().replace_schema_metadata({b"medsimp.lineage": b'"cochrane"'}), f / "train" / "s.parquet"
    ),
    "lineage_in_field_metadata_only": lambda f: pq.write_table(
        pa.table(
            {"t": ["x"]},
            schema=pa.schema([pa.field("t", pa.string(), metadata={b"medsimp.lineage": b'["cochrane"]'})]),
        ),
        f / "train" / "s.parquet",
    ),
    # links, hidden and special files
    "symlink_file": lambda f: (
        _write(f.parent / "elsewhere.parquet", _plain(), ["cochrane"]),
        (f / "train" / "l.parquet").symlink_to(f.parent / "elsewhere.parquet"),
    ),
    "symlink_dir": lambda f: (
        _mimic(f.parent / "notes" / "x.parquet"),
        (f / "validation").symlink_to(f.parent / "notes"),
    ),
    "symlink_readme": lambda f: (
        (f / "README.md").rename(f.parent / "card.md"),
        (f / "README.md").symlink_to(f.parent / "card.md"),
    ),
    "dangling_symlink": lambda f: (f / "train" / "gone.parquet").symlink_to(f.parent / "nowhere"),
    "hidden_file": lambda f: _mimic(f / ".hidden.parquet"),
    "hidden_folder": lambda f: _mimic(f / ".cache" / "x.parquet"),
    "hidden_in_split": lambda f: _mimic(f / "train" / ".part-9.parquet"),
    "fifo": lambda f: os.mkfifo(f / "train" / "pipe.parquet"),
    # the card and the marker
    "card_mimic_derived_false": lambda f: (_mimic(f / "train" / "part-0.parquet"), _card(f, "false")),
    "card_mimic_derived_no": lambda f: (_mimic(f / "train" / "part-0.parquet"), _card(f, "no")),
    "card_with_placeholder": lambda f: (f / "README.md").write_text(
        (f / "README.md").read_text() + "\nExample: [**Known firstname**]\n"
    ),
    "card_escaped_placeholder": lambda f: (f / "README.md").write_text(
        (f / "README.md").read_text() + "\nExample: \\[\\*\\*Name\\*\\*\\]\n"
    ),
    "card_utf16": lambda f: (f / "README.md").write_bytes((f / "README.md").read_text().encode("utf-16")),
    "stats_with_placeholder": lambda f: (f / "stats.json").write_text('{"x": "[**Name**]"}'),
    "marker_says_mimic": lambda f: (f / ".medsimp-output").write_text(
        '{"command": "build", "lineage": ["mimic-iii"]}'
    ),
    # other data formats
    "jsonl": lambda f: (f / "train" / "x.jsonl").write_text('{"text": "seen"}\n'),
    "csv": lambda f: (f / "train" / "x.csv").write_text("text\nseen\n"),
    "arrow_ipc": lambda f: _arrow(f / "train" / "x.arrow"),
    "arrow_ipc_named_parquet": lambda f: _arrow(f / "train" / "y.parquet"),
    "feather": lambda f: _arrow(f / "train" / "x.feather"),
    # huge files
    "huge_card_placeholder_at_end": lambda f: (f / "README.md").write_text(
        (f / "README.md").read_text() + ("clean line\n" * 3_000_000) + "[**Name**]\n"
    ),
    "huge_sparse_parquet": lambda f: _sparse(f / "train" / "huge.parquet", 4 << 30),
}


def _card(folder: Path, flag: str) -> None:
    card = folder / "README.md"
    card.write_text(card.read_text().replace("mimic_derived: false", f"mimic_derived: {flag}"))


def _arrow(path: Path) -> None:
    import pyarrow.feather as feather

    feather.write_feather(_plain().cast(lineage.with_lineage(_plain().schema, ["cochrane"])), path)


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


def _publish(monkeypatch, endpoint: str, folder: Path, *flags: str) -> int:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_TOKEN", "hf_fake")
    return main(["publish", str(folder), "--repo-id", "me/ds", *flags])


@pytest.mark.parametrize(
    "trick",
    # a card padded to the size limit: over ~2 s, not in the fast loop
    [
        pytest.param(t, marks=pytest.mark.slow) if t == "huge_card_placeholder_at_end" else t
        for t in sorted(TRICKS)
    ],
)
def test_trick_is_refused_before_any_connection(trick, hub, tmp_path, monkeypatch, capsys):
    endpoint, accepted = hub
    folder = _clean(tmp_path)
    TRICKS[trick](folder)
    with pytest.raises(Refused):
        check_publishable(folder)
    for flags in ((), ("--private",)):
        assert _publish(monkeypatch, endpoint, folder, *flags) == 3, trick
        err = capsys.readouterr().err.strip().splitlines()  # the announce line, then the error
        assert len(err) <= 2 and err[-1].startswith("medsimp publish: "), err
        assert not any("Hospital1" in line or "Known firstname" in line for line in err)
    assert accepted == []


def test_the_clean_folder_does_reach_the_hub(hub, tmp_path):
    """The control: without a trick the same folder gets past the guard to the network (in a
    fresh process: huggingface_hub reads HF_ENDPOINT once, at import)."""
    endpoint, accepted = hub
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "0",
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": "hf_fake",
        "HF_HUB_ETAG_TIMEOUT": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    result = subprocess.run(
        [sys.executable, "-m", "medsimp.cli", "publish", str(_clean(tmp_path)), "--repo-id", "me/ds"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 3 and accepted, result.stderr[-500:]


def test_guard_options_never_turn_the_guard_off(hub, tmp_path, monkeypatch, capsys):
    endpoint, accepted = hub
    folder = _clean(tmp_path)
    _mimic(folder / "train" / "part-1.parquet")
    for flags in (("--force",), ("--private", "--force"), ("-v",)):
        args = (
            ["--force", "publish", str(folder), "--repo-id", "me/ds"]
            if flags[0] == "--force"
            else ["publish", str(folder), "--repo-id", "me/ds", *flags]
        )
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code
        assert code in (2, 3)
    assert accepted == []


def _stamp(folder: Path, tags) -> None:
    for part in folder.rglob("*.parquet"):
        table = pq.read_table(part)
        pq.write_table(table.cast(lineage.with_lineage(table.schema, tags)), part)


def test_set_override_to_a_notes_output_makes_the_builder_unpublishable(hub, tmp_path, monkeypatch):
    """`--set build.msd.sentences=<notes output>`: the lineage follows the data in."""
    endpoint, accepted = hub
    cfg = upstream.write_msd(tmp_path)
    for value in cfg.values():
        _stamp(Path(value), ["msd"])
    notes = tmp_path / "notes_out" / "sentences"
    shutil.copytree(cfg["sentences"], notes)
    _stamp(notes, ["mimic-iii"])  # the same columns, now a MIMIC table
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump({"build": {"msd": {**cfg, "split": {"seed": 13, "validation": 0.2, "test": 0.2}}}})
    )
    clean, dirty = tmp_path / "b_clean", tmp_path / "b_dirty"
    assert main(["--params", str(params), "build", "msd", "--output", str(clean)]) == 0
    check_publishable(clean)
    assert (
        main(
            [
                "--params",
                str(params),
                "--set",
                f"build.msd.sentences={notes}",
                "build",
                "msd",
                "--output",
                str(dirty),
            ]
        )
        == 0
    )
    tags = json.loads((dirty / ".medsimp-output").read_text())["lineage"]
    assert "mimic-iii" in tags
    for flags in ((), ("--private",)):
        assert _publish(monkeypatch, endpoint, dirty, *flags) == 3
    # a JSONL (no lineage at all) swapped in makes the lineage unknown: refused as well
    jsonl = tmp_path / "notes.jsonl"
    jsonl.write_text('{"text": "x"}\n')
    from medsimp.corpora.card import input_lineage

    assert input_lineage({**cfg, "sentences": str(jsonl)}, False, "msd") is None
    assert accepted == []


@pytest.mark.parametrize(
    "text", ["seen at [**Hospital\n1 18**] today", "[**" + "x" * 300 + "**]", "[ * *Name\r\n(NI)* * ]"]
)
def test_a_placeholder_across_lines_or_over_256_characters_is_caught(text):
    """Issue 35 item 17: a `[**...**]` spanning a newline or over 256 characters passed the guard."""
    import pyarrow.compute as pc

    assert lineage.has_mimic_shapes(text)
    assert pc.match_substring_regex(pa.array([text]), lineage.MIMIC_SHAPE_RE2).to_pylist() == [True]
    assert not lineage.has_mimic_shapes("a plain [note] with ** bold ** text")
