"""`medsimp evaluate` on MedLane files: the authors' reader and scorer (compat mode), the
default reader's dead letters with line-aligned outputs, refused flags, empty inputs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from medsimp.cli import main
from medsimp.metrics import bleu as B
from medsimp.metrics import cider as CI
from medsimp.metrics import rouge as R
from pipelines.sources.medlane import read_medlane_authors, read_medlane_eval

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--set", "evaluate.meteor=false", "--set", "evaluate.bertscore=false"]

# Six records with the quirks of the authors' full test file (invented text): R1 has two
# unprefixed lines, R2 a prefix glued to its text ("1the"), R3 one unprefixed line among
# prefixed ones; the file ends in a single newline, so the authors' last block has an
# empty fifth reference line. Blocks 0-2 are the validation half, 3-5 the test half.
RECORDS = [
    [
        "Pt was given ABX .",
        "1 pt[patient] was given abx[antibiotics] .",
        "2 the patient was given medicine .",
        "3 you were given abx[antibiotics] .",
        "4 you were given medicine .",
    ],
    ["BP was low .", "blood pressure[bp] was low .", "the blood pressure was low ."],
    [
        "HR was high .",
        "1the heart rate was high .",
        "2 heart rate[hr] was high .",
        "3 the heart rate was fast .",
        "4 heart rate was fast .",
    ],
    [
        "pt is sob .",
        "1 pt[patient] is sob[short of breath] .",
        "patient is out of breath .",
        "3 the patient is short of breath .",
        "4 you are short of breath .",
    ],
    [
        "Temp was 38 .",
        "1 the temp[temperature] was 38 .",
        "2 temp[temperature] was high[above normal] .",
        "3 your temp[temperature] was 38 .",
        "4 your temp[body heat] was 38 .",
    ],
    [
        "s/p CABG , stable .",
        "1 s/p[status post] cabg[heart bypass surgery] , stable .",
        "2 after cabg[heart bypass surgery] , stable .",
        "3 after heart surgery , stable .",
        "4 after bypass , stable .",
    ],
]


@pytest.fixture()
def quirky(tmp_path) -> Path:
    path = tmp_path / "test.txt"
    path.write_text("\n\n".join("\n".join(r) for r in RECORDS) + "\n", encoding="utf-8")
    return path


def run(*argv: str) -> tuple[int, str]:
    """Exit code and stderr without the command's announce line."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main([*FAST, *argv])
    return code, _unannounced(err.getvalue())


def _unannounced(err: str) -> str:
    announce = "medsimp evaluate files: score outputs"
    return "".join(ln for ln in err.splitlines(keepends=True) if not ln.startswith(announce))


def test_the_banner_names_no_metric_the_run_does_not_compute(tmp_path):
    """The one line a command prints first says what it does: with `--select sari` it must not
    promise BLEU, METEOR or BERTScore (it listed every metric before)."""
    for name, text in (
        ("hyp", "the pt has htn ."),
        ("src", "the pt has htn ."),
        ("ref", "the patient has high blood pressure ."),
    ):
        (tmp_path / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(
            [
                "evaluate",
                "files",
                *(f"--{n}={tmp_path / f'{n}.txt'}" for n in ("hyp", "src", "ref")),
                "--select",
                "sari",
            ]
        )
    assert code == 0
    banner = next(ln for ln in err.getvalue().splitlines() if ln.startswith("medsimp evaluate files:"))
    assert "--select" in banner
    assert not [m for m in ("BLEU", "METEOR", "ROUGE", "CIDEr", "BERTScore", "AScore", "SARI") if m in banner]


def test_authors_reader_step_by_step(quirky):
    records, skipped = read_medlane_authors(quirky)
    assert skipped == [] and [r["split"] for r in records] == ["validation"] * 3 + ["test"] * 3
    assert records[0]["source"] == "pt was given abx ."  # the whole file is lowercased
    # two characters are cut off every reference line, prefix or not
    assert records[1]["references"] == ["ood pressure[bp] was low .", "e blood pressure was low ."]
    assert records[2]["references"][0] == "he heart rate was high ."
    assert records[3]["references"][1] == "tient is out of breath ."
    assert records[5]["references"][-1] == "" and len(records[5]["references"]) == 5
    assert [r["line"] for r in records] == [1, 7, 11, 17, 23, 29]


def test_default_reader_dead_letters_odd_records_with_their_position(quirky):
    rejects: list[dict] = []
    records = read_medlane_eval(quirky, rejects)
    assert [r["ordinal"] for r in records] == [0, 2, 4, 5]
    assert [(r["ordinal"], r["locator"], r["reason"]) for r in rejects] == [
        (1, "test.txt:8", "bad_reference_prefix"),
        (3, "test.txt:19", "bad_reference_prefix"),
    ]
    assert records[1]["reference_labels"] == [1, 2, 3, 4]  # "1the": prefix 1 glued to "the"


@pytest.mark.slow
def test_default_mode_keeps_outputs_line_aligned(quirky, tmp_path):
    # one output line per record, each the record's first reference: perfect only if aligned
    firsts = [
        "patient was given antibiotics .",
        "-",
        "the heart rate was high .",
        "-",
        "the temperature was 38 .",
        "status post heart bypass surgery , stable .",
    ]
    for hyp_lines, split in ((firsts, "test"), (firsts[3:], "test"), (firsts[:3], "validation")):
        hyp = tmp_path / "hyp.txt"
        hyp.write_text("\n".join(hyp_lines) + "\n")
        out = tmp_path / "s.json"
        code, err = run(
            "evaluate",
            "files",
            "--hyp",
            str(hyp),
            "--medlane",
            str(quirky),
            "--split",
            split,
            "--json",
            str(out),
        )
        assert code == 0
        result = json.loads(out.read_text())
        assert result["n"] == 2 and result["scores"]["bleu_4"] == pytest.approx(1.0)
        assert len(result["not_scored"]) == 1 and "1 record(s) not scored" in err
        assert "blood" not in err and "breath" not in err  # locators only, never text
    hyp.write_text("a\nb\nc\nd\n")  # neither 6 (file), 3 (split) nor 2 (scored) lines
    code, err = run("evaluate", "files", "--hyp", str(hyp), "--medlane", str(quirky), "--split", "test")
    assert code == 2 and err.count("\n") == 1 and "has 4 lines" in err


def test_medlane_mode_reproduces_the_authors_scorer(quirky, tmp_path):
    hyps = [
        "Patient is SOB .",
        "your temp was high and above normal .",
        "s / p heart bypass surgery , stable .",
    ]
    # test half, prepared as bleu_eval_new's obtain() does: cut 2 chars, drop [..], BERT basic tokens,
    # a token equal to an annotated word replaced by its expansion; the first 4 go to nlg-eval
    refs = [
        [
            "patient is short of breath .",
            "tient is out of breath .",
            "the patient is short of breath .",
            "you are short of breath .",
        ],
        [
            "the temperature was 38 .",
            "temperature was above normal .",
            "your temperature was 38 .",
            "your body heat was 38 .",
        ],
        [
            "s / p heart bypass surgery , stable .",
            "after heart bypass surgery , stable .",
            "after heart surgery , stable .",
            "after bypass , stable .",
        ],
    ]
    (tmp_path / "hyp.txt").write_text("\n".join(["x"] * 3 + hyps) + "\n")  # the whole file's outputs
    out = tmp_path / "m.json"
    code, _ = run(
        "--set",
        "evaluate.medlane_references=bleu_eval_new",
        "evaluate",
        "files",
        "--hyp",
        str(tmp_path / "hyp.txt"),
        "--medlane",
        str(quirky),
        "--split",
        "test",
        "--mode",
        "medlane",
        "--json",
        str(out),
    )
    assert code == 0
    scores = json.loads(out.read_text())["scores"]
    bleu = B.coco_bleu_n(hyps, refs)  # pycocoevalcap, whitespace tokens, outputs as given
    for n in range(4):
        assert scores[f"bleu_{n + 1}"] == pytest.approx(bleu[n], abs=1e-6)
    assert scores["rouge_l"] == pytest.approx(R.coco_rouge_l(hyps, refs), abs=1e-6)
    assert scores["cider"] == pytest.approx(CI.cider(hyps, refs), abs=1e-6)
    # HIT: per record the best reference's share of its expansions found by regex search in
    # the tokenized output. Record 3: its unprefixed line has no annotation -> 1.0 (the
    # authors' rule); record 4: "above normal" of reference 2 -> 1/2 ("temperature" is not
    # in the output); record 5: the empty fifth line of the last block -> 1.0
    assert scores["hit"] == pytest.approx((1.0 + 0.5 + 1.0) / 3, abs=1e-6)


def test_medlane_mode_scores_records_with_two_references(quirky, tmp_path):
    (tmp_path / "hyp.txt").write_text("x\nblood pressure was low .\nz\n")
    out = tmp_path / "v.json"
    code, _ = run(
        "evaluate",
        "files",
        "--hyp",
        str(tmp_path / "hyp.txt"),
        "--medlane",
        str(quirky),
        "--split",
        "validation",
        "--mode",
        "medlane",
        "--json",
        str(out),
    )
    assert code == 0 and json.loads(out.read_text())["n"] == 3


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--hyp", "H", "--medlane", "M", "--ref", "R"], "--ref cannot be used with --hyp --medlane"),
        (["--hyp", "H", "--medlane", "M", "--src", "S"], "--src cannot be used"),
        (["--hyp", "H", "--ref", "R", "--split", "test"], "--split cannot be used"),
        (["--hyp", "H"], "give --ref FILE"),
    ],
)
def test_flags_that_would_be_ignored_are_refused(argv, needle):
    code, err = run("evaluate", "files", *argv)
    assert code == 2 and needle in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["files", "--hyp", "H", "--ref", "R", "--metrics", "m.json"], "unrecognized arguments: --metrics"),
        (["files", "--medlane", "M"], "required: --hyp"),
        (["stage", "--hyp", "H", "--metrics", "m", "--plots", "p.json"], "unrecognized arguments: --hyp"),
        # the mode is a subcommand, not guessed from the flags given
        (["--hyp", "H"], "(choose from 'files', 'stage')"),
    ],
)
def test_each_mode_takes_only_its_own_flags(argv, needle, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*FAST, "evaluate", *argv])
    assert exit_info.value.code == 2 and needle in capsys.readouterr().err


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["default", "medlane"])
def test_empty_files_end_with_one_line_never_hang(tmp_path, mode):
    (tmp_path / "h.txt").write_text("")
    (tmp_path / "r.txt").write_text("")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for extra in (["--ref", str(tmp_path / "r.txt")], ["--medlane", str(tmp_path / "r.txt")]):
        # METEOR on: its JVM used to deadlock at exit after an error on empty input
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "medsimp.cli",
                "--set",
                "evaluate.bertscore=false",
                "evaluate",
                "files",
                "--hyp",
                str(tmp_path / "h.txt"),
                *extra,
                "--mode",
                mode,
            ],
            capture_output=True,
            text=True,
            timeout=100,
            cwd=ROOT,
            env=env,
        )
        assert proc.returncode == 2, proc.stderr
        err = _unannounced(proc.stderr)
        assert err.count("\n") == 1 and "nothing to score" in err


def test_blank_outputs_and_references_give_a_result(tmp_path):
    (tmp_path / "h.txt").write_text("\n\n")
    (tmp_path / "r.txt").write_text("\n\n")
    (tmp_path / "s.txt").write_text("the cat sat .\nshe went home .\n")  # no dictionary term
    out = tmp_path / "b.json"
    code, err = run(
        "evaluate",
        "files",
        "--hyp",
        str(tmp_path / "h.txt"),
        "--ref",
        str(tmp_path / "r.txt"),
        "--src",
        str(tmp_path / "s.txt"),
        "--json",
        str(out),
    )
    assert code == 0, err
    scores = json.loads(out.read_text())["scores"]
    assert scores["cider"] == 0.0 and scores["bleu"] == 0.0 and scores["hit"] is None
    assert scores["medlane_bleu"] == 0.0
    # issue 28: SARI of all-empty references is undefined, not 66.7: null with a note
    assert scores["sari"] is None
    note = "sari, sari_xu2016, sari_sentmean, sari_cocoxu not computed (null): every reference is empty"  # one per reason
    assert note in err


SHARED = Path(os.environ.get("MEDSIMP_SHARED_DATA", ROOT.parent / "shared" / "data"))
# The authors' bleu_eval_new.get_score (run with nlg-eval's compute_metrics, pycocoevalcap 1.2)
# on the public 200-record sample, copy-the-source as the system output, test half.
AUTHORS_COPY_TEST = {
    "bleu_1": 0.6401390827669057,
    "bleu_2": 0.5752606017634058,
    "bleu_3": 0.5194128225266638,
    "bleu_4": 0.47055633461168467,
    "rouge_l": 0.7281688400541817,
    "cider": 3.7578126254616153,
    "hit": 0.023333333333333334,
}


@pytest.mark.skipif(not (SHARED / "medlane" / "test-sample.txt").is_file(), reason="shared data absent")
def test_compat_mode_gives_the_authors_numbers_on_the_public_sample(tmp_path):
    sample = SHARED / "medlane" / "test-sample.txt"
    sources = [b.split("\n")[0] for b in sample.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    (tmp_path / "copy.txt").write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    out = tmp_path / "c.json"
    code, _ = run(
        "--set",
        "evaluate.medlane_references=bleu_eval_new",
        "evaluate",
        "files",
        "--hyp",
        str(tmp_path / "copy.txt"),
        "--medlane",
        str(sample),
        "--split",
        "test",
        "--mode",
        "medlane",
        "--json",
        str(out),
    )
    assert code == 0
    scores = json.loads(out.read_text())["scores"]
    for key, value in AUTHORS_COPY_TEST.items():
        assert scores[key] == pytest.approx(value, abs=1e-6), key


def _mutations():
    from hypothesis import strategies as st

    base = ("\n\n".join("\n".join(r) for r in RECORDS) + "\n").encode("utf-8")
    edit = st.tuples(
        st.integers(0, len(base) - 1),
        st.sampled_from(["drop", "insert", "replace"]),
        st.binary(min_size=1, max_size=3) | st.sampled_from([b"\n", b"\n\n", b"[", b"]", b"\r"]),
    )
    return st.lists(edit, max_size=6).map(lambda edits: _apply(base, edits))


def _apply(data: bytes, edits) -> bytes:
    for pos, kind, chunk in edits:
        pos = min(pos, len(data))
        data = data[:pos] + (b"" if kind == "drop" else chunk) + data[pos + (kind != "insert") :]
    return data


@pytest.mark.slow
def test_mutated_files_reconcile_or_fail_in_one_line(tmp_path):
    """Hypothesis: a MedLane file mutated byte by byte either reads with every record accounted
    for (default: scored + dead-lettered = records) and scores in both modes, or is one error."""
    from hypothesis import HealthCheck, given, settings

    from medsimp.errors import InputError
    from medsimp.evaluation.stage import medlane_items
    from medsimp.metrics import ScoringOptions
    from medsimp.metrics import scoring as S

    path = tmp_path / "m.txt"

    @settings(
        max_examples=int(os.environ.get("MEDSIMP_FUZZ_EXAMPLES", "25")),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(_mutations())
    def check(data: bytes) -> None:
        path.write_bytes(data)
        for mode in ("default", "medlane"):
            try:
                ev = medlane_items(str(path), None, mode)
            except InputError as exc:
                assert "\n" not in str(exc)
                continue
            if mode == "default":
                assert len(ev.items) + len(ev.rejects) == ev.n_records == len(ev.split_positions)
            hyps = ev.align([it.source or "" for it in ev.items])
            if ev.items:
                scores = S.score(mode, hyps, ev.items, set(), options=ScoringOptions(meteor=False))
                assert scores["bleu_1"] is not None

    check()
