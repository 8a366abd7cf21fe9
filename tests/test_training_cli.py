"""`medsimp train` (baselines) and `medsimp evaluate` (files and stage mode) on the embedded sample."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from medsimp.cli import main

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
FAST = ["--set", "evaluate.meteor=false", "--set", "evaluate.bertscore=false"]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("models")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for m in ("copy", "dictionary"):
            assert (
                main(["train", "--model", m, "--output", str(out / m), "--metrics", str(out / f"{m}.json")])
                == 0
            )
    finally:
        os.chdir(cwd)
    return out


def test_baseline_predictions_and_stats(models):
    test = (ROOT / "data/sample/medlane/test.txt").read_text().split("\n\n")
    n_test = len([b for b in test if b.strip()])
    for m in ("copy", "dictionary"):
        lines = (models / m / "predictions" / "test.txt").read_text().splitlines()
        assert len(lines) == n_test
        stats = json.loads((models / m / "stats.json").read_text())
        assert stats["read"] == stats["kept"] + stats["filtered"] + stats["rejected"]
        assert stats["paper_deviations"] == {}  # the baselines read none of the sample profile's keys
        headline = json.loads((models / f"{m}.json").read_text())  # what `dvc metrics show` lists
        assert set(headline) == {"read", "kept", "filtered", "rejected"}  # the baselines have no val loss
        assert headline == {k: stats[k] for k in headline}
    copy = (models / "copy" / "predictions" / "test.txt").read_text().splitlines()
    dic = (models / "dictionary" / "predictions" / "test.txt").read_text().splitlines()
    assert copy != dic


def test_evaluate_files_mode_both_modes(models, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    hyp = str(models / "dictionary" / "predictions" / "test.txt")
    for mode in ("default", "medlane"):
        out = tmp_path / f"{mode}.json"
        assert (
            main(
                [
                    *FAST,
                    "evaluate",
                    "files",
                    "--hyp",
                    hyp,
                    "--medlane",
                    "data/sample/medlane/test.txt",
                    "--mode",
                    mode,
                    "--json",
                    str(out),
                ]
            )
            == 0
        )
        scores = json.loads(out.read_text())["scores"]
        for key in ("bleu_1", "bleu_4", "medlane_bleu", "rouge_l", "cider", "hit", "cwr", "ascore"):
            assert 0.0 <= scores[key] <= (10.0 if key == "cider" else 1.0), key
        mean = sum(scores[f"bleu_{n}"] for n in range(1, 5)) / 4
        assert scores["medlane_bleu"] == pytest.approx(mean, abs=1e-5)
    default = json.loads((tmp_path / "default.json").read_text())["scores"]
    assert "sari" in default and "fkgl" in default


def test_evaluate_plain_reference_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    (tmp_path / "hyp.txt").write_text("the patient had high blood pressure .\nhe is stable .\n")
    (tmp_path / "ref.txt").write_text("the patient had high blood pressure .\nhe is stable .\n")
    (tmp_path / "src.txt").write_text("pt had htn .\nhe is stable .\n")
    out = tmp_path / "s.json"
    assert (
        main(
            [
                *FAST,
                "evaluate",
                "files",
                "--hyp",
                str(tmp_path / "hyp.txt"),
                "--ref",
                str(tmp_path / "ref.txt"),
                "--src",
                str(tmp_path / "src.txt"),
                "--json",
                str(out),
            ]
        )
        == 0
    )
    scores = json.loads(out.read_text())["scores"]
    assert scores["bleu_1"] == pytest.approx(1.0) and scores["rouge_l"] == pytest.approx(1.0)
    assert scores["hit"] == pytest.approx(1.0)  # terms from the dictionary: pt, htn
    (tmp_path / "short.txt").write_text("one line\n")
    capsys.readouterr()
    assert (
        main(
            [
                *FAST,
                "evaluate",
                "files",
                "--hyp",
                str(tmp_path / "hyp.txt"),
                "--ref",
                str(tmp_path / "short.txt"),
            ]
        )
        == 2
    )
    assert "lines" in capsys.readouterr().err


def test_evaluate_stage_mode_writes_metrics_and_plots(models, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    metrics, plots = tmp_path / "eval", tmp_path / "buckets.json"
    assert (
        main(
            [
                *FAST,
                "--set",
                "evaluate.models=[copy, dictionary]",
                "--set",
                f"evaluate.models_dir={models}",
                "evaluate",
                "stage",
                "--metrics",
                str(metrics),
                "--plots",
                str(plots),
                "--scores",
                str(tmp_path / "scores.json"),
            ]
        )
        == 0
    )
    # one flat file per model, the same four keys each: `dvc metrics show` has one row per model
    headline = {p.stem: json.loads(p.read_text()) for p in sorted(metrics.iterdir())}
    assert {m: set(v) for m, v in headline.items()} == {
        m: {"medlane_bleu", "sari", "fkgl", "ascore"} for m in ("copy", "dictionary")
    }
    data = json.loads((tmp_path / "scores.json").read_text())
    assert headline["copy"]["sari"] == data["default"]["copy"]["sari"]
    assert set(data["default"]) == set(data["medlane"]) == {"copy", "dictionary"}
    assert data["default"]["copy"]["hit"] == 0.0  # the corrected HIT gives no free credit
    assert data["medlane"]["copy"]["hit"] > 0.0  # the authors' HIT does
    assert data["default"]["dictionary"]["hit"] > 0.0
    rows = json.loads(plots.read_text())
    assert sum(r["n"] for r in rows) == data["n"]
    assert {"bucket", "copy_ascore", "dictionary_medlane_bleu"} <= set(rows[0])


def test_stage_metrics_folder_keeps_one_file_per_evaluated_model(tmp_path):
    from medsimp.atomic import write_json
    from medsimp.errors import UsageError
    from medsimp.evaluation.stage import write_model_metrics

    folder = tmp_path / "eval"
    write_model_metrics(folder, {"copy": {"sari": 1.5, "bleu": 9.0}, "old": {"sari": 2.0}})
    (folder / "notes.json").write_text("{}\n")  # a file medsimp did not write stays
    write_model_metrics(folder, {"copy": {"sari": 1.5, "medlane_bleu": 0.25, "fkgl": 3.0, "ascore": 0.5}})
    assert sorted(p.name for p in folder.iterdir()) == ["copy.json", "notes.json"]
    assert json.loads((folder / "copy.json").read_text()) == {
        "ascore": 0.5,
        "fkgl": 3.0,
        "medlane_bleu": 0.25,
        "sari": 1.5,
    }
    write_json(tmp_path / "file.json", {})
    with pytest.raises(UsageError, match="is a file"):
        write_model_metrics(tmp_path / "file.json", {"copy": {}})


def test_stage_metrics_folder_never_removes_what_another_command_wrote(tmp_path):
    """Issue 54: `evaluate stage --metrics DIR` deleted every medsimp-written `*.json` in DIR,
    the files of `evaluate files --json` and other commands too. Only its own go."""
    from medsimp import atomic
    from medsimp.atomic import write_json
    from medsimp.evaluation.stage import write_model_metrics

    folder = tmp_path / "eval"
    try:
        atomic.configure("evaluate files")
        write_json(folder / "mine.json", {"bleu": 1.0})  # another command's output, in the folder
        atomic.configure("evaluate stage")
        write_model_metrics(folder, {"copy": {"sari": 1.0}, "old": {"sari": 2.0}})
        write_model_metrics(folder, {"copy": {"sari": 1.0}})
    finally:
        atomic.configure("")
    assert sorted(p.name for p in folder.iterdir()) == ["copy.json", "mine.json"]
    assert json.loads((folder / "mine.json").read_text()) == {"bleu": 1.0}


def test_evaluate_stage_mode_names_the_files_it_writes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # nothing may appear here: stage mode writes only named files
    with pytest.raises(SystemExit) as exit_info:
        main([*FAST, "evaluate", "stage"])
    assert exit_info.value.code == 2
    assert "required: --metrics, --plots" in capsys.readouterr().err.strip().splitlines()[-1]
    assert list(tmp_path.iterdir()) == []


def test_train_and_evaluate_on_a_builders_own_splits(tmp_path, monkeypatch, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.chdir(ROOT)
    config = tmp_path / "toy" / "en"
    config.mkdir(parents=True)
    sizes = {"train": 6, "validation": 2, "test": 4}
    for split, n in sizes.items():
        rows = [
            (f"{split} pt {i} has htn .", f"{split} the patient {i} has high blood pressure .")
            for i in range(n)
        ]
        table = pa.table({"complex_text": [c for c, _ in rows], "simple_text": [s for _, s in rows]})
        pq.write_table(table, config / f"{split}-00000-of-00001.parquet")
    out = tmp_path / "copy"
    argv = ["train", "--model", "copy", "--dataset", str(tmp_path / "toy"), "--config", "en"]
    assert main([*argv, "--output", str(out)]) == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"] == {**sizes, "rejected": 0}  # the builder's splits, not re-split
    predictions = (out / "predictions" / "test.txt").read_text().splitlines()
    assert predictions == sorted(f"test pt {i} has htn ." for i in range(4))
    scores = tmp_path / "scores.json"
    evaluate = [
        "evaluate",
        "files",
        "--hyp",
        str(out / "predictions" / "test.txt"),
        "--dataset",
        str(tmp_path / "toy"),
    ]
    assert main([*FAST, *evaluate, "--config", "en", "--select", "bleu", "--json", str(scores)]) == 0
    result = json.loads(scores.read_text())
    assert result["n"] == 4 and 0 < result["scores"]["bleu"] < 100
    (config / "validation-00000-of-00001.parquet").unlink()
    capsys.readouterr()
    assert main([*argv, "--output", str(tmp_path / "again")]) == 2
    assert "no validation split" in capsys.readouterr().err.strip().splitlines()[-1]
    assert main([*argv, "--resplit", "--output", str(tmp_path / "again")]) == 0
