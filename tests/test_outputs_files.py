"""Single-file outputs (synth, align --batch, metrics/plots/JSON files, humaneval plot CSVs)
never replace a file medsimp did not write (exit 2, file untouched) and replace their own
atomically (issue 18 part 1)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from medsimp import ownership
from medsimp.atomic import atomic_dir, atomic_file, write_json
from medsimp.cli import main
from medsimp.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


@pytest.mark.parametrize("name", ["notes.csv", "notes.csv.gz"])
def test_synth_refuses_a_user_file_and_replaces_its_own(tmp_path, name, capsys):
    target = tmp_path / name
    target.write_bytes(b"my own notes, not medsimp's\n")
    before = digest(target)
    assert main(["synth", "notes", "--rows", "20", "--output", str(target)]) == 2
    assert "was not written by medsimp" in capsys.readouterr().err
    assert digest(target) == before and leftovers(tmp_path) == []
    target.unlink()
    assert main(["synth", "notes", "--rows", "20", "--output", str(target)]) == 0
    first = digest(target)
    assert main(["synth", "notes", "--rows", "30", "--output", str(target)]) == 0  # its own: replaced
    assert digest(target) != first and leftovers(tmp_path) == []
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no sidecar beside it
    record = json.loads(ownership.record_path(target).read_text())
    assert record["sha256"] == digest(target) and record["command"] == "synth notes"
    with open(target, "ab") as fh:  # changed by someone since: no longer medsimp's
        fh.write(b"edited")
    edited = digest(target)
    assert main(["synth", "notes", "--rows", "20", "--output", str(target)]) == 2
    assert digest(target) == edited


def test_synth_refuses_folders_and_links(tmp_path):
    (tmp_path / "dir").mkdir()
    assert main(["synth", "notes", "--rows", "5", "--output", str(tmp_path / "dir")]) == 2
    (tmp_path / "real.csv").write_text("keep\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "real.csv")
    assert main(["synth", "notes", "--rows", "5", "--output", str(tmp_path / "link.csv")]) == 2
    assert (tmp_path / "real.csv").read_text() == "keep\n"


def test_metrics_file_over_a_user_json_object_is_refused(tmp_path, capsys):
    """A JSON object is not proof of ownership: the old rule clobbered configs like this one."""
    settings = tmp_path / "settings.json"
    settings.write_text('{"theme": "dark"}\n')
    before = digest(settings)
    assert main(["synth", "notes", "--rows", "3", "--output", str(tmp_path / "n.csv")]) == 0
    with pytest.raises(UsageError):
        write_json(settings, {"read": 1})
    assert digest(settings) == before
    # byte-identical content is not a replacement (a metrics file checked out from git)
    same = tmp_path / "same.json"
    same.write_text('{\n  "read": 1\n}\n')
    write_json(same, {"read": 1})
    write_json(same, {"read": 2})  # now recorded as medsimp's, so it is replaced
    assert json.loads(same.read_text()) == {"read": 2}


def test_evaluate_json_and_metrics_refuse_user_files(tmp_path, capsys):
    (tmp_path / "hyp.txt").write_text("the patient is stable .\n")
    (tmp_path / "ref.txt").write_text("the patient is stable .\n")
    user = tmp_path / "notes.txt"
    user.write_text("precious\n")
    code = main(
        [
            "evaluate",
            "files",
            "--hyp",
            str(tmp_path / "hyp.txt"),
            "--ref",
            str(tmp_path / "ref.txt"),
            "--json",
            str(user),
        ]
    )
    assert code == 2 and user.read_text() == "precious\n"
    assert "notes.txt" in capsys.readouterr().err


def test_humaneval_plot_files_refuse_user_files(tmp_path):
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "votes.csv").write_text("mine\n")
    params = tmp_path / "params.yaml"
    params.write_text(f"humaneval: {{input: '{tmp_path / 'missing.csv'}'}}\n")
    code = main(
        [
            "--params",
            str(params),
            "humaneval",
            "analyze",
            "--output",
            str(tmp_path / "res"),
            "--forms",
            str(tmp_path / "noforms"),
            "--plots",
            str(plots),
        ]
    )
    assert code == 2 and (plots / "votes.csv").read_text() == "mine\n"


def _batch(tmp_path: Path, *lines: str) -> Path:
    batch = tmp_path / "batch.tsv"
    batch.write_text("".join(line + "\n" for line in lines))
    return batch


@pytest.mark.parametrize(
    "case",
    ["out_is_src", "out_is_tgt", "out_is_batch", "duplicate_out", "user_file_second_line", "out_is_folder"],
)
def test_align_batch_is_checked_before_anything_is_written(tmp_path, case, capsys):
    src, tgt = tmp_path / "en.txt", tmp_path / "es.txt"
    src.write_text("One.\nTwo.\n")
    tgt.write_text("Uno.\nDos.\n")
    first, user = tmp_path / "a.out", tmp_path / "user.txt"
    user.write_text("mine\n")
    (tmp_path / "folder").mkdir()
    out = {
        "out_is_src": src,
        "out_is_tgt": tgt,
        "out_is_batch": tmp_path / "batch.tsv",
        "duplicate_out": first,
        "user_file_second_line": user,
        "out_is_folder": tmp_path / "folder",
    }[case]
    batch = _batch(tmp_path, f"{src}\t{tgt}\t{first}", f"{src}\t{tgt}\t{out}")
    snapshot = {p.name: digest(p) for p in tmp_path.iterdir() if p.is_file()}
    assert main(["align", "files", "--method", "vecalign", "--batch", str(batch), "--tgt-lang", "es"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("medsimp align files: ")
    assert {p.name: digest(p) for p in tmp_path.iterdir() if p.is_file()} == snapshot
    assert not first.exists()


def test_atomic_file_keeps_the_old_file_on_failure_and_inside_outputs_writes_no_record(tmp_path):
    target = tmp_path / "m.json"
    write_json(target, {"a": 1})
    before = digest(target)
    with pytest.raises(RuntimeError):
        with atomic_file(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert digest(target) == before and leftovers(tmp_path) == []
    with atomic_dir(tmp_path / "out", "t") as tmp:
        write_json(tmp / "stats.json", {"a": 1})
    assert sorted(os.listdir(tmp_path / "out")) == [".medsimp-output", "stats.json"]
