"""The length-bucket plots (issue 29, item 5): every evaluated model is drawn, each in its own
colour and marker (revisions in `dvc plots diff` by dash), rendered by DVC itself from a
throwaway repository holding dvc.yaml's `plots:` and the ordinal template."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
KEYS = {"AScore by source length": "ascore", "BLEU by source length": "medlane_bleu"}


def _models() -> list[str]:
    return yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))["evaluate"]["models"]


def _plots() -> dict[str, dict]:
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["plots"]
    return {name: body for entry in spec for name, body in entry.items()}


def test_each_length_bucket_plot_draws_every_evaluated_model():
    plots = _plots()
    assert set(KEYS) <= set(plots)
    for name, key in KEYS.items():
        fields = plots[name]["y"]["plots/length_buckets.json"]
        assert fields == [f"{model}_{key}" for model in _models()], name  # bertmt was missing


@pytest.mark.slow  # dvc init + dvc plots show (~10 s on the shared machine)
def test_models_get_their_own_colour_and_marker(tmp_path):
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run([*dvc, "init", "--no-scm", "-q"], cwd=tmp_path, env=env, check=True)
    (tmp_path / ".dvc" / "plots").mkdir()
    shutil.copy(ROOT / ".dvc" / "plots" / "ordinal.json", tmp_path / ".dvc" / "plots")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"plots": [{n: b} for n, b in _plots().items()]}))
    models = _models()
    rows = [
        {"bucket": b, "n": 1, **{f"{m}_{k}": i / 10 for i, m in enumerate(models) for k in KEYS.values()}}
        for b in ("0-9", "10-14")
    ]
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "length_buckets.json").write_text(json.dumps(rows))
    shown = subprocess.run(
        [*dvc, "plots", "show", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    data = json.loads(shown.stdout)["data"]
    for name in KEYS:
        spec = data[name][0]["content"]
        enc = spec["encoding"]
        # colour and marker follow the model (the old template: colour by revision, dash by model)
        assert enc["color"]["field"] == enc["shape"]["field"] == "model", enc
        assert enc["strokeDash"]["field"] == "rev"
        (calc,) = [t for t in spec["transform"] if t.get("as") == "model"]
        assert "datum.field" in calc["calculate"]
        assert sorted({v["field"] for v in spec["data"]["values"]}) == sorted(
            f"{m}_{KEYS[name]}" for m in models
        )
