"""Issue 15: `--select`, the signature and scales, EASSE measures, multi-system report, bootstrap, API."""
from __future__ import annotations

import json
from pathlib import Path

from medsimp.cli import main

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--set", "evaluate.meteor=false", "--set", "evaluate.bertscore=false"]


def _files(tmp_path: Path) -> list[str]:
    (tmp_path / "hyp.txt").write_text("the patient had high blood pressure .\nhe is stable .\n")
    (tmp_path / "ref.txt").write_text("the patient had high blood pressure .\nhe is stable now .\n")
    (tmp_path / "src.txt").write_text("pt had htn .\nhe is stable .\n")
    return ["--hyp", str(tmp_path / "hyp.txt"), "--ref", str(tmp_path / "ref.txt"), "--src", str(tmp_path / "src.txt")]


def test_select_computes_only_the_named_metrics_with_the_same_values(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    args = _files(tmp_path)
    assert main([*FAST, "evaluate", *args, "--json", str(tmp_path / "all.json")]) == 0
    assert main(["evaluate", *args, "--select", "bleu,sari", "--json", str(tmp_path / "some.json")]) == 0
    full = json.loads((tmp_path / "all.json").read_text())["scores"]
    some = json.loads((tmp_path / "some.json").read_text())["scores"]
    assert set(some) == {"bleu", "bleu_1", "bleu_2", "bleu_3", "bleu_4", "sari", "sari_keep", "sari_del", "sari_add"}
    assert all(some[k] == full[k] for k in some)
    assert main(["evaluate", *args, "--select", "ascore", "--json", str(tmp_path / "a.json")]) == 0
    a = json.loads((tmp_path / "a.json").read_text())["scores"]
    assert a["ascore"] == full["ascore"] and {"bleu", "hit", "cwr"} <= set(a)
    capsys.readouterr()
    assert main(["evaluate", *args, "--select", "bleu,blue"]) == 2
    assert "blue" in capsys.readouterr().err
