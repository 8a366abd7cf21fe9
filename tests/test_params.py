"""Typed params (issue 13) and the global options (issue 20): the schema in
medsimp/params_schema.py is the one home of defaults, params.yaml agrees with it, and
params files / `--set` are checked against it with one-line errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PARAMS = ROOT / "params.yaml"


def _cli(*argv: str, cwd: Path = ROOT, pythonpath: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "HF_HUB_OFFLINE": "1", "DVC_NO_ANALYTICS": "1"}
    env.pop("MEDSIMP_PARAMS", None)
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _default(dotted: str):
    from medsimp import params_schema as ps

    node = ps.defaults()
    for part in dotted.split("."):
        node = node[part]
    return node


def _disagreements(schema_cls, data: dict, prefix: str = "") -> list[str]:
    """What differs between a schema dataclass's defaults and a params mapping, one line each."""
    from medsimp import params_schema as ps

    out = []
    fields = ps.fields_of(schema_cls)
    for key in data:
        if key not in fields:
            out.append(
                f"params.yaml has {prefix + key!r}, the schema does not: add a field to "
                f"medsimp/params_schema.py ({schema_cls.__name__})"
            )
    for key, tp in fields.items():
        dotted = prefix + key
        if key not in data:
            out.append(f"the schema has {dotted!r}, params.yaml does not: add it to params.yaml")
        elif ps.is_model(tp):
            if not isinstance(data[key], dict):
                out.append(f"params.yaml {dotted!r} must be a mapping, got {data[key]!r}")
            else:
                out += _disagreements(tp, data[key], dotted + ".")
        else:
            want = ps.SAMPLE_PROFILE.get(dotted, _default(dotted))  # the sample profile's keys: its value
            if data[key] != want or type(data[key]) is not type(want):
                out.append(f"default of {dotted!r}: schema {want!r} != params.yaml {data[key]!r}")
    return out


def _with_profile(tree: dict) -> dict:
    """The schema's defaults with the sample profile's values set (what params.yaml holds)."""
    import copy

    from medsimp import params_schema as ps

    tree = copy.deepcopy(tree)
    for dotted, value in ps.SAMPLE_PROFILE.items():
        *parents, last = dotted.split(".")
        node = tree
        for part in parents:
            node = node[part]
        node[last] = value
    return tree


def test_params_yaml_agrees_with_schema_defaults():
    from medsimp import params_schema as ps
    from medsimp.config import load_params

    data = yaml.safe_load(PARAMS.read_text(encoding="utf-8"))
    problems = _disagreements(ps.Params, data)
    assert not problems, "params.yaml and medsimp/params_schema.py disagree:\n" + "\n".join(problems)
    assert _with_profile(ps.defaults()) == data
    # loading checks; `raw` is the file as written (params hashes do not move) and the typed
    # params dump to the same values, of the same types (ints stay ints)
    loaded = load_params(PARAMS)
    assert loaded.raw == data
    assert json.dumps(loaded.model_dump(), sort_keys=True) == json.dumps(data, sort_keys=True)


def test_params_hash_of_params_yaml_is_unchanged():
    """The hash of the file as written: the formula before typed params, on params.yaml."""
    import hashlib

    from medsimp.config import load_params, params_hash

    data = yaml.safe_load(PARAMS.read_text(encoding="utf-8"))
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    assert params_hash(load_params(PARAMS)) == hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
    # a builder card hashes its typed section: the same as the section as written
    params = load_params(PARAMS)
    assert params_hash(params.build.msd) == params_hash(data["build"]["msd"])


def test_disagreement_report_names_the_key():
    from medsimp import params_schema as ps

    data = ps.defaults()
    data["filter"]["treshold"] = 0.5
    del data["evaluate"]["length_buckets"]
    data["train"]["batch_size"] = 16
    problems = "\n".join(_disagreements(ps.Params, data))
    assert "params.yaml has 'filter.treshold', the schema does not" in problems
    assert "the schema has 'evaluate.length_buckets', params.yaml does not" in problems
    assert "default of 'train.batch_size': schema 8 != params.yaml 16" in problems


def test_code_defaults_come_from_the_schema():
    """The literals that drifted (issue 13) now read the schema."""
    from medsimp import params_schema as ps
    from medsimp.params_schema import Train
    from training import trainer

    assert "Settings" not in vars(trainer)  # the trainer reads params `train` itself (issue 38 item 2)
    settings = Train().model_dump(exclude=trainer.UNSAVED_KEYS)
    assert settings == {k: _default(f"train.{k}") for k in settings}
    from alignment import crf, vecalign
    from medsimp.config import load_params

    # what a user gets from params.yaml
    params = load_params(PARAMS)
    assert params.evaluate.length_buckets == [0, 10, 15, 20, 30]
    assert params.filter.threshold == 0.5 and params.align.crf.seed == 13 and params.align.vecalign.seed == 42
    # the aligners read the typed schema (no copies of their own): no params means its defaults
    assert vecalign.resolve(None) == ps.Vecalign() == params.align.vecalign
    assert crf.CRFAligner.train([], None).config == ps.Crf() == params.align.crf
    assert _with_profile(ps.Params().model_dump()) == params.model_dump()


def test_unknown_keys_and_typos_are_rejected_with_a_suggestion(tmp_path):
    from medsimp.config import ParamsError, load_params
    from medsimp.errors import UsageError

    with pytest.raises(
        ParamsError, match=re.escape("unknown param 'filter.treshold'; did you mean 'filter.threshold'?")
    ) as err:
        load_params(PARAMS, ["filter.treshold=0.9"])
    assert isinstance(err.value, UsageError) and err.value.exit_code == 2
    with pytest.raises(
        ParamsError, match=re.escape("unknown param 'fliter.threshold'; did you mean 'filter.threshold'?")
    ):
        load_params(PARAMS, ["fliter.threshold=0.9"])
    bad = tmp_path / "p.yaml"
    bad.write_text("filter: {treshold: 0.9}\n")
    with pytest.raises(
        ParamsError,
        match=re.escape(
            f"{bad}: unknown param 'filter.treshold'; did you mean 'filter.threshold'? "
            "(valid keys of 'filter': input, output, threshold, "
        ),
    ):
        load_params(bad)
    bad.write_text("filter: {zzz: 1}\n")
    with pytest.raises(
        ParamsError,
        match=re.escape("unknown param 'filter.zzz'; valid keys of 'filter': input, output, threshold, "),
    ):
        load_params(bad)
    bad.write_text("qqqq: {a: 1}\n")
    with pytest.raises(ParamsError, match=r"unknown param 'qqqq'; valid keys \(sections\): beam, notes, "):
        load_params(bad)
    with pytest.raises(
        ParamsError,
        match=re.escape("cannot set 'filter.threshold.x': 'filter.threshold' is a number, not a mapping"),
    ):
        load_params(PARAMS, ["filter.threshold.x=1"])


def test_bad_values_are_one_line_type_errors(tmp_path):
    from medsimp.config import ParamsError, load_params

    cases = {
        "filter.threshold=abc": "param 'filter.threshold' must be a number, got 'abc'",
        "notes.min_tokens=1.5": "param 'notes.min_tokens' must be an integer, got 1.5",
        "notes.splitter=spacy": "param 'notes.splitter' must be one of 'rules', 'rush', got 'spacy'",
        "evaluate.length_buckets=[0, x]": "param 'evaluate.length_buckets[1]' must be an integer, got 'x'",
        "link.accepted_semtypes=T047": "param 'link.accepted_semtypes' must be a list of strings or null",
        "evaluate.meteor=maybe": "param 'evaluate.meteor' must be true or false, got 'maybe'",
        "filter.threshold=[1,": "param 'filter.threshold' must be a number, got '[1,' (not valid YAML)",
    }
    for override, message in cases.items():
        with pytest.raises(ParamsError, match=re.escape(message)):
            load_params(PARAMS, [override])
    bad = tmp_path / "p.yaml"
    bad.write_text("train: {epochs: five}\n")
    with pytest.raises(
        ParamsError, match=re.escape(f"{bad}: param 'train.epochs' must be an integer, got 'five'")
    ):
        load_params(bad)


def test_valid_overrides_open_maps_and_string_values():
    from medsimp.config import load_params
    from medsimp.params_schema import E5Spec, UseSpec

    p = load_params(
        PARAMS,
        [
            "filter.threshold=0.9",
            "notes.headers.Plan=plan",
            "align.vecalign.encoder=[{kind: use, languages: [en, fr]}]",
            "simplify.openai.model=4",
            "link.accepted_semtypes=null",
            "align.crf.encoder={kind: e5}",  # a whole spec: another kind has other keys
        ],
    )
    assert p.filter.threshold == 0.9
    assert p.notes.headers is not None
    assert p.notes.headers["Plan"] == "plan" and "Brief Hospital Course" in p.notes.headers
    assert p.align.vecalign.encoder == [UseSpec(languages=["en", "fr"])]
    assert p.simplify.openai.model == "4"  # a string key keeps the text
    assert p.link.accepted_semtypes is None
    assert p.align.crf.encoder == E5Spec()  # the typed spec of that kind, its defaults filled
    from medsimp.params_schema import Filter, section_of, validate

    assert (
        validate({"train": {"epochs": 2}}).train.epochs == 2 and validate({}).evaluate.length_buckets[2] == 15
    )
    assert section_of(Filter, {"threshold": 0.2}).comparison == "gt"  # a dict section: defaults filled


def test_link_index_is_an_alias_of_umls_index(tmp_path, caplog):
    from medsimp.config import ParamsError, load_params

    old = tmp_path / "old.yaml"
    old.write_text("umls: {index: out/u}\nlink: {index: out/u, threshold: 0.8}\n")
    with caplog.at_level("WARNING"):
        p = load_params(old)
    assert p.umls.index == "out/u" and "index" not in p.raw["link"] and p.link.threshold == 0.8
    assert "'link.index' is deprecated" in caplog.text
    old.write_text("link: {index: out/x}\n")
    assert load_params(old).umls.index == "out/x"
    assert load_params(PARAMS, ["link.index=out/y"]).umls.index == "out/y"
    old.write_text("umls: {index: out/u}\nlink: {index: out/other}\n")
    with pytest.raises(ParamsError, match="'link.index' is deprecated and differs from 'umls.index'"):
        load_params(old)


def test_bad_param_through_the_real_cli_is_one_line_exit_2():
    res = _cli("--set", "filter.threshold=abc", "filter")
    assert res.returncode == 2
    assert res.stderr.strip() == "medsimp filter: param 'filter.threshold' must be a number, got 'abc'"
    res = _cli("filter", "--set", "filter.treshold=0.9")  # a typo, after the subcommand
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "medsimp filter: unknown param 'filter.treshold'; did you mean 'filter.threshold'?"
    )


def test_global_options_after_the_subcommand(tmp_path, monkeypatch):
    from medsimp.cli import main
    from pipelines.jobs import filter as filter_job

    seen = {}

    def fake_run(input_path, out_dir, params, beam_params, beam_args, metrics):
        seen.update(params=params, beam=beam_params)

    monkeypatch.setattr(filter_job, "run", fake_run)
    mine = tmp_path / "mine.yaml"
    mine.write_text("filter: {threshold: 0.2, num_shards: 1}\nbeam: {num_workers: 1}\n")
    assert (
        main(
            [
                "--set",
                "filter.num_shards=3",
                "filter",
                "--input",
                "x",
                "--output",
                str(tmp_path / "o"),
                "--params",
                str(mine),
                "--set",
                "filter.threshold=0.75",
                "-v",
            ]
        )
        == 0
    )
    assert seen["params"].threshold == 0.75 and seen["params"].num_shards == 3  # typed sections
    assert seen["beam"].num_workers == 1  # --params after the subcommand was read
    help_text = _cli("filter", "--help").stdout
    assert "global options (also accepted before the command)" in help_text and "--set KEY=VALUE" in help_text


def test_version_in_and_outside_a_checkout(tmp_path):
    res = _cli("--version")
    assert res.returncode == 0, res.stderr
    assert re.fullmatch(r"medsimp \S+ \(git [0-9a-f]{12}(-dirty)?\)", res.stdout.strip()), res.stdout
    copy = tmp_path / "site"
    for package in ("medsimp", "pipelines", "alignment", "training"):  # an install: the four siblings
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    res = _cli("--version", cwd=tmp_path, pythonpath=copy)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert re.fullmatch(r"medsimp \S+ \(git unknown\)", res.stdout.strip()), res.stdout


def test_dvc_experiment_edits_params_yaml_in_one_line(tmp_path):
    """`dvc exp run -S filter.threshold=0.6` rewrites params.yaml through DVC's round-trip
    YAML writer; the file is kept in the form that writer produces, so the change is one line."""
    import difflib
    import shutil

    from dvc.utils.serialize import modify_yaml

    copy = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", copy)
    with modify_yaml(copy) as data:
        data["filter"]["threshold"] = 0.6
    before = (ROOT / "params.yaml").read_text(encoding="utf-8").splitlines()
    changed = [
        line
        for line in difflib.unified_diff(before, copy.read_text(encoding="utf-8").splitlines(), n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert len(changed) == 2 and "threshold: 0.6" in changed[1], changed


def test_a_path_an_output_records_is_relative_to_the_params_folder(tmp_path, monkeypatch):
    """issue 29: `builders/x` typed in the project and `/project/builders/x` typed elsewhere are
    recorded alike; a path outside the project is absolute, whatever folder it was typed from."""
    from medsimp.config import shown_path

    monkeypatch.chdir(tmp_path)
    assert shown_path("builders/x", tmp_path) == "builders/x"
    assert shown_path(tmp_path / "builders" / "x", tmp_path) == "builders/x"
    monkeypatch.chdir(tmp_path / "..")
    assert shown_path(f"{tmp_path.name}/builders/x", tmp_path) == "builders/x"
    assert shown_path("other", tmp_path) == str(tmp_path.parent / "other")
    assert shown_path("gs://b/x", tmp_path) == "gs://b/x"


# --- issue 35 items 9 and 10: what an implicit ./params.yaml may do; special files ------------


def _medsimp(cwd: Path, *argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`medsimp ARGV` in a fresh process run from `cwd`."""
    return subprocess.run(
        [sys.executable, "-m", "medsimp.cli", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def _select(cwd: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    notes = cwd / "notes.txt"
    notes.write_text("Pt with HTN on metformin.\n", encoding="utf-8")
    return _medsimp(cwd, *extra, "select", str(notes), env=env)


def test_another_tools_params_yaml_in_the_current_folder_is_ignored_with_a_note(tmp_path):
    """A DVC project's own params.yaml (`model: {lr: ...}`) made `medsimp select` exit 2."""
    (tmp_path / "params.yaml").write_text("model:\n  lr: 0.1\n", encoding="utf-8")
    done = _select(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "names no medsimp section (model)" in done.stderr and "ignored" in done.stderr
    # a medsimp params file with a typo is still an error (one section is medsimp's)
    (tmp_path / "params.yaml").write_text("notes:\n  min_ratio: 0.1\nmodle:\n  lr: 1\n", encoding="utf-8")
    assert _select(tmp_path).returncode == 2


def test_an_implicit_params_yaml_others_can_write_is_refused(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("cache:\n  dir: /tmp/elsewhere\n", encoding="utf-8")
    params.chmod(0o666)
    done = _select(tmp_path)
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert "writable by everyone" in line and "--params" in line
    params.chmod(0o664)  # group-writable (umask 002 with per-user groups) is the user's own file
    assert _select(tmp_path).returncode == 0


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_fifo_or_device_as_params_is_refused_before_reading(tmp_path, special):
    """/dev/zero as --params read to a MemoryError after 28 s; a FIFO hung forever."""
    path = "/dev/zero"
    if special == "fifo":
        path = str(tmp_path / "p.fifo")
        os.mkfifo(path)
    for extra, env in ((["--params", path], None), ([], {"MEDSIMP_PARAMS": path})):
        done = _select(tmp_path, *extra, env=env)
        assert done.returncode == 2, done.stderr
        assert "not a regular file" in done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("flag", ["--json", "--metrics"])
def test_a_fifo_as_an_output_file_is_refused_not_hung(tmp_path, flag):
    """A FIFO or device as --output/--metrics/--json hung forever (the ownership check hashed it)."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    for name in ("hyp", "ref"):
        (tmp_path / f"{name}.txt").write_text("the patient has high blood pressure .\n", encoding="utf-8")
    if flag == "--json":
        argv = [
            "evaluate",
            "files",
            "--hyp",
            "hyp.txt",
            "--ref",
            "ref.txt",
            "--select",
            "bleu",
            flag,
            str(fifo),
        ]
    else:
        argv = ["cochrane", "--input", str(ROOT / "data" / "sample" / "cochrane.jsonl"), "--output", "co"]
        argv += [flag, str(fifo)]
    done = _medsimp(tmp_path, *argv)
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "co").exists()  # refused before any work: the job never started
    assert "medsimp cochrane: Cochrane" not in done.stderr  # nor announced


def test_output_file_flags_are_checked_before_work_but_a_folder_flag_keeps_its_folder(
    tmp_path, monkeypatch, capsys
):
    """`evaluate stage --metrics metrics/eval` names a folder written into, which exists after any
    run: it is not refused as "a folder"; `/dev/stdout` (a link) is standard output only for the
    flags that print there (--json, --sentence-level), so `--metrics /dev/stdout` is refused at once."""
    from medsimp.cli.app import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("{}\n")
    (tmp_path / "eval").mkdir()
    code = main(["evaluate", "stage", "--metrics", "eval", "--plots", "p.json"])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "is a folder" not in last, last  # refused later: no trained models here
    code = main(
        [
            "cochrane",
            "--input",
            str(ROOT / "data/sample/cochrane.jsonl"),
            "--output",
            "co",
            "--metrics",
            "/dev/stdout",
        ]
    )
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # a place under /dev is refused as such (medsimp.places)
    assert code == 2 and "--metrics /dev/stdout is under /dev, a system tree" in last, err
    assert "medsimp cochrane: Cochrane" not in err and not (tmp_path / "co").exists()  # before any work


def test_a_metrics_file_named_like_the_input_is_refused_and_the_input_kept(tmp_path):
    """Issue 35 item 11: `cochrane --input syn.jsonl --metrics syn.jsonl` replaced the input."""
    data = tmp_path / "syn.jsonl"
    shutil.copy(ROOT / "data" / "sample" / "cochrane.jsonl", data)
    before = data.read_bytes()
    argv = ["cochrane", "--input", str(data), "--output", str(tmp_path / "co"), "--metrics", str(data)]
    done = _medsimp(tmp_path, *argv)
    assert done.returncode == 2, done.stderr
    assert "is an input of this command" in done.stderr.strip().splitlines()[-1]
    assert data.read_bytes() == before and not (tmp_path / "co").exists()


def test_ordered_pairs_are_checked_after_every_override(tmp_path):
    """Issue 35 item 16: `--set notes.min_ratio=0.6 --set notes.max_ratio=0.9` was refused
    ("0.6 > None") while the reverse order ran; a refusal shows both values in force."""
    from medsimp.config import ParamsError, load_params

    for order in (
        ("notes.min_ratio=0.6", "notes.max_ratio=0.9"),
        ("notes.max_ratio=0.9", "notes.min_ratio=0.6"),
    ):
        notes = load_params(PARAMS, list(order)).notes
        assert (notes.min_ratio, notes.max_ratio) == (0.6, 0.9)
    with pytest.raises(
        ParamsError, match=r"'notes.min_ratio' must not exceed 'notes.max_ratio', got 0.6 > 0.5"
    ):
        load_params(PARAMS, ["notes.min_ratio=0.6"])


def test_a_number_too_long_to_read_is_one_line(tmp_path):
    from medsimp.config import ParamsError, load_params

    with pytest.raises(ParamsError, match="a number too long to read"):
        load_params(PARAMS, ["notes.min_tokens=" + "9" * 5000])
    big = tmp_path / "params.yaml"
    big.write_text("notes:\n  min_tokens: " + "9" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(ParamsError, match="a number too long to read"):
        load_params(big)


@pytest.mark.parametrize(
    "output, said", [("", "--output is empty"), (".", "is the current folder or holds it")]
)
def test_an_empty_or_current_folder_output_is_one_line(tmp_path, output, said):
    """Issue 35 item 16: `--output ''` silently meant the default and `--output .` was an internal error."""
    argv = ["cochrane", "--input", str(ROOT / "data" / "sample" / "cochrane.jsonl"), "--output", output]
    done = _medsimp(tmp_path, *argv)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr.strip().splitlines()[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_rerunning_with_existing_scores_and_sentence_level_files_is_allowed(tmp_path):
    """--scores and --sentence-level name outputs: an existing one (medsimp's) is not an input."""
    for name in ("hyp", "ref"):
        (tmp_path / f"{name}.txt").write_text("the patient has high blood pressure .\n", encoding="utf-8")
    argv = ["evaluate", "files", "--hyp", "hyp.txt", "--ref", "ref.txt", "--select", "bleu"]
    argv += ["--sentence-level", "lines.jsonl", "--json", "s.json"]
    for _ in range(2):
        done = _medsimp(tmp_path, *argv)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "align.crf.encoder={kind: e6}",
            "param 'align.crf.encoder.kind' must be one of use, e5, st, minilm, laser, got 'e6'",
        ),
        (
            "align.crf.encoder={prefix: query}",
            "param 'align.crf.encoder.kind' must be one of use, e5, st, minilm, laser, got no kind",
        ),
        (
            "align.crf.encoder={kind: e5, prefx: query}",
            "unknown param 'align.crf.encoder.prefx'; did you mean 'align.crf.encoder.prefix'?",
        ),
        (
            "align.vecalign.encoder=[{kind: use}, {kind: e5, threads: 0}]",
            "param 'align.vecalign.encoder[1].threads' must be",
        ),
        ("align.crf.encoder={kind: laser}", "param 'align.crf.encoder.model_dir' is required (a string)"),
        (
            "align.vecalign.encoder={kind: e5, prefx: q}",
            "unknown param 'align.vecalign.encoder.prefx'; did you mean",
        ),
        ("align.vecalign.encoder={kind: e5, threads: 0}", "param 'align.vecalign.encoder.threads' must be"),
        ("align.vecalign.encoder=[]", "param 'align.vecalign.encoder' must not be empty"),
        (
            "align.crf.encoder.threds=2",
            "unknown param 'align.crf.encoder.threds'; did you mean 'align.crf.encoder.threads'?",
        ),
        (
            "align.crf.encoder.kind=e5",
            "to change the kind, set the whole spec (e.g. 'align.crf.encoder={kind: e5}')",
        ),
    ],
)
def test_an_encoder_spec_is_checked_by_its_kind(override, message):
    """Encoder specs are typed per kind (params_schema.EncoderSpec): a wrong kind, a key that
    kind does not have or a bad value is one line naming the dotted key."""
    from medsimp.config import ParamsError, load_params

    with pytest.raises(ParamsError) as err:
        load_params(PARAMS, [override])
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_nested_deprecated_key_in_a_file_moves_to_its_new_place(tmp_path):
    """`annotate.report.copy_overlap` (before issue 53) is read as `filter.copy_overlap`, one
    definition of a near copy for the filter, the card and the report."""
    from medsimp.config import ParamsError, load_params

    old = tmp_path / "old.yaml"
    old.write_text("annotate:\n  report:\n    copy_overlap: 0.8\nfilter:\n")
    assert load_params(old, []).filter.copy_overlap == 0.8
    both = tmp_path / "both.yaml"
    both.write_text("annotate:\n  report:\n    copy_overlap: 0.8\nfilter:\n  copy_overlap: 0.7\n")
    with pytest.raises(ParamsError, match="is deprecated and differs from 'filter.copy_overlap'"):
        load_params(both, [])


def test_each_section_is_declared_in_its_own_module_and_the_root_adds_nothing():
    """Issue 56 §2: `params_schema` composes the section modules and is no stage's code (a
    docstring in one section reruns only the stages that read it), so it must not change what a
    section reads: each field of `Params` is the section class of `medsimp.sections.<field>`, the
    root has no validator of its own, and each section of params.yaml reads the same alone."""
    import importlib

    from medsimp import params_schema as ps
    from medsimp.config import load_params

    for name, field in ps.Params.model_fields.items():
        module = importlib.import_module(f"medsimp.sections.{name}")
        assert field.annotation is getattr(module, field.annotation.__name__), name
        assert field.default_factory is field.annotation, name
    root = ps.Params.__pydantic_decorators__
    assert set(root.model_validators) == set(ps.Section.__pydantic_decorators__.model_validators)
    assert not root.field_validators and not root.computed_fields
    params = load_params(str(ROOT / "params.yaml"))
    for name, field in ps.Params.model_fields.items():
        alone = field.annotation.model_validate(params.raw.get(name) or {})
        assert alone == getattr(params, name), name
