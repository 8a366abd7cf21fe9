"""dvc.yaml's code deps are exactly each stage's import closure (with the packaged resources it
reads): a change reruns the stages that run the changed code and no others (measured in a
reproduced clone by tests/test_fresh_clone.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from medsimp import code_graph
from medsimp.cli import dvc_deps

ROOT = Path(__file__).resolve().parent.parent
TEXT = (ROOT / "dvc.yaml").read_text(encoding="utf-8")


def _deps(text: str) -> dict[str, list[str]]:
    return {name: body.get("do", body)["deps"] for name, body in yaml.safe_load(text)["stages"].items()}


def test_every_stage_lists_exactly_the_code_its_command_runs() -> None:
    assert dvc_deps.sync(TEXT) == TEXT, "dvc.yaml's code deps are stale: run python -m medsimp.cli.dvc_deps"
    assert dvc_deps.main(["--check", str(ROOT / "dvc.yaml")]) == 0


def test_a_dropped_or_foreign_code_dep_is_put_right(tmp_path) -> None:
    notes = TEXT.index("  notes:\n")
    broken = TEXT[:notes] + TEXT[notes:].replace(
        "      - pipelines/jobs/beam_io.py\n", "      - medsimp\n", 1
    )
    assert "pipelines/jobs/beam_io.py" not in _deps(broken)["notes"]
    assert dvc_deps.sync(broken) == TEXT
    path = tmp_path / "dvc.yaml"
    path.write_text(broken, encoding="utf-8")
    assert dvc_deps.main(["--check", str(path)]) == 1
    assert dvc_deps.main([str(path)]) == 0
    assert path.read_text(encoding="utf-8") == TEXT


def test_code_deps_are_files_and_data_deps_stay() -> None:
    for name, deps in _deps(TEXT).items():
        code = [d for d in deps if dvc_deps.is_code(d)]
        assert code and all((ROOT / d).exists() for d in code), name
        assert not [d for d in code if d in code_graph.ROOT_PACKAGES], (name, "a whole package folder")
    assert _deps(TEXT)["notes"][:3] == ["${notes.input}", "${notes.abbreviations}", "${notes.common_words}"]


def test_the_annotator_page_is_code_of_no_data_or_training_stage() -> None:
    users = [name for name, deps in _deps(TEXT).items() if "medsimp/annotate/page.py" in deps]
    assert users == []
    assert "medsimp/annotate/ingest.py" in _deps(TEXT)["annotate_ingest"]
    assert "alignment/crf.py" not in _deps(TEXT)["notes"]
    # the metrics registry imports its modules by listing the package: each is evaluate's code
    assert {"medsimp/metrics/sari.py", "medsimp/metrics/readability.py"} <= set(_deps(TEXT)["evaluate"])
    assert "training/trainer.py" not in _deps(TEXT)["align"]


def test_closure_follows_function_level_imports_and_dotted_name_strings() -> None:
    files = {
        p.relative_to(ROOT).as_posix() for p in code_graph.closure(["medsimp.cli.commands.build"])[0].values()
    }
    # commands/build.py imports only inside run(); the builder is imported by a run-time name,
    # so each build@ item lists its own (`code_modules`)
    assert "medsimp/corpora/writer.py" in files and "medsimp/corpora/radiology.py" not in files
    assert "training/trainer.py" not in files
    own = dvc_deps.variant_code(TEXT)["build"]
    assert {"medsimp/corpora/radiology.py", "pipelines/text/radiology.py"} <= set(own["radiology"])
    assert "medsimp/corpora/radiology.py" not in own["plaba"]


def test_packaged_resources_are_covered() -> None:
    deps = _deps(TEXT)
    assert "medsimp/resources/radiology" in deps["radiology"]  # resources.path("radiology")
    # a table of choices names the prompt sets: each one is the simplify stage's code
    prompts = {
        f"medsimp/resources/prompts/selfcorrect-{n}.yaml" for n in ("yang2024", "yang2024-paraphrase", "v1")
    }
    assert prompts <= set(deps["simplify"])
    # params name the dictionaries and the common-word list: data deps through ${...}
    assert {"${train.dictionaries[0]}", "${train.dictionaries[1]}"} <= set(deps["train"])
    assert {"${train.dictionaries[1]}", "${notes.common_words}"} <= set(deps["evaluate"])


# The contract (issue 56 §2): the stages a comment in each module may rerun, read from dvc.yaml
# as DVC resolves it (foreach items included). A module a stage does not run is not its code.
BUILDS = {f"build@{n}" for n in ("multicochrane", "medlane", "msd", "plaba", "radiology")}
TRAINS = {f"train@{n}" for n in ("declare", "bertmt", "dictionary", "copy")}
REPORTS = {f"report@{n}" for n in ("multicochrane", "medlane", "msd", "plaba", "radiology")}
RERUNS = {
    "medsimp/metrics/style.py": {"evaluate"},
    "medsimp/metrics/sari.py": {"evaluate"},
    "medsimp/corpora/plaba.py": {"build@plaba"},
    "medsimp/corpora/msd.py": {"build@msd"},
    "medsimp/corpora/writer.py": BUILDS,
    "alignment/crf.py": {"align_train", "align"},
    "training/declare.py": {"train@declare", "train@bertmt"},
    "training/trainer.py": {"train@declare", "train@bertmt"},
    "training/baselines.py": {"train@dictionary", "train@copy"},
    "medsimp/cli/commands/train.py": TRAINS,
    # align's actions are their own modules (issue 56 section 1): the Beam job is not the
    # training's code, and `align files` (its command, its aligner registry) is no stage's
    "pipelines/jobs/align.py": {"align"},
    "medsimp/cli/commands/align_train.py": {"align_train"},
    "medsimp/cli/commands/align.py": set(),
    "alignment/files.py": set(),
    "alignment/aligners/crf.py": set(),
    "medsimp/text/medlane_refs.py": {"build@medlane", "evaluate", *TRAINS},  # the MedLane format
    # params sections: the stages that list the section under `params:` or whose code imports it
    "medsimp/params_schema.py": set(),  # the root composes the sections: checked in test_params
    "medsimp/sections/filter.py": {"filter", *BUILDS, *REPORTS},
    "medsimp/sections/train.py": {*TRAINS, "evaluate"},
    "medsimp/sections/evaluate.py": {"evaluate"},
    "medsimp/sections/align.py": {"align_train", "align", *BUILDS, *REPORTS},
    "medsimp/sections/cochrane.py": {"cochrane", "build@multicochrane"},
    "medsimp/sections/simplify.py": {"simplify"},
    "medsimp/sections/humaneval.py": {"humaneval_forms", "humaneval_analyze"},
    "medsimp/sections/build.py": BUILDS,
}


def test_a_comment_in_a_module_reruns_only_the_stages_that_run_it() -> None:
    files = dvc_deps.stage_files(TEXT)
    for module, stages in RERUNS.items():
        assert {s for s, code in files.items() if module in code} == stages, module


def test_each_model_stage_lists_its_own_code() -> None:
    """`medsimp train` imports its model's step by name (`code_modules`): each train@ item lists
    that step's closure, so the baselines' stages do not depend on DECLARE's code."""
    from medsimp.cli.commands import train

    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert list(yaml.safe_load(TEXT)["stages"]["train"]["foreach"]) == params["train"]["models"]
    assert set(train.MODEL_STEPS) == set(params["train"]["models"])
    own = dvc_deps.variant_code(TEXT)["train"]
    assert own["copy"] == own["dictionary"] == ["training/baselines.py"]
    assert {"training/declare.py", "training/trainer.py", "training/neural.py"} <= set(own["declare"])
    for model, module in train.MODEL_STEPS.items():  # the step the run imports is the one listed
        assert f"training/{module}.py" in own[model]
    assert "training/trainer.py" not in dvc_deps.code_deps("medsimp.cli.commands.train")


def test_stale_item_code_slots_are_put_right() -> None:
    start = TEXT.index("      copy:\n")
    end = TEXT.index("\n    do:", start) + 1
    broken = TEXT[:start] + "      copy: {}\n" + TEXT[end:]
    broken = broken.replace("        - ${item.code2}\n", "", 1).replace("        - ${item.p2}\n", "", 1)
    assert dvc_deps.sync(broken) == TEXT


def test_each_builder_lists_the_params_its_card_hashes() -> None:
    """build@NAME's params are build.NAME and the UPSTREAM sections of that builder (the card's
    params hashes), written from the code, not a hand list of every section."""
    from medsimp.corpora.card import UPSTREAM

    items = yaml.safe_load(TEXT)["stages"]["build"]["foreach"]
    assert set(items) == set(UPSTREAM)
    for name, item in items.items():
        listed = {v for k, v in item.items() if k.startswith("p")}
        assert listed == {f"build.{name}", *UPSTREAM[name]}, name
    assert yaml.safe_load(TEXT)["stages"]["build"]["do"]["params"] == [f"${{item.p{n}}}" for n in range(1, 6)]
