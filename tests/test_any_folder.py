"""The same result from any folder (issue 29, item 2).

Every command of the embedded sample's DAG (dvc.yaml) runs twice: from the project folder, as
DVC runs it, and from another folder with `--params /project/params.yaml`, its inputs named by
absolute path and its outputs written elsewhere. The outputs must be byte-identical (run
records `*.run.json` aside). The second run lays its outputs out differently (`b/...`), so a
params path resolved against the current folder instead of the params file's finds nothing
(or not the same file) and the test fails. The project is a copy of params.yaml with the
checkout's input folders linked in; `medsimp/resources/...` is not there, so the packaged
resources are found through the package (medsimp.config.resolve_path). Training runs one epoch
(FAST) and foreach items repeating a compared command on another source are left out
(SAME_COMMAND), so the test takes minutes, not the DAG's half hour.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LINKED = ("data", "humaneval")  # the checkout's input folders the DAG reads
_VAR = re.compile(r"\$\{([^}]+)\}")

pytestmark = pytest.mark.slow  # the whole DAG, twice (minutes)

# Tiny params, the same in both runs: one epoch reads the same params paths as the DAG's ten.
FAST = {"train": ("--set", "train.epochs=1")}
# foreach items running the same command as a compared one (link@cochrane, report@multicochrane)
# on another source, which no later stage reads: they add minutes and no params path.
SAME_COMMAND = frozenset(
    {
        "link@notes",
        "report@medlane",
        "report@msd",
        "report@plaba",
        "report@radiology",
    }
)


def _lookup(name: str, scope: dict):
    node = scope
    for part in name.split("."):
        key, *indices = part.replace("]", "").split("[")  # `dictionaries[0]`: DVC's list index
        node = node[key]
        for index in indices:
            node = node[int(index)]
    return node


def _interpolate(value, scope: dict):
    if isinstance(value, str):
        whole = _VAR.fullmatch(value)
        if whole:
            return _lookup(whole.group(1), scope)
        return _VAR.sub(lambda m: str(_lookup(m.group(1), scope)), value)
    if isinstance(value, list):
        return [_interpolate(v, scope) for v in value]
    if isinstance(value, dict):  # keys too: `- metrics/link-${item}.json: {cache: false}`
        return {_interpolate(k, scope): _interpolate(v, scope) for k, v in value.items()}
    return value


def _paths(entries) -> list[str]:
    return [next(iter(e)) if isinstance(e, dict) else e for e in entries or []]


@cache
def stages() -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """(name, cmd, deps, outputs) of every dvc.yaml stage, foreach expanded, in DAG order."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    found = []
    for name, stage in spec.items():
        if "foreach" in stage:
            each = _interpolate(stage["foreach"], params)
            pairs = each.items() if isinstance(each, dict) else [(v, v) for v in each]
            for key, item in pairs:
                body = _interpolate(stage["do"], {**params, "key": key, "item": item})
                found.append((f"{name}@{key}", body))
        else:
            found.append((name, _interpolate(stage, params)))
    rows = [
        (
            name,
            " ".join(body["cmd"].split()),
            tuple(_paths(body.get("deps"))),
            tuple(_paths(body.get("outs")) + _paths(body.get("metrics")) + _paths(body.get("plots"))),
        )
        for name, body in found
    ]
    ordered: list = []
    pending = list(rows)
    while pending:  # topological: a stage after every stage whose output it depends on
        for row in pending:
            others = [r for r in pending if r is not row]
            if not any(_under(d, o) for d in row[2] for r in others for o in r[3]):
                ordered.append(row)
                pending.remove(row)
                break
        else:
            raise AssertionError(f"dvc.yaml has a cycle among {[r[0] for r in pending]}")
    return ordered


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _rewrite(cmd: str, outputs: tuple[str, ...], project: Path) -> list[str]:
    """The command as someone in another folder types it: outputs under `b/`, every other
    relative path that exists in the project (an input) absolute, `--params` the project's."""
    out = []
    for word in shlex.split(cmd):
        if any(_under(word, o) or _under(o, word) for o in outputs):  # `--plots plots/x` holds plots/x/a.csv
            out.append(f"b/{word}")
        elif not word.startswith("-") and "/" in word and (project / word).exists():
            out.append(str(project / word))
        else:
            out.append(word)
    assert out[0] == "medsimp", cmd
    return [sys.executable, "-m", "medsimp.cli", "--params", str(project / "params.yaml"), *out[1:]]


def _files(root: Path) -> dict[str, bytes]:
    if root.is_file():
        return {"": root.read_bytes()}
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".run.json")
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The project folder and the other folder after both runs of every stage, with each
    stage's two exit codes and messages."""
    base = tmp_path_factory.mktemp("anyfolder")
    project, elsewhere = base / "project", base / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    shutil.copy(ROOT / "params.yaml", project / "params.yaml")
    for name in LINKED:
        (project / name).symlink_to(ROOT / name)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "MEDSIMP_CACHE": str(base / "cache"),
        "PYTHONPATH": str(ROOT),
    }
    results = {}
    for name, cmd, _deps, _outputs in compared():
        fast = FAST.get(name.split("@")[0], ())
        a = subprocess.run(
            [sys.executable, "-m", "medsimp.cli", *fast, *shlex.split(cmd)[1:]],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        results[name] = [(a.returncode, a.stderr[-2000:])]
    for name, cmd, _deps, outputs in compared():
        b_cmd = _rewrite(cmd, outputs, project)
        b = subprocess.run(
            [*b_cmd[:5], *FAST.get(name.split("@")[0], ()), *b_cmd[5:]],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        results[name].append((b.returncode, b.stderr[-2000:]))
    return project, elsewhere, results


def compared() -> list:
    return [s for s in stages() if s[0] not in SAME_COMMAND]


@pytest.mark.parametrize("stage", [s[0] for s in compared()])
def test_a_stage_writes_the_same_bytes_from_another_folder(runs, stage):
    project, elsewhere, results = runs
    (a_code, a_err), (b_code, b_err) = results[stage]
    assert a_code == 0, f"{stage} from the project folder -> {a_code}\n{a_err}"
    assert b_code == 0, f"{stage} from another folder -> {b_code}\n{b_err}"
    outputs = next(s[3] for s in stages() if s[0] == stage)
    for out in outputs:
        a, b = _files(project / out), _files(elsewhere / "b" / out)
        assert sorted(a) == sorted(b), f"{stage}: {out} holds other files from another folder"
        differ = [name for name in a if a[name] != b[name]]
        assert not differ, f"{stage}: {out}: {differ[:5]} differ from another folder"


def test_the_rewrite_moves_outputs_and_anchors_inputs(tmp_path):
    (tmp_path / "data" / "x").mkdir(parents=True)
    cmd = "medsimp link --input data/x --output out/linked/x --index out/umls --metrics metrics/m.json --plots p"
    got = _rewrite(cmd, ("out/linked/x", "metrics/m.json", "p/votes.csv"), tmp_path)
    assert got[3:5] == ["--params", str(tmp_path / "params.yaml")]
    assert got[5:] == [
        "link", "--input", str(tmp_path / "data" / "x"), "--output", "b/out/linked/x",
        "--index", "out/umls", "--metrics", "b/metrics/m.json", "--plots", "b/p",
    ]  # fmt: skip
