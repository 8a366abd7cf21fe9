"""Your own data in one command (issue 53 section 5): `medsimp init DIR` makes a project folder
whose params paths are relative to it and point nowhere else, and `dvc repro` there builds a
corpus from the Cochrane files dropped into `data/cochrane/`; a params file named from another
folder never writes into its folder (medsimp.config.resolve_output, docs/formats.md "Where
relative paths resolve")."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "medsimp" / "resources" / "init"
DEVARAJ = ROOT / "tests" / "fixtures" / "sources" / "devaraj"
# the params keys of the project that name files or folders (every other key is medsimp's default)
PATHS = {
    "cochrane.input": "data/cochrane",
    "umls.mrconso": "data/umls/MRCONSO.RRF",
    "umls.mrsty": "data/umls/MRSTY.RRF",
    "umls.index": "out/umls",
    "align.input": "out/cochrane",
    "align.output": "out/align",
    "align.model": "out/models/crf_aligner",
    "align.gold": "data/gold/align_gold.jsonl",
    "filter.input": "out/align",
    "filter.output": "out/filter",
    "build.multicochrane.pairs": "out/filter/pairs",
    "build.multicochrane.sentences": "out/cochrane/sentences",
    "build.multicochrane.linked": "out/linked/cochrane",
    "cache.dir": ".cache/medsimp",
}
# A tiny Devaraj-format input (synthetic reviews): doi, abstract (.source), English PLS (.target)
REVIEWS = [
    (
        "10.1002/14651858.CD900001.pub2",
        "Asthma is a common chronic disease in children. We included 12 trials with 2345 children. "
        "Inhaled corticosteroids reduced the risk of an asthma attack requiring oral steroids. "
        "Headache was reported in 5% of children in both groups.",
        "Asthma is a common long-term disease in children. We found 12 trials with 2345 children. "
        "Inhaled steroids lowered the risk of an asthma attack. Headache was equally common in both groups.",
    ),
    (
        "10.1002/14651858.CD900002",
        "Low back pain is a leading cause of disability. Exercise therapy was compared with usual care in 9 trials. "
        "Exercise reduced pain intensity at 12 weeks. No serious adverse events were reported.",
        "Low back pain is a main cause of disability. Nine trials compared exercise with usual care. "
        "Exercise reduced pain after 12 weeks. No serious side effects were reported.",
    ),
    (
        "10.1002/14651858.CD900003.pub3",
        "Smoking cessation reduces cardiovascular mortality. Nicotine replacement therapy increased quit rates "
        "at six months in 40 trials. Nausea and sleep disturbance were the most common adverse events.",
        "Stopping smoking lowers the risk of dying from heart disease. Nicotine replacement helped people quit "
        "for six months in 40 trials. Nausea and poor sleep were the most common side effects.",
    ),
    (
        "10.1002/14651858.CD900004",
        "Influenza vaccination of healthy adults reduces laboratory-confirmed influenza. Fifty-two trials "
        "with 80,000 adults were included. Local reactions at the injection site were common.",
        "Flu vaccines reduce confirmed flu in healthy adults. We included 52 trials with 80,000 adults. "
        "Soreness where the injection was given was common.",
    ),
]


def write_devaraj(folder: Path, split: str = "test") -> None:
    for ext, column in ((".doi", 0), (".source", 1), (".target", 2)):
        (folder / f"{split}{ext}").write_text("".join(r[column] + "\n" for r in REVIEWS), encoding="utf-8")


# the stages `dvc repro` runs in the project, in order
CHAIN = ["cochrane", "umls_index", "link", "align_train", "align", "filter", "build", "report"]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "DVC_NO_ANALYTICS": "1", **extra}
    env.pop("MEDSIMP_PARAMS", None)
    return env


def _cli(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *argv],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _flat(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --- the folder ---


def test_init_makes_a_project_whose_paths_stay_in_it(tmp_path):
    from medsimp.config import load_params

    done = _cli("init", "proj", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    proj = tmp_path / "proj"
    for name in ("params.yaml", "dvc.yaml", "README.md", ".gitignore", "data/cochrane/README.md"):
        assert (proj / name).is_file(), name
    assert "git init && dvc init" in done.stdout  # no --dvc: nothing ran, the next command says so
    assert not (proj / ".dvc").exists() and not (proj / ".git").exists()
    raw = yaml.safe_load((proj / "params.yaml").read_text(encoding="utf-8"))
    flat = _flat(raw)
    paths = {k: v for k, v in flat.items() if k in PATHS}
    assert paths == PATHS
    for key, value in paths.items():  # relative, inside the folder: no checkout, no package
        assert not os.path.isabs(value) and ".." not in Path(value).parts, key
        assert not value.startswith("medsimp/"), key
    for key in ("cochrane.input", "umls.mrconso", "umls.mrsty", "align.gold"):  # inputs are there
        assert (proj / flat[key]).exists(), key
    text = (proj / "params.yaml").read_text(encoding="utf-8") + (proj / "dvc.yaml").read_text(
        encoding="utf-8"
    )
    assert str(ROOT) not in text and "data/sample" not in text and "medsimp/resources" not in text
    loaded = load_params(proj / "params.yaml")  # the schema takes it
    assert loaded.cochrane.input == "data/cochrane"


def test_the_project_params_are_medsimps_defaults_but_for_its_paths():
    """Defaults follow the papers: every knob of the template is the schema's default (not the
    embedded sample's profile), only the paths are the project's."""
    from medsimp import params_schema as ps

    raw = yaml.safe_load((TEMPLATE / "params.yaml").read_text(encoding="utf-8"))
    defaults = _flat(ps.defaults())
    differ = {k: v for k, v in _flat(raw).items() if k not in PATHS and defaults.get(k, object()) != v}
    assert not differ, f"template values that are not the schema default: {differ}"
    assert {k: v for k, v in _flat(raw).items() if k in PATHS} == PATHS


def _params(stage: dict, key: str | None) -> set[str]:
    """A stage's params entries for the foreach item `key` (`${key}`, `${item.p1}` resolved)."""
    body = stage.get("do", stage)
    item = stage["foreach"][key] if isinstance(stage.get("foreach"), dict) else key
    out = set()
    for entry in body["params"]:
        if isinstance(item, dict):
            entry = re.sub(r"\$\{item\.(\w+)\}", lambda m: str(item.get(m[1], m[0])), entry)
        out.add(entry.replace("${key}", str(key)))
    return out


def test_the_project_dag_is_the_repositorys_stages_on_the_installed_medsimp():
    """One way to run each stage: a project stage is the repository's stage of the same name
    (same command, its params among the repository's), with the deps that are the project's own
    files (no code files, no packaged resources: they are not in the project)."""
    mine = yaml.safe_load((TEMPLATE / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    repo = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert list(mine) == CHAIN
    for name, stage in mine.items():
        body, theirs = stage.get("do", stage), repo[name].get("do", repo[name])
        assert body["cmd"] == theirs["cmd"], name
        assert body["cmd"].startswith("medsimp "), name
        for key in stage.get("foreach") or [None]:  # each item's params, as DVC resolves them
            assert _params(stage, key) <= _params(repo[name], key), (name, key)
        assert all(not d.endswith(".py") and not d.startswith("medsimp/") for d in body["deps"]), name
        if "foreach" in stage:
            keys = stage["foreach"] if isinstance(stage["foreach"], list) else list(stage["foreach"])
            assert set(keys) <= set(
                repo[name]["foreach"] if isinstance(repo[name]["foreach"], list) else repo[name]["foreach"]
            )


def test_every_template_file_is_package_data():
    """A wheel holds the template: every file under medsimp/resources/init matches a
    package-data pattern of pyproject.toml."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"
    ]["medsimp.resources"]
    root = ROOT / "medsimp" / "resources"
    packaged = {m for pattern in patterns for m in glob.glob(pattern, root_dir=root)}
    files = {
        str(p.relative_to(root)) for p in TEMPLATE.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    }
    assert files and files <= packaged, sorted(files - packaged)


def test_the_starter_inputs_are_the_embedded_samples():
    """The project's starter gold and demo vocabulary are the checkout's samples (one source:
    a change to one is a change to the other)."""
    assert (TEMPLATE / "data/gold/align_gold.jsonl").read_bytes() == (
        ROOT / "data/sample/align_gold.jsonl"
    ).read_bytes()
    for name in ("MRCONSO.RRF", "MRSTY.RRF"):
        assert (TEMPLATE / "data/umls" / name).read_bytes() == (ROOT / "data/sample/umls" / name).read_bytes()


def test_init_refuses_a_folder_it_did_not_make_and_keeps_what_it_made(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine\n")
    done = _cli("init", "theirs", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == (
        "medsimp init: theirs is not empty and was not made by `medsimp init`: give a new or empty folder"
    )
    assert sorted(p.name for p in theirs.iterdir()) == ["notes.txt"]
    (tmp_path / "afile").write_text("x")
    done = _cli("init", "afile", cwd=tmp_path)
    assert done.returncode == 2 and "is a file, not a folder" in done.stderr
    # an empty folder is fine; a second init adds what is missing and keeps the user's edits
    (tmp_path / "empty").mkdir()
    assert _cli("init", "empty", cwd=tmp_path).returncode == 0
    params = tmp_path / "empty" / "params.yaml"
    params.write_text(params.read_text(encoding="utf-8").replace("num_shards: 2", "num_shards: 4"))
    (tmp_path / "empty" / "README.md").unlink()
    done = _cli("init", "empty", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 files written" in done.stdout
    assert "num_shards: 4" in params.read_text(encoding="utf-8")
    assert (tmp_path / "empty" / "README.md").is_file()


def test_init_dvc_inside_a_git_repository_is_a_dvc_subdir_project(tmp_path):
    """--dvc inside an existing git work tree runs `dvc init --subdir` (DVC's way for a project in
    a sub-folder of a repository), and no second git repository is made."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    subprocess.run(["git", "init", "--quiet"], cwd=tmp_path, check=True)
    done = _cli("init", "corpora/mine", "--dvc", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ran: dvc init --subdir" in done.stdout and "git init" not in done.stdout
    proj = tmp_path / "corpora" / "mine"
    assert (proj / ".dvc" / "config").is_file() and not (proj / ".git").exists()
    assert "no_scm" not in (proj / ".dvc" / "config").read_text(encoding="utf-8")


def test_the_cochrane_folder_takes_canonical_jsonl_and_devaraj_triples(tmp_path):
    """`data/cochrane/` holds either format (or both); a README beside them is not read, and a
    folder with neither is one line naming both."""
    from medsimp.errors import InputError
    from pipelines.jobs.cochrane import input_specs

    folder = tmp_path / "cochrane"
    folder.mkdir()
    (folder / "README.md").write_text("notes\n")
    with pytest.raises(InputError, match="no X.source/X.target/X.doi triple and no canonical \\*.jsonl file"):
        input_specs(str(folder))
    shutil.copy(ROOT / "data/sample/cochrane.jsonl", folder / "reviews.jsonl")
    assert input_specs(str(folder)) == [("jsonl", str(folder / "reviews.jsonl"))]
    for ext in (".source", ".target", ".doi"):
        shutil.copy(DEVARAJ / f"val{ext}", folder / f"val{ext}")
    assert input_specs(str(folder)) == [
        ("jsonl", str(folder / "reviews.jsonl")),
        ("devaraj", str(folder / "val")),
    ]


# --- a params file from another folder ---


def test_resolve_output_refuses_a_relative_output_of_another_folders_params(tmp_path, monkeypatch):
    from medsimp.config import ParamsError, resolve_output, resolve_path

    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(project)  # the params file's folder: as before (dvc repro runs here)
    assert resolve_output("out/filter", project, "filter.output") == resolve_path("out/filter", project)
    monkeypatch.chdir(elsewhere)
    with pytest.raises(ParamsError) as err:
        resolve_output("out/filter", project, "filter.output")
    assert str(err.value) == (
        f"params filter.output: 'out/filter' is relative to the params file's folder {project}, not the "
        "current one: run from that folder, give --output, or make filter.output absolute"
    )
    assert resolve_output(str(tmp_path / "x"), project, "filter.output") == str(tmp_path / "x")
    assert resolve_output("s3://bucket/x", project, "filter.output") == "s3://bucket/x"


# every command whose output a params path names: (argv, the params key)
FROM_PARAMS = [
    (["filter"], "filter.output"),
    (["align", "corpus"], "align.output"),
    (["align", "train"], "align.model"),
    (["notes"], "notes.output"),
    (["radiology"], "radiology.output"),
    (["umls-index"], "umls.index"),
    (["humaneval", "forms"], "humaneval.forms"),
    (["humaneval", "analyze"], "humaneval.output"),
    (["annotate", "ingest"], "annotate.gold"),
    (["simplify"], "simplify.output"),
]


@pytest.mark.parametrize(("argv", "key"), FROM_PARAMS, ids=[" ".join(a) for a, _ in FROM_PARAMS])
def test_a_params_file_from_another_folder_never_writes_into_it(tmp_path, monkeypatch, capsys, argv, key):
    """`--params <checkout>/params.yaml` from another folder: the output a relative params path
    names is refused in one line (exit 2) before any work, and the params file's folder gains
    nothing; `--output` or running from that folder is the way."""
    from medsimp.cli.app import main

    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    shutil.copy(ROOT / "params.yaml", project / "params.yaml")
    before = _files(project)
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("MEDSIMP_PARAMS", raising=False)
    code = main(["--params", str(project / "params.yaml"), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert err[-1].startswith(f"medsimp {' '.join(argv)}: params {key}: ")
    assert "is relative to the params file's folder" in err[-1]
    assert _files(project) == before
    assert not list(elsewhere.iterdir())


def test_the_refusal_is_the_only_change_from_the_params_folder(tmp_path, monkeypatch, capsys):
    """From the params file's folder (how `dvc repro` runs) and with --output from another one,
    the command runs on as before: here it reaches its missing input."""
    from medsimp.cli.app import main

    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "params.yaml", project / "params.yaml")
    monkeypatch.delenv("MEDSIMP_PARAMS", raising=False)
    monkeypatch.chdir(project)
    assert main(["--params", str(project / "params.yaml"), "filter"]) == 2
    assert "is relative to the params file's folder" not in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    assert main(["--params", str(project / "params.yaml"), "filter", "--output", "mine"]) == 2
    assert "is relative to the params file's folder" not in capsys.readouterr().err


# --- the whole chain ---


@pytest.mark.slow
def test_init_then_dvc_repro_builds_a_corpus_from_the_users_files(tmp_path):
    """`medsimp init --dvc`, Devaraj files dropped into data/cochrane, `dvc repro` from the
    folder: every stage runs, the dataset and its report are there, `dvc status` has nothing to
    do, and nothing was written outside the folder (the cache is MEDSIMP_CACHE's). One knob
    (not a path) is set, beam.num_workers 1, as the embedded sample's profile does (tiny input)."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    work = tmp_path / "work"
    work.mkdir()
    env = {"MEDSIMP_CACHE": str(tmp_path / "cache")}
    done = _cli("init", "corpus", "--dvc", cwd=work, **env)
    assert done.returncode == 0, done.stderr
    assert "ran: git init" in done.stdout and "ran: dvc init" in done.stdout
    proj = work / "corpus"
    write_devaraj(proj / "data" / "cochrane")
    params = proj / "params.yaml"
    params.write_text(re.sub(r"num_workers: 2 ", "num_workers: 1 ", params.read_text(encoding="utf-8")))
    dvc = [sys.executable, "-m", "dvc"]
    done = subprocess.run(
        [*dvc, "repro"], cwd=proj, env=_env(**env), capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = re.findall(r"Running stage '([^']+)'", done.stdout)
    assert ran == [
        "cochrane",
        "umls_index",
        "link@cochrane",
        "align_train",
        "align",
        "filter",
        "build@multicochrane",
        "report@multicochrane",
    ]
    builder = proj / "builders" / "multicochrane"
    assert (builder / "README.md").is_file() and list(builder.rglob("*.parquet"))
    assert (proj / "out" / "report" / "multicochrane" / "index.html").is_file()
    cochrane = json.loads((proj / "metrics" / "cochrane.json").read_text(encoding="utf-8"))
    assert cochrane == {"read": 4, "kept": 4, "filtered": 0, "rejected": 0}
    stats = json.loads((builder / "stats.json").read_text(encoding="utf-8"))
    assert stats["reviews"] == len(REVIEWS)
    status = subprocess.run(
        [*dvc, "status", "--json"], cwd=proj, env=_env(**env), capture_output=True, text=True, timeout=300
    )
    assert status.returncode == 0 and json.loads(status.stdout or "{}") == {}, status.stdout + status.stderr
    assert sorted(p.name for p in work.iterdir()) == ["corpus"]
