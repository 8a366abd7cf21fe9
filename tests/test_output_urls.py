"""An output named by a URL is refused with one line, exit 2, and no local folder named after it
(issue 36 item 2: `--output gs://bucket/x` used to exit 0 and write `./gs:/bucket/x`), except
the --output of the public source jobs, and of link, align corpus, filter and build on public
data, which publish to object stores (test_object_store.py). MIMIC-derived data, or data of
unknown lineage, is refused before the store is reached (issue 55 §1)."""

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
        ["filter", "--input", str(SAMPLE / "no-such-align-output"), "--output", "s3://bucket/x"],
        ["plaba", "--input", str(SAMPLE / "plaba.json"), "--output", "out", "--metrics", "s3://b/m.json"],
        ["build", "medlane", "--output", "file://x/medlane"],
        ["--set", "notes.output=gs://b/notes", "notes", "--input", str(SAMPLE / "NOTEEVENTS.csv")],
        ["evaluate", "stage", "--metrics", "m", "--plots", "gs://b/plots.json"],
    ],
    ids=[
        "gs-output",
        "s3-output-unknown-lineage",
        "s3-metrics",
        "file-url-output",
        "url-from-params",
        "gs-plots",
    ],
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


def _table(folder: Path, lineage: list[str] | None) -> Path:
    """A one-row Parquet table under `folder` with `lineage` in its schema (None: none recorded)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from medsimp.lineage import with_lineage

    folder.mkdir(parents=True)
    table = pa.table({"doc_id": ["d1"]})
    if lineage is not None:
        table = table.replace_schema_metadata(with_lineage(table.schema, lineage).metadata)
    pq.write_table(table, folder / "part-00000-of-00001.parquet")
    return folder


@pytest.mark.parametrize(
    "lineage", [["mimic-iii"], ["cochrane", "mimic-iv-note"], None, ["cochrane", "umls"]]
)
@pytest.mark.parametrize("stage", ["link", "align corpus", "filter", "build multicochrane", "report"])
def test_a_later_stage_of_data_not_public_never_reaches_a_store(
    stage, lineage, tmp_path, monkeypatch, capsys
):
    """`link`, `align corpus`, `filter`, `build` and `report` publish to a store only data of public
    lineage: a MIMIC-derived input, one of unknown lineage or with a tag outside the public sources
    is one line, exit 2, before the store is reached (the endpoint here is a closed port, which
    would say "did not answer"), and no local folder is made."""
    from loopback import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    data = tmp_path / "in"
    sub = {"link": "sentences", "align corpus": "sentences", "filter": "pairs"}.get(stage, "pairs")
    _table(data / sub, lineage)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    argv = ["--params", str(ROOT / "params.yaml")]
    if stage == "build multicochrane":
        argv += ["--set", f"build.multicochrane.pairs={data / 'pairs'}", "build", "multicochrane"]
        for other in ("sentences", "linked"):  # not the checkout's outputs: only this table's lineage
            argv[2:2] = ["--set", f"build.multicochrane.{other}={tmp_path / 'absent' / other}"]
    elif stage == "report":
        argv += ["report", str(data)]
    else:
        argv += [*stage.split(), "--input", str(data)]
    if stage == "link":
        argv += ["--index", str(tmp_path / "no-index")]
    assert main([*argv, "--output", "s3://bucket/x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "local folders only" in err[-1], err  # the command's line, then the refusal
    assert "MIMIC-derived text never leaves the machine" in err[-1] and "did not answer" not in err[-1]
    named = {"build multicochrane": "build.multicochrane are", "report": f"input FOLDER {data} is"}.get(
        stage, f"input --input {data} is"
    )
    shown = {None: "unknown", "umls": "cochrane, 1 unlisted tag(s)"}.get(
        lineage[-1] if lineage else None, ", ".join(lineage or [])
    )
    assert f"{named} not public data (lineage: {shown})" in err[-1], err  # which input, and why
    assert list(work.iterdir()) == [], "a local folder was made for a URL output"


def _lines(path: Path) -> str:
    path.write_text("the patient was given water and rest\nher blood pressure was high\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "case, says",
    [
        ("mimic-hyp", "its input --hyp {model} is not public data (lineage: mimic-iii)"),
        ("medlane", "its input --medlane {medlane} is MedLane, MIMIC-derived"),
        ("report-text", "--report-text puts its text in the report"),
        ("unknown-output", "its input --hyp {simplified} is not public data (lineage: unknown)"),
        ("two-folders", "the object-store outputs of one command go in one folder"),
        ("one-name", "name one file: one output would replace the other"),
        ("no-file", "name a file in a bucket"),
        ("dataset-url", "--dataset s3://bucket/builder: a local path only"),
    ],
    ids=[
        "mimic-hyp",
        "medlane",
        "report-text",
        "unknown-output",
        "two-folders",
        "one-name",
        "no-file",
        "dataset-url",
    ],
)
def test_evaluate_files_store_outputs_refused_before_the_store(case, says, tmp_path, monkeypatch, capsys):
    """`evaluate files` publishes `--json`/`--sentence-level`/`--report` to a store (test_object_store.py)
    but not when an input is known not to be public data (a file in an output folder whose marker
    records a MIMIC lineage, a MedLane file), nor from a medsimp output that records no lineage
    (only a user's own files, outside every medsimp output, pass), nor `--report-text` of files
    that record no lineage,
    nor outputs it cannot publish as one folder: one line, exit 2, before the store is reached
    (the endpoint is a closed port, which would say "did not answer"), no local folder made."""
    from loopback import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    model = tmp_path / "model"
    (model / "predictions").mkdir(parents=True)
    (model / ".medsimp-output").write_text(
        '{"command": "train", "lineage": ["mimic-iii"], "tool": "medsimp"}'
    )
    (tmp_path / "simplified").mkdir()  # a medsimp output that records no lineage: not a user's own file
    (tmp_path / "simplified" / ".medsimp-output").write_text('{"command": "simplify", "tool": "medsimp"}')
    paths = {
        "hyp": _lines(tmp_path / "hyp.txt"),
        "ref": _lines(tmp_path / "ref.txt"),
        "model": _lines(model / "predictions" / "test.txt"),
        "simplified": _lines(tmp_path / "simplified" / "test.txt"),
        "medlane": str(tmp_path / "medlane.json"),
    }
    Path(paths["medlane"]).write_text("[]\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    plain = ["--hyp", paths["hyp"], "--ref", paths["ref"]]
    argv = {
        "mimic-hyp": ["--hyp", paths["model"], "--ref", paths["ref"], "--json", "s3://bucket/e/s.json"],
        "medlane": ["--hyp", paths["hyp"], "--medlane", paths["medlane"], "--json", "s3://bucket/e/s.json"],
        "report-text": [*plain, "--report", "s3://bucket/e/r.html", "--report-text"],
        "unknown-output": [
            "--hyp",
            paths["simplified"],
            "--ref",
            paths["ref"],
            "--json",
            "s3://bucket/e/s.json",
        ],
        "two-folders": [*plain, "--json", "s3://bucket/a/s.json", "--report", "s3://bucket/b/r.html"],
        "one-name": [*plain, "--json", "s3://bucket/a/s", "--sentence-level", "s3://bucket/a/s"],
        "no-file": [*plain, "--json", "s3://bucket/a/"],
        "dataset-url": ["--hyp", paths["hyp"], "--dataset", "s3://bucket/builder", "--config", "en"],
    }[case]
    assert main(["--params", str(ROOT / "params.yaml"), "evaluate", "files", "--select", "bleu", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and says.format(**paths) in err[-1], err  # the command's line, then the refusal
    assert "did not answer" not in err[-1] and "Traceback" not in "\n".join(err)
    if case in ("mimic-hyp", "medlane", "report-text", "unknown-output"):
        assert "this output goes to local folders only" in err[-1]
    assert list(work.iterdir()) == [], "a local folder was made for a URL output"
