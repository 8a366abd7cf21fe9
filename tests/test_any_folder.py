"""The same result from any folder (issue 29, item 2).

Every command of the embedded sample's DAG (dvc.yaml) runs from another folder with `--params
/project/params.yaml`, its inputs named by absolute path, as someone outside the project types
it, and what it writes must be what DVC recorded for it: the project's `dvc diff` against the
committed dvc.lock reports none of its outputs (the fresh clone, tests/test_fresh_clone.py, runs
the same commands from the project folder through `dvc repro`). The current folder holds
nothing, so a params path resolved against it instead of against the params file finds nothing
and the command fails. The project is a copy of params.yaml, dvc.yaml and dvc.lock with the
checkout's input folders linked in; `medsimp/resources/...` is not there, so the packaged
resources are found through the package (medsimp.config.resolve_path).

Training runs no epoch (FAST: the seeded initial weights, then everything a trained model writes:
settings, dictionary, encoder, predictions, logs) to keep the test to minutes: every params path
(data, dictionaries, encoder) is read at epoch 0 too; the checkpoints, which an epoch adds, live
in the params-relative cache both runs share, and the loop itself is tests/test_training_model.py's.
So its outputs cannot equal the lock's: the training stages and those reading their outputs
(TRAINED) run twice with FAST, from the project folder and from the other folder (outputs under
`b/...`), and the two must be byte-identical (run records `*.run.json` aside). foreach items repeating a compared command on
another source are left out (SAME_COMMAND).
"""

from __future__ import annotations

import json
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

pytestmark = pytest.mark.slow  # the whole DAG, training shortened (minutes)

# No training, the same in both runs: epoch 0 on short sequences reads the same params paths as
# the DAG's full training (one epoch here cost 3-7 CPU-min of `make test` for DECLARE alone), and
# the untrained decoder writes at most 2 tokens per span (it would write 16, max_span, each time).
# Evaluate without METEOR, whose jar is a packaged file and no params path (a JVM per run).
FAST = {
    "train": ("--set", "train.epochs=0", "--set", "train.max_length=24", "--set", "train.max_span=2"),
    "evaluate": ("--set", "evaluate.meteor=false"),
}
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


def _rewrite(cmd: str, outputs: tuple[str, ...], project: Path, anchored: tuple[str, ...] = ()) -> list[str]:
    """The command as someone in another folder types it: `outputs` under `b/`, `anchored`
    outputs and every other relative path that exists in the project (an input) absolute,
    `--params` the project's."""
    out = []
    for word in shlex.split(cmd):
        if any(_under(word, o) or _under(o, word) for o in outputs):  # `--plots plots/x` holds plots/x/a.csv
            out.append(f"b/{word}")
        elif any(_under(word, o) or _under(o, word) for o in anchored):
            out.append(str(project / word))
        elif not word.startswith("-") and "/" in word and (project / word).exists():
            out.append(str(project / word))
        else:
            out.append(word)
    assert out[0] == "medsimp", cmd
    return [sys.executable, "-m", "medsimp.cli", "--params", str(project / "params.yaml"), *out[1:]]


def _tracked(out: str) -> dict[str, bytes]:
    """The checkout's git-tracked files at `out` (a file or a folder), as `_files` names them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", out], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    paths = [ROOT / p for p in listed.split("\0") if p]
    if paths == [ROOT / out]:
        return {"": paths[0].read_bytes()}
    return {str(p.relative_to(ROOT / out)): p.read_bytes() for p in paths if not p.name.endswith(".run.json")}


def _files(root: Path) -> dict[str, bytes]:
    if root.is_file():
        return {"": root.read_bytes()}
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".run.json")
    }


def trained() -> frozenset[str]:
    """The training stages (FAST) and every stage that reads what they write."""
    rows = stages()
    found = {name for name, *_ in rows if name.split("@")[0] in FAST}
    grew = True
    while grew:
        outs = [o for name, _c, _d, outputs in rows if name in found for o in outputs]
        more = {name for name, _c, deps, _o in rows if any(_under(d, o) for d in deps for o in outs)}
        grew = bool(more - found)
        found |= more
    return frozenset(found)


def _run(cmd: list[str], cwd: Path, env: dict) -> tuple[int, str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return done.returncode, done.stderr[-2000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The project and the other folder after every stage ran, with each stage's exit codes and
    messages (one run, or two for TRAINED: the project folder's, the other folder's) and the
    project's `dvc diff` against its committed lock."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    base = tmp_path_factory.mktemp("anyfolder")
    project, elsewhere = base / "project", base / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    for name in ("params.yaml", "dvc.yaml", "dvc.lock"):
        shutil.copy(ROOT / name, project / name)
    for name in LINKED:
        (project / name).symlink_to(ROOT / name)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "MEDSIMP_CACHE": str(base / "cache"),
        "PYTHONPATH": str(ROOT),
    }
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for cmd in (
        ["git", "init", "--quiet"],
        [sys.executable, "-m", "dvc", "init", "--quiet"],
        ["git", "add", "params.yaml", "dvc.yaml", "dvc.lock", ".dvc"],
        [*git, "commit", "--quiet", "-m", "lock"],
    ):
        code, err = _run(cmd, project, env)
        assert code == 0, f"{' '.join(cmd)} -> {code}\n{err}"
    results = {}
    for name, cmd, _deps, outputs in compared():
        fast = FAST.get(name.split("@")[0], ())
        if name in trained():  # from the project folder too: the reference the lock cannot be
            a = _run([sys.executable, "-m", "medsimp.cli", *fast, *shlex.split(cmd)[1:]], project, env)
            b_cmd = _rewrite(cmd, outputs, project)
            results[name] = [a, _run([*b_cmd[:5], *fast, *b_cmd[5:]], elsewhere, env)]
        else:  # outputs at the project's own paths, by absolute path, for `dvc diff`
            b_cmd = _rewrite(cmd, (), project, outputs)
            results[name] = [_run(b_cmd, elsewhere, env)]
    done = subprocess.run(
        [sys.executable, "-m", "dvc", "diff", "--json"], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    diff = json.loads(done.stdout or "{}")
    moved = {
        entry["path"].rstrip("/")
        for kind in ("added", "deleted", "modified", "renamed")
        for entry in diff.get(kind, [])
    }
    return project, elsewhere, results, moved


def compared() -> list:
    return [s for s in stages() if s[0] not in SAME_COMMAND]


@pytest.mark.parametrize("stage", [s[0] for s in compared()])
def test_a_stage_writes_the_same_bytes_from_another_folder(runs, stage):
    project, elsewhere, results, moved = runs
    outputs = next(s[3] for s in stages() if s[0] == stage)
    for where, (code, err) in zip(("the project folder", "another folder"), results[stage]):
        assert code == 0, f"{stage} from {where} -> {code}\n{err}"
    if stage not in trained():
        differ = sorted(o for o in outputs if o.rstrip("/") in moved)
        assert not differ, f"{stage}: {differ} from another folder differ from dvc.lock"
        for out in outputs:  # metrics and plots (`cache: false`, git-tracked): `dvc diff` skips them
            if tracked := _tracked(out):
                got = _files(project / out)
                assert sorted(got) == sorted(tracked), f"{stage}: {out} holds other files from another folder"
                differ = [name for name in tracked if got[name] != tracked[name]]
                assert not differ, f"{stage}: {out}: {differ[:5]} differ from the checkout's"
        return
    for out in outputs:
        a, b = _files(project / out), _files(elsewhere / "b" / out)
        assert sorted(a) == sorted(b), f"{stage}: {out} holds other files from another folder"
        differ = [name for name in a if a[name] != b[name]]
        assert not differ, f"{stage}: {out}: {differ[:5]} differ from another folder"


def test_the_stages_compared_with_the_lock_and_with_each_other():
    """Only training and what reads its models run twice; every other stage is held to the lock."""
    assert trained() == {"train@declare", "train@bertmt", "train@dictionary", "train@copy", "evaluate"}


def test_the_rewrite_moves_outputs_and_anchors_inputs(tmp_path):
    (tmp_path / "data" / "x").mkdir(parents=True)
    cmd = "medsimp link --input data/x --output out/linked/x --index out/umls --metrics metrics/m.json --plots p"
    got = _rewrite(cmd, ("out/linked/x", "metrics/m.json", "p/votes.csv"), tmp_path)
    assert got[3:5] == ["--params", str(tmp_path / "params.yaml")]
    assert got[5:] == [
        "link", "--input", str(tmp_path / "data" / "x"), "--output", "b/out/linked/x",
        "--index", "out/umls", "--metrics", "b/metrics/m.json", "--plots", "b/p",
    ]  # fmt: skip
    anchored = _rewrite(cmd, (), tmp_path, ("out/linked/x", "metrics/m.json", "p/votes.csv"))
    assert anchored[5:] == [
        "link", "--input", str(tmp_path / "data" / "x"), "--output", str(tmp_path / "out/linked/x"),
        "--index", "out/umls", "--metrics", str(tmp_path / "metrics/m.json"), "--plots", str(tmp_path / "p"),
    ]  # fmt: skip
