"""An output named by a URL is refused with one line, exit 2, and no local folder named after it
(issue 36 item 2: `--output gs://bucket/x` used to exit 0 and write `./gs:/bucket/x`), except
the --output of the public source jobs, which publish to object stores (test_object_store.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medsimp.cli.app import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"


@pytest.mark.parametrize(
    "argv",
    [
        ["radiology", "--input", str(SAMPLE / "NOTEEVENTS.csv"), "--output", "gs://bucket/x"],
        ["filter", "--output", "s3://bucket/x"],
        ["plaba", "--input", str(SAMPLE / "plaba.json"), "--output", "out", "--metrics", "s3://b/m.json"],
        ["build", "medlane", "--output", "file://x/medlane"],
        ["--set", "notes.output=gs://b/notes", "notes", "--input", str(SAMPLE / "NOTEEVENTS.csv")],
        ["evaluate", "stage", "--metrics", "m", "--plots", "gs://b/plots.json"],
    ],
    ids=["gs-output", "s3-output", "s3-metrics", "file-url-output", "url-from-params", "gs-plots"],
)
def test_a_url_output_is_one_line_exit_2_and_no_local_folder(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["--params", str(ROOT / "params.yaml"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len([line for line in err if "local folders only" in line]) == 1, err
    assert list(tmp_path.iterdir()) == [], "a local folder was made for a URL output"


def test_the_atomic_writers_refuse_a_url_before_any_folder(tmp_path, monkeypatch):
    from medsimp.atomic import atomic_dir, atomic_file
    from medsimp.errors import UsageError

    monkeypatch.chdir(tmp_path)
    for writer in (atomic_file, atomic_dir):
        with pytest.raises(UsageError, match="local folders only"):
            with writer("gs://bucket/x.json"):
                pass
    assert list(tmp_path.iterdir()) == []
