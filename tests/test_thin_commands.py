"""Issue 30 item 5: the simplify, humaneval and publish stages run from their domain packages
without the CLI (no argparse namespace), and their command modules stay thin: parse, load,
call one stage function, print the epilogue."""

from __future__ import annotations

import ast
import csv
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsimp import lineage
from medsimp.config import load_params
from medsimp.corpora.publish import publish
from medsimp.errors import InputError, Refused, UsageError
from medsimp.humaneval import stage as humaneval_stage
from medsimp.selfcorrect import stage as simplify_stage
from medsimp.selfcorrect.fake_server import FakeChatServer

REPO = Path(__file__).resolve().parents[1]


def _simplify_params(tmp_path: Path, url: str):
    p = tmp_path / "params.yaml"
    p.write_text(
        "simplify:\n  enabled: true\n  max_rounds: 2\n  concurrency: 1\n"
        f'  openai: {{base_url: "{url}", model: fake-model, backoff: 0.01, max_retries: 1, timeout: 5}}\n'
    )
    return str(p), load_params(p).simplify


def _sentences(tmp_path: Path) -> str:
    p = tmp_path / "sents.jsonl"
    rows = [
        {"sentence_id": "r:0", "text": "Small left pleural effusion."},
        {"sentence_id": "r:1", "text": " "},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def _simplify(tmp_path: Path, params_file: str, sp, out: Path, **kw):
    options = dict(
        kind="openai",
        source=_sentences(tmp_path),
        limit=None,
        cache_dir=None,
        params_dir=tmp_path,
        params_file=params_file,
        overrides=[],
        dua=None,
    )
    return simplify_stage.simplify(sp, str(out), **{**options, **kw})


def test_simplify_stage_runs_without_the_cli(tmp_path):
    out = tmp_path / "out"
    with FakeChatServer() as srv:
        params_file, sp = _simplify_params(tmp_path, srv.url)
        outcome = _simplify(tmp_path, params_file, sp, out)
    s = outcome.stats
    assert outcome.failure == ""
    assert (s["read"], s["kept"], s["filtered"], s["rejected"]) == (2, 1, 1, 0)
    assert s["egress"]["endpoint"] and s["egress"]["restricted"] is True  # unknown lineage
    assert json.loads((out / "stats.json").read_text())["kept"] == 1
    assert "cache_hits" not in json.loads((out / "stats.json").read_text())  # a run key, not an output
    assert len((out / "variants.csv").read_text().splitlines()) == 5


def test_simplify_stage_reports_a_failed_run_and_keeps_its_dead_letters(tmp_path):
    out = tmp_path / "out"
    with FakeChatServer(fail_always=True) as srv:
        params_file, sp = _simplify_params(tmp_path, srv.url)
        outcome = _simplify(tmp_path, params_file, sp, out)
    assert outcome.failure.startswith("no sentence could be simplified (1 failed")
    dead = (out / "dead_letter" / "part-00000.jsonl").read_text()
    assert '"locator": "r:0"' in dead and "effusion" not in dead


def test_simplify_stage_errors_are_one_line_usage_errors(tmp_path):
    params_file, sp = _simplify_params(tmp_path, "http://127.0.0.1:9/v1")
    with pytest.raises(UsageError, match="only applies to --backend openai"):
        _simplify(tmp_path, params_file, sp, tmp_path / "o", kind="local", dua="x")
    with pytest.raises(UsageError, match="needs simplify.local.path"):  # was print + return 2
        _simplify(tmp_path, params_file, sp, tmp_path / "o", kind="local")
    with pytest.raises(InputError, match="simplify input"):
        _simplify(tmp_path, params_file, sp, tmp_path / "o", source=str(tmp_path / "none.csv"))
    assert not (tmp_path / "o").exists()


def test_simplify_skip_reason_and_skipped_output(tmp_path, capsys):
    _, sp = _simplify_params(tmp_path, "http://127.0.0.1:9/v1")
    disabled = sp.model_copy(update={"enabled": False})
    assert simplify_stage.skip_reason(None, sp) == ""
    assert simplify_stage.skip_reason("local", disabled) == ""
    reason = simplify_stage.skip_reason(None, disabled)
    stats = simplify_stage.write_skipped(str(tmp_path / "out"), reason)
    assert stats["skipped"] is True and json.loads((tmp_path / "out" / "stats.json").read_text()) == stats
    assert "skipped" in capsys.readouterr().err


def test_humaneval_stages_run_without_the_cli(tmp_path):
    hp = _humaneval_params(tmp_path)
    variants = tmp_path / "variants.csv"
    with open(variants, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["sentence_id", "variant", "source", "output"])
        for item in ("i1", "i2"):
            for system in ("s1", "s2"):
                w.writerow([item, system, f"Source of {item}", f"{system} says {item}"])
    outcome = humaneval_stage.forms(hp, variants, str(tmp_path / "forms"))
    assert not outcome.skipped and outcome.title == "humaneval forms"
    assert outcome.stats["read"] == 2 and (tmp_path / "forms" / "manifest.json").is_file()

    skipped = humaneval_stage.forms(hp, tmp_path / "none.csv", str(tmp_path / "f2"))
    assert skipped.skipped and json.loads((tmp_path / "f2" / "stats.json").read_text())["skipped"] is True

    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n")
    with pytest.raises(InputError, match="missing columns"):  # was print + return 2
        humaneval_stage.forms(hp, bad, str(tmp_path / "f3"))

    none = humaneval_stage.analyze(
        hp,
        tmp_path / "forms",
        tmp_path / "responses",
        str(tmp_path / "res"),
        variants,
        str(tmp_path / "plots"),
    )
    assert none.skipped and (tmp_path / "plots" / "votes.csv").read_text() == (
        "system,preference,votes,majority_items\n"
    )
    # the reason names the folders as params does (relative to the params file's folder `base`),
    # not as typed, so the output is the same from any folder (issue 29)
    elsewhere = humaneval_stage.analyze(
        hp, tmp_path / "forms", tmp_path / "responses", str(tmp_path / "res2"), variants, None, tmp_path
    )
    assert elsewhere.stats["reason"] == "no forms/manifest.json or no filled CSVs in responses"
    with pytest.raises(InputError, match="no such folder"):
        humaneval_stage.released(tmp_path / "nowhere", str(tmp_path / "x"))


def _humaneval_params(tmp_path: Path):
    p = tmp_path / "params.yaml"
    p.write_text("humaneval: {systems: [s1, s2], n_laypeople: 2}\n")
    return load_params(p).humaneval


def test_publish_refuses_before_any_network_call(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: a call would fail
    with pytest.raises(InputError, match="not a built dataset folder"):
        publish(tmp_path / "nowhere", "me/ds")
    folder = tmp_path / "ds"
    (folder / "train").mkdir(parents=True)
    table = pa.table({"complex": ["seen"], "simple": ["seen"]})
    pq.write_table(table.cast(lineage.with_lineage(table.schema, ["mimic"])), folder / "train" / "x.parquet")
    (folder / "README.md").write_text("# t\n")
    with pytest.raises(Refused, match="derives from MIMIC"):
        publish(folder, "me/ds", private=True)


COMMANDS = REPO / "medsimp" / "cli" / "commands"
# What a command module may define besides its argument builders (`add_*`): the run, and what
# medsimp.cli reads of it (`code_modules`, `params_sections`: dvc_deps and the outputs guard).
ENTRY_POINTS = {"run", "code_modules", "params_sections"}


def _command_modules() -> list[str]:
    return sorted(p.stem for p in COMMANDS.glob("*.py") if p.stem != "__init__")


def test_every_command_module_is_covered():
    names = _command_modules()
    assert len(names) >= 23 and {"align", "report", "train", "annotate", "init"} <= set(names)


@pytest.mark.parametrize("name", _command_modules())
def test_the_command_module_is_thin(name):
    """Issue 56 section 1: a command parses its flags, builds the stage's inputs, outputs, params
    section and runtime, calls one stage function in its domain package and prints the epilogue:
    at most 100 lines, no loop, nothing but argument builders (`add_*`) and its entry points,
    each entry point at most 40 lines."""
    path = COMMANDS / f"{name}.py"
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 100, f"{name}.py: {len(text.splitlines())} lines"
    tree = ast.parse(text)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert "run" in {f.name for f in functions} or name == "__init__"
    for f in functions:
        assert f.name in ENTRY_POINTS or f.name.lstrip("_").startswith("add_"), (name, f.name)
        if f.name in ENTRY_POINTS:
            assert f.end_lineno - f.lineno + 1 <= 40, (name, f.name)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)], name
    loops = [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While, ast.AsyncFor))]
    assert not loops, f"{name}.py: loops at lines {loops} (the work belongs in the stage function)"


def test_the_rule_catches_a_command_that_does_the_work(tmp_path, monkeypatch):
    """The rule fails on the command modules as they were before issue 56 section 1 (here: a
    loop in `run` and a helper that is not an argument builder)."""
    fat = tmp_path / "fat.py"
    fat.write_text(
        "def add_arguments(p):\n    p.add_argument('x')\n\n\n"
        "def _work(rows):\n    return rows\n\n\n"
        "def run(args):\n    for row in _work(args.x):\n        print(row)\n    return 0\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "COMMANDS", tmp_path)
    with pytest.raises(AssertionError, match="_work"):
        test_the_command_module_is_thin("fat")
    fat.write_text(fat.read_text().replace("def _work", "def add_work"))
    with pytest.raises(AssertionError, match="loops at lines"):
        test_the_command_module_is_thin("fat")
