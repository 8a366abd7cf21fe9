"""Every Beam job gives byte-identical outputs on the default runner and on the PortableRunner
in LOOPBACK mode (the job-service path Flink and Spark use), run through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from medsimp.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PORTABLE = [
    "--beam-arg=--runner=PortableRunner",
    "--beam-arg=--job_endpoint=embed",
    "--beam-arg=--environment_type=LOOPBACK",
]
BASE = ["--params", str(ROOT / "params.yaml"), "--set", "align.crf.encoder={kind: e5}"]
# job -> its command line (R = the runner's output root, S = shared inputs built once)
JOBS = {
    "notes": ["notes", "--input", str(ROOT / "data/sample/NOTEEVENTS.csv"), "--output", "R/notes"],
    "radiology": [
        "radiology",
        "--input",
        str(ROOT / "data/sample/NOTEEVENTS.csv"),
        "--output",
        "R/radiology",
    ],
    "cochrane": ["cochrane", "--output", "R/cochrane"],
    "msd": ["msd", "--output", "R/msd"],
    "plaba": ["plaba", "--output", "R/plaba"],
    "link": ["link", "--input", "R/cochrane", "--output", "R/linked", "--index", "S/umls"],
    "align": ["align", "corpus", "--input", "R/cochrane", "--output", "R/align", "--model", "S/model"],
    "filter": ["filter", "--input", "R/align", "--output", "R/filter"],
}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runners")
    shared = tmp / "shared"
    gold = tmp / "gold.jsonl"  # two documents of the embedded gold keep training short
    sample = (ROOT / "data/sample/align_gold.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    gold.write_text("".join(sample[2:4]), encoding="utf-8")
    assert main(BASE + ["umls-index", "--output", str(shared / "umls")]) == 0
    assert (
        main(
            BASE
            + [
                "--set",
                "align.crf.epochs=20",
                "--set",
                f"cache.dir={tmp / 'cache-train'}",
                "align",
                "train",
                "--gold",
                str(gold),
                "--output",
                str(shared / "model"),
            ]
        )
        == 0
    )
    roots = {}
    for runner, extra in (("default", []), ("portable", PORTABLE)):
        root = tmp / runner
        for job, argv in JOBS.items():
            argv = [a.replace("R/", f"{root}/").replace("S/", f"{shared}/") for a in argv]
            # a cache per runner, so both runs compute every document
            code = main(BASE + ["--set", f"cache.dir={tmp / ('cache-' + runner)}"] + argv + extra)
            assert code == 0, f"{job} on {runner}"
        roots[runner] = root
    return roots


@pytest.mark.parametrize("job", list(JOBS))
def test_portable_loopback_matches_default_runner(runs, job):
    out = JOBS[job][JOBS[job].index("--output") + 1].removeprefix("R/")
    default, portable = _files(runs["default"] / out), _files(runs["portable"] / out)
    assert any(name.endswith((".parquet", ".jsonl")) for name in default)
    assert default.keys() == portable.keys()
    differ = [name for name in default if default[name] != portable[name]]
    assert not differ, f"{job}: {differ} differ between runners"
