"""Issue 15: `--select`, the signature and scales, EASSE measures, multi-system report, bootstrap, API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medsimp.cli import main

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--set", "evaluate.meteor=false", "--set", "evaluate.bertscore=false"]


def _files(tmp_path: Path) -> list[str]:
    (tmp_path / "hyp.txt").write_text("the patient had high blood pressure .\nhe is stable .\n")
    (tmp_path / "ref.txt").write_text("the patient had high blood pressure .\nhe is stable now .\n")
    (tmp_path / "src.txt").write_text("pt had htn .\nhe is stable .\n")
    return [
        "--hyp",
        str(tmp_path / "hyp.txt"),
        "--ref",
        str(tmp_path / "ref.txt"),
        "--src",
        str(tmp_path / "src.txt"),
    ]


def test_select_computes_only_the_named_metrics_with_the_same_values(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    args = _files(tmp_path)
    assert main([*FAST, "evaluate", "files", *args, "--json", str(tmp_path / "all.json")]) == 0
    assert (
        main(["evaluate", "files", *args, "--select", "bleu,sari", "--json", str(tmp_path / "some.json")])
        == 0
    )
    full = json.loads((tmp_path / "all.json").read_text())["scores"]
    some = json.loads((tmp_path / "some.json").read_text())["scores"]
    assert set(some) == {"bleu", "sari", "sari_keep", "sari_del", "sari_add"}
    assert all(some[k] == full[k] for k in some)
    assert main(["evaluate", "files", *args, "--select", "ascore", "--json", str(tmp_path / "a.json")]) == 0
    a = json.loads((tmp_path / "a.json").read_text())["scores"]
    assert a["ascore"] == full["ascore"] and {"medlane_bleu", "hit", "cwr"} <= set(a)
    capsys.readouterr()
    assert main(["evaluate", "files", *args, "--select", "bleu,blue"]) == 2
    assert "blue" in capsys.readouterr().err


def test_every_result_carries_a_signature_and_one_scale_per_value(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "s.json"
    assert main([*FAST, "evaluate", "files", *_files(tmp_path), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["scales"]) == {k for k, v in result["scores"].items()}
    assert result["scales"]["sari"] == "0-100" and result["scales"]["bleu"] == "0-100"
    assert result["scales"]["medlane_bleu"] == "0-1"
    assert result["scales"]["cider"] == "0-10"
    sig = result["signature"]
    assert sig.startswith("medsimp:") and "|mode:default|tok:per-metric|case:per-metric|refs:1|" in sig
    assert "|rouge_l:rouge-score-f1+tok-nltk-treebank-lc@0.1.2|" in sig and "meteor" not in sig  # METEOR off
    assert "|bleu:sacrebleu-bleu[nrefs:1,case:mixed,eff:no,tok:13a,smooth:exp]@" in sig
    assert "|sari:easse-0.2.4-corpus-sari+del-f1+tok-13a-lc@" in sig
    captured = capsys.readouterr()
    assert f"signature: {sig}" in captured.err and "sari (0-100)" in captured.out  # results on stdout


def test_api_score_matches_the_cli(tmp_path, monkeypatch):
    from medsimp.evaluation.scorer import score

    monkeypatch.chdir(ROOT)
    out = tmp_path / "s.json"
    assert (
        main(
            [
                "evaluate",
                "files",
                *_files(tmp_path),
                "--select",
                "bleu,sari,hit,cwr,ascore",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    cli = json.loads(out.read_text())
    api = score(
        ["the patient had high blood pressure .", "he is stable ."],
        [["the patient had high blood pressure ."], ["he is stable now ."]],
        sources=["pt had htn .", "he is stable ."],
        select=["bleu", "sari", "hit", "cwr", "ascore"],
    )
    assert api.scores == cli["scores"] and api.signature == cli["signature"] and api.n == 2


def measures(sources: list[str], outputs: list[str]) -> dict:
    """Every measure of the registry through the scoring loop, as `--measures` computes them."""
    from medsimp.metrics import ScoringOptions
    from medsimp.metrics.scoring import EvalItem, score

    items = [EvalItem(s, [s]) for s in sources]
    return score("default", outputs, items, set(), [], ScoringOptions(), measures=True, why={})


def test_measures_are_registered_metrics_apart_from_all_metrics():
    """Issue 38 item 5: the EASSE, copy and style-transfer measures are registered metric classes
    (one registry, one loop), selected with --measures or by name and never among "all metrics"."""
    from medsimp.metrics import metrics, selection

    found = {n for n, m in metrics().items() if m.measure}
    assert found == {
        "compression_ratio", "sentence_splits", "levenshtein_similarity", "exact_copies",
        "additions_proportion", "deletions_proportion", "lexical_complexity", "lcs_distance",
        "input_bleu", "style_accuracy", "perplexity", "masked_edit_distance",
    }  # fmt: skip
    assert not found & selection(None) and found <= selection(None, measures=True)
    assert selection(["input_bleu"]) == {"input_bleu"}


def test_easse_measures_on_a_hand_computed_case():
    from wordfreq import zipf_frequency

    from medsimp.metrics.quality import levenshtein_similarity

    assert levenshtein_similarity("kitten", "sitting") == pytest.approx(8 / 13)  # LCS "ittn" = 4
    src = "The patient has hypertension ."  # 30 chars, 5 tokens
    out = "The patient has high blood pressure . It is bad ."  # 49 chars, 11 tokens, 2 sentences
    got = measures([src, "He is stable ."], [out, "He is stable ."])
    assert got["compression_ratio"] == pytest.approx((49 / 30 + 1) / 2)
    assert got["sentence_splits"] == pytest.approx((2 + 1) / 2)
    assert got["exact_copies"] == pytest.approx(0.5)
    # added: high blood pressure it is bad . = 7 of 11; deleted: hypertension = 1 of 5
    assert got["additions_proportion"] == pytest.approx((7 / 11 + 0) / 2)
    assert got["deletions_proportion"] == pytest.approx((1 / 5 + 0) / 2)
    # content words of `out`: patient high blood pressure bad; Q3 of 8 - zipf (numpy linear quantile)
    first = sorted(8 - zipf_frequency(w, "en") for w in ("patient", "high", "blood", "pressure", "bad"))
    q3_first = first[3]  # 0.75 * (5 - 1) = index 3 exactly
    q3_second = 8 - zipf_frequency("stable", "en")  # "he", "is" are stopwords
    assert got["lexical_complexity"] == pytest.approx((q3_first + q3_second) / 2)


def test_multicochrane_copy_measures_hand_computed_issue_19():
    """MultiCochrane's LCS distance to the input and BLEU against the complex input (Joseph et al.
    2023), computed by hand: token LCS over the longer length; BLEU-4 with the input as reference."""
    import math

    from medsimp.evaluation.scorer import SCALES, signature
    from medsimp.metrics.quality import input_bleu, lcs_distance

    # "the patient has . " is the LCS (4) of 5 and 11 tokens: 1 - 4/11
    src, out = "The patient has hypertension .", "The patient has high blood pressure . It is bad ."
    got = measures([src, "He is stable ."], [out, "He is stable ."])
    assert got["lcs_distance"] == pytest.approx((7 / 11 + 0) / 2)
    assert lcs_distance([], []) == 0.0 and lcs_distance(["a"], ["b"]) == 1.0
    # a 4-token prefix of a 5-token input: every n-gram precision 1, brevity penalty exp(1 - 5/4)
    short = [["the", "patient", "has", "high"]]
    assert input_bleu([["the", "patient", "has", "high", "fever"]], short) == pytest.approx(math.exp(-0.25))
    assert input_bleu(short, short) == pytest.approx(1.0)
    assert measures(["The patient has high fever"], ["The patient has high"])["input_bleu"] == pytest.approx(
        math.exp(-0.25)
    )
    assert SCALES["lcs_distance"].startswith("0-1") and SCALES["input_bleu"].startswith("0-1")
    sig = signature("default", 1, ["bleu", "lcs_distance", "input_bleu"])
    assert "lcs_distance:medsimp-lcs-token-1-minus-lcs-over-max@" in sig
    assert "input_bleu:medsimp-corpus-bleu4-vs-input+nosmooth@" in sig


def test_a_measure_named_in_select_is_reported_with_the_measures():
    """A measure asked for by name (no --measures) is computed, signed and reported under
    extra.measures, not dropped; the other measures and the length buckets are not added."""
    from medsimp.evaluation.scorer import score

    result = score(
        ["he is stable ."], [["he is stable ."]], sources=["he is stable ."],
        select=["bleu", "exact_copies"], params=ROOT / "params.yaml",
    )  # fmt: skip
    assert result.extra["measures"] == {"exact_copies": 1.0}
    assert "exact_copies" not in result.scores and "length_buckets" not in result.extra
    assert "|exact_copies:easse-qe-exact-copies+tok-none@" in result.signature


def test_measures_flag_adds_measures_and_length_buckets(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "s.json"
    assert (
        main(["evaluate", "files", *_files(tmp_path), "--select", "bleu", "--measures", "--json", str(out)])
        == 0
    )
    extra = json.loads(out.read_text())["extra"]
    assert extra["measures"]["exact_copies"] == pytest.approx(0.5)  # "he is stable ." copied
    data = json.loads(out.read_text())
    assert extra["measures"]["lcs_distance"] is not None and "|input_bleu:" in data["signature"]
    assert [(b["bucket"], b["n"]) for b in extra["length_buckets"]] == [("0-9", 2)]


def test_measures_without_sources_are_null_with_one_note_per_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "s.json"
    hyp, ref = tmp_path / "h.txt", tmp_path / "r.txt"
    hyp.write_text("he is stable .\n")
    ref.write_text("he is stable now .\n")
    argv = ["evaluate", "files", "--hyp", str(hyp), "--ref", str(ref), "--select", "bleu", "--measures"]
    assert main([*argv, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["extra"]["measures"]["exact_copies"] is None
    assert data["extra"]["not_computed"]["exact_copies"] == "needs sources (--src)"
    notes = [ln for ln in capsys.readouterr().err.splitlines() if "needs sources" in ln]
    assert len(notes) == 1 and "exact_copies" in notes[0] and "input_bleu" in notes[0]


def _items(n: int):
    from medsimp.metrics.scoring import EvalItem

    words = ["pain", "fever", "cough", "rash", "nausea", "fatigue"]
    return [
        EvalItem(
            f"pt has {words[i % 6]} and htn day {i} .",
            [f"the patient has {words[i % 6]} and high blood pressure on day {i} ."],
        )
        for i in range(n)
    ]


def _stats(hyps, items, names=("bleu", "sari")):
    from medsimp.metrics import metrics
    from medsimp.metrics.scoring import inputs
    from medsimp.metrics.significance import collect

    data = inputs(hyps, items, set())
    return {n: (metrics()[n], collect(metrics()[n], data)) for n in names}


def paired_bootstrap(a, b, samples):
    from medsimp.metrics.significance import paired_bootstrap as test

    return test({n: (a[n][0], a[n][1], b[n][1]) for n in a}, samples)


def sentence_stats(hyps, items):
    return _stats(hyps, items)


def test_paired_bootstrap_identical_systems_p_one_and_a_worse_system_p_small():
    items = _items(60)
    good = [it.references[0] for it in items]
    copy = [it.source for it in items]
    a = sentence_stats(good, items)
    same = paired_bootstrap(a, sentence_stats(list(good), items), samples=300)
    assert same["bleu"]["p_value"] == 1.0 and same["sari"]["p_value"] == 1.0
    assert same["bleu"]["delta"] == 0.0 and same["bleu"]["ci_low"] == same["bleu"]["ci_high"] == 0.0
    worse = paired_bootstrap(a, sentence_stats(copy, items), samples=300)
    assert same["bleu"]["wilcoxon_p"] == same["sari"]["wilcoxon_p"] == 1.0
    for metric in ("bleu", "sari"):
        assert worse[metric]["delta"] < 0 and worse[metric]["p_value"] < 0.05
        assert worse[metric]["wilcoxon_p"] < 0.05
        assert worse[metric]["ci_low"] <= worse[metric]["delta"] <= worse[metric]["ci_high"] < 0


def test_bootstrap_tests_the_difference_the_table_prints_issue_54():
    """A readability score is a formula of counts summed over the lines, not the mean of sentence
    scores: the bootstrap used the mean (Fernandez Huerta -0.59 where the table showed -2.88).
    Hand case, Spanish, Fernandez Huerta = 206.84 - 60 Y/W - 1.02 W/S: A = one 2-word line of
    2 syllables each ("gato", "casa": 4 syllables) and one 8-word line of one-syllable words
    (8): W 10, Y 12, S 2: 206.84 - 72 - 5.1 = 129.74. B = the 8-word line twice: W 16, Y 16,
    S 2: 206.84 - 60 - 8.16 = 138.68. The table's difference is 8.94; the mean of A's sentence
    scores is (84.8 + 138.68) / 2 = 111.74, so the old bootstrap tested 26.94. Every metric with
    sentence statistics must resample the score it reports (CWR leaves an empty output out;
    AScore is a formula of corpus values)."""
    from medsimp.metrics import Inputs, ScoringOptions, metrics
    from medsimp.metrics.significance import collect, paired_bootstrap

    short, long_ = "gato casa", "yo no sé si tú ves el sol"
    es = ScoringOptions(lang="es")
    a, b = (
        Inputs([short, long_], [["x"], ["y"]], options=es),
        Inputs([long_, long_], [["x"], ["y"]], options=es),
    )
    fh = metrics()["fernandez_huerta"]
    assert fh.corpus(a)["fernandez_huerta"] == 129.74 and fh.corpus(b)["fernandez_huerta"] == 138.68
    mean_a = sum(fh.sentence(a, i) for i in range(2)) / 2
    assert mean_a == pytest.approx(111.74)  # what the bootstrap compared before
    got = paired_bootstrap({"fernandez_huerta": (fh, collect(fh, a), collect(fh, b))}, samples=200)
    assert got["fernandez_huerta"]["delta"] == pytest.approx(138.68 - 129.74)

    # every metric the bootstrap takes: its statistics give back the score the table prints
    items = _items(4)
    hyps = [it.references[0] for it in items[:3]] + [""]  # an empty output: CWR leaves it out
    terms = [[("htn", ["hypertension", "high blood pressure"])]] * 4
    data = Inputs(
        hyps,
        [it.references for it in items],
        [it.source for it in items],
        terms=terms,
        common={"the", "has", "and", "on", "day"},
        options=ScoringOptions(meteor=False),
    )
    checked = set()
    for name, metric in metrics().items():
        if not metric.has_sentence:
            continue
        table = metric.corpus(data)[metric.keys[0]]
        resampled = metric.from_stats(metric.stats(data).sum(0), len(data))
        assert resampled == pytest.approx(table, abs=1e-9), name
        checked.add(name)
    assert {"fkgl", "fernandez_huerta", "kandel_moles", "cwr", "hit", "ascore", "bleu", "sari"} <= checked


def test_wilcoxon_signed_rank_hand_case_issue_19():
    """PLABA's Wilcoxon signed-rank test. Differences +1..+6 all positive: W- = 0; the exact two-sided
    p-value is 2 / 2**6 = 0.03125 (only all-plus and all-minus sign patterns are as extreme)."""
    import numpy as np

    from medsimp.metrics.significance import wilcoxon_p

    a = np.zeros(6)
    assert wilcoxon_p(a, np.arange(1.0, 7.0)) == pytest.approx(0.03125)
    assert wilcoxon_p(a, a) == 1.0


def _two_systems(tmp_path: Path) -> list[str]:
    items = _items(12)
    (tmp_path / "src.txt").write_text("".join(it.source + "\n" for it in items))
    (tmp_path / "ref.txt").write_text("".join(it.references[0] + "\n" for it in items))
    (tmp_path / "good.txt").write_text("".join(it.references[0] + "\n" for it in items))
    (tmp_path / "copy.txt").write_text("".join(it.source + "\n" for it in items))
    return [
        "--hyp",
        str(tmp_path / "good.txt"),
        "--hyp",
        str(tmp_path / "copy.txt"),
        "--name",
        "Good",
        "--name",
        "Copy",
        "--src",
        str(tmp_path / "src.txt"),
        "--ref",
        str(tmp_path / "ref.txt"),
    ]


@pytest.mark.slow  # over 4 s: out of the fast loop
def test_two_systems_write_one_table_bootstrap_and_a_report_without_text(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    report, out = tmp_path / "r.html", tmp_path / "s.json"
    assert (
        main(
            [*FAST, "evaluate", "files", *_two_systems(tmp_path), "--report", str(report), "--json", str(out)]
        )
        == 0
    )
    result = json.loads(out.read_text())
    assert result["names"] == ["Good", "Copy"] and set(result["systems"]) == {"Good", "Copy"}
    assert result["systems"]["Good"]["scores"]["bleu"] == pytest.approx(100.0)
    assert result["bootstrap"]["Good vs Copy"]["bleu"]["delta"] < 0
    page = report.read_text()
    assert "pt has pain" not in page and "do not share" not in page  # no text without --report-text
    assert (
        main([*FAST, "evaluate", "files", *_two_systems(tmp_path), "--report", str(report), "--report-text"])
        == 0
    )
    page = report.read_text()
    assert "pt has pain" in page and "do not share" in page


@pytest.mark.browser
def test_report_renders_in_headless_chromium(tmp_path, monkeypatch):
    import itertools
    import subprocess
    import time
    import urllib.request

    import websocket

    monkeypatch.chdir(ROOT)
    report = tmp_path / "r.html"
    argv = [*FAST, "evaluate", "files", *_two_systems(tmp_path), "--report", str(report), "--measures"]
    assert main(argv) == 0
    profile = tmp_path / "profile"
    proc = subprocess.Popen(
        [
            "/usr/bin/chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            f"--user-data-dir={profile}",
            report.as_uri(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file, end = profile / "DevToolsActivePort", time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().split("\n")[0]) and time.monotonic() < end:
            time.sleep(0.1)
        base = f"http://127.0.0.1:{port_file.read_text().split()[0]}"
        pages = []
        while not pages and time.monotonic() < end:
            pages = [t for t in json.load(urllib.request.urlopen(f"{base}/json/list")) if t["type"] == "page"]
            time.sleep(0.1)
        ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=20, suppress_origin=True)
        ids = itertools.count(1)

        def js(expr: str):
            msg_id = next(ids)
            ws.send(
                json.dumps(
                    {
                        "id": msg_id,
                        "method": "Runtime.evaluate",
                        "params": {"expression": expr, "returnByValue": True},
                    }
                )
            )
            while True:
                msg = json.loads(ws.recv())
                if msg.get("id") == msg_id:
                    return msg["result"]["result"].get("value")

        while (
            not js("location.protocol === 'file:' && document.readyState === 'complete'")
            and time.monotonic() < end
        ):
            time.sleep(0.1)
        assert js("document.title") == "medsimp evaluate report"
        assert js("[...document.querySelectorAll('#scores tr.system th')].map(e => e.textContent)") == [
            "Good",
            "Copy",
        ]
        best_bleu = js("""(() => { const h = [...document.querySelectorAll('#scores tr:first-child th')]
            .findIndex(e => e.textContent.startsWith('bleu0-1'));
            return [...document.querySelectorAll('#scores tr.system')].map(r => r.children[h].className); })()""")
        assert best_bleu == ["best", ""]
        assert js("document.querySelectorAll('svg.chart').length") >= 10
        assert js("document.querySelector('svg.buckets').getBoundingClientRect().width") > 0
        ws.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_hyp_dash_reads_standard_input_once(tmp_path, monkeypatch, capsys):
    import io

    ref = tmp_path / "ref.txt"
    ref.write_text("the patient has high blood pressure .\n", encoding="utf-8")
    out = tmp_path / "scores.json"
    stdin = io.TextIOWrapper(io.BytesIO(b"the patient has high blood pressure .\n"), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    assert (
        main(["evaluate", "files", "--hyp", "-", "--ref", str(ref), "--select", "bleu", "--json", str(out)])
        == 0
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["scores"]["bleu"] == 100.0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x\n"), encoding="utf-8"))
    assert main(["evaluate", "files", "--hyp", "-", "--ref", "-", "--select", "bleu"]) == 2
    assert "standard input is already read by --hyp" in capsys.readouterr().err.strip().splitlines()[-1]


def test_sentence_level_scores_each_line_alone(tmp_path, capsys):
    hyp, ref, src, out = (tmp_path / n for n in ("hyp.txt", "ref.txt", "src.txt", "lines.jsonl"))
    hyp.write_text("the patient has high blood pressure .\nshe went home .\n", encoding="utf-8")
    ref.write_text("the patient has high blood pressure .\nshe went home today .\n", encoding="utf-8")
    src.write_text("pt has htn .\npt discharged home .\n", encoding="utf-8")
    argv = [
        "evaluate",
        "files",
        "--hyp",
        str(hyp),
        "--ref",
        str(ref),
        "--src",
        str(src),
        "--select",
        "bleu,sari,sari_sentmean,fkgl,cider",
    ]
    assert main([*argv, "--sentence-level", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["system"], r["line"]) for r in rows] == [("hyp", 1), ("hyp", 2)]
    # EASSE's SARI of a perfect output: add 100, del 100, keep 25 (only "has" and "." are kept and
    # no source bigram survives: EASSE's 0/0 keep F1 is 0), so 75; the sentence-mean variant's 0/0 := 1
    assert rows[0]["bleu"] == 100.0 and rows[0]["sari"] == pytest.approx(75.0)
    assert rows[0]["sari_sentmean"] == 100.0
    # 6 words, 8 syllables (the patient has high blood pressure): 0.39 * 6 + 11.8 * 8 / 6 - 15.59
    assert rows[0]["fkgl"] == pytest.approx(2.4833, abs=1e-4)
    # sacrebleu's smoothed sentence BLEU: no 4-gram match still scores above 0 (issue 29)
    assert 0 < rows[1]["bleu"] < 100 and 0 < rows[1]["sari"] < 100
    assert "cider" not in rows[0]  # corpus-level only
    assert main([*argv, "--mode", "medlane", "--sentence-level", str(tmp_path / "x.jsonl")]) == 2


def test_terminal_table_fits_columns_keeps_the_users_order_and_shows_values_issue_29(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "60")
    argv = _two_systems(tmp_path)
    argv[argv.index("Good")], argv[argv.index("Copy")] = "Zed", "Alpha"
    assert main([*FAST, "evaluate", "files", *argv, "--measures", "--select", "bleu,sari"]) == 0
    out = capsys.readouterr().out  # results on stdout
    lines = out.splitlines()
    assert lines and max(len(line) for line in lines) <= 60
    header = next(line for line in lines if "Zed" in line)
    assert header.index("Zed") < header.index("Alpha")  # the order given, not alphabetical
    row = next(line for line in lines if line.lstrip().startswith("compression_ratio"))
    assert len([c for c in row.split()[1:] if c.replace(".", "").isdigit()]) == 2  # two values
    assert "p = 0 " not in out and "paired bootstrap" in out


def test_json_dash_and_dev_stdout_write_to_standard_output(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    for target in ("-", "/dev/stdout"):
        assert (
            main([*FAST, "evaluate", "files", *_files(tmp_path), "--select", "bleu", "--json", target]) == 0
        )
        captured = capsys.readouterr()
        assert json.loads(captured.out)["scores"]["bleu"] is not None  # only JSON on stdout
        assert "bleu (0-100)" in captured.err  # the table moved to stderr
        assert not (tmp_path / "-").exists() and not Path("-").exists()


DOC_EXAMPLE = {  # docs/metrics.md's `score(...)` example
    "hyps": ["the patient has high blood pressure ."],
    "references": [["the patient has high blood pressure .", "you have high blood pressure ."]],
    "sources": ["pt has htn ."],
    "select": ["bleu", "sari", "hit", "cwr", "ascore"],
}


def test_score_gives_the_checkouts_numbers_from_any_folder_issue_29(tmp_path, monkeypatch, capsys):
    """The params file's paths resolve against its folder, not the current one (issue 29: `hit`
    was 1.0 in the checkout and None, silently, anywhere else)."""
    from medsimp.evaluation.scorer import score

    monkeypatch.chdir(ROOT)
    inside = score(**DOC_EXAMPLE).scores
    monkeypatch.chdir(tmp_path)
    assert score(**DOC_EXAMPLE, params=ROOT / "params.yaml").scores == inside
    assert inside["hit"] == 1.0


def test_score_without_a_params_file_gives_the_checkouts_numbers_issue_35(tmp_path, monkeypatch, capsys):
    """Issue 35 item 5: train.dictionaries defaulted to a checkout file, so the same score gave
    HIT 1.0 in the checkout and 0.5 elsewhere (with a warning). Every default is packaged."""
    from medsimp.evaluation import scorer as evaluation
    from medsimp.params_schema import Train

    assert all(p.startswith("medsimp/resources/") for p in Train().dictionaries)
    monkeypatch.chdir(ROOT)
    inside = evaluation.score(**DOC_EXAMPLE).scores
    monkeypatch.chdir(tmp_path)  # no params.yaml here: the defaults
    monkeypatch.setattr(evaluation, "_WARNED", set())
    elsewhere = evaluation.score(**DOC_EXAMPLE).scores
    assert elsewhere == inside and inside["hit"] == 1.0 and inside["ascore"] is not None
    assert "not found" not in capsys.readouterr().err


def test_hit_that_cannot_be_computed_says_why(tmp_path, monkeypatch, capsys):
    from medsimp.evaluation import scorer as evaluation

    monkeypatch.setattr(evaluation, "_WARNED", set())
    result = evaluation.score(
        ["a b c ."], [["a b c ."]], sources=["x y z ."], select=["hit"], params=ROOT / "params.yaml"
    )
    assert result.scores["hit"] is None
    assert "no source has a professional term" in result.extra["not_computed"]["hit"]
    assert "warning: hit not computed (null): no source has a professional term" in capsys.readouterr().err


@pytest.mark.slow  # loads the CRF encoder (~15 s)
def test_annotate_page_looks_for_the_params_model_beside_the_params_file(tmp_path, monkeypatch, capsys):
    """`annotate page` without --model reads params align.model relative to the params file
    (issue 29: it looked for out/models/crf_aligner in the current folder)."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    params = project / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    (elsewhere / "a.txt").write_text("A sentence.\n")
    (elsewhere / "b.txt").write_text("A sentence.\n")
    rc = main(["--params", str(params), "--set", "annotate.similarities=[crf]", "annotate", "page",
               "--src", "a.txt", "--tgt", "b.txt", "--show-restricted", "--output", "page.html"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert str(project / "out" / "models" / "crf_aligner") in err, err


def test_report_template_escapes_names_and_prints_small_p_values_issue_29_30():
    from medsimp.evaluation.report import render
    from medsimp.evaluation.scorer import SCALES

    systems = {"<b>A</b>": {"bleu": 30.0, "fkgl": 8.0}, "B": {"bleu": 20.0, "fkgl": 6.0}}
    boot = {
        "<b>A</b> vs B": {
            "bleu": {"delta": -10.0, "p_value": 0.000999, "ci_low": -12.0, "ci_high": -8.0, "wilcoxon_p": 0.0}
        }
    }
    page = render(systems, SCALES, {"B": "medsimp:0.1.0|mode:default"}, boot, {}, None)
    assert "<b>A</b>" not in page and "&lt;b&gt;A&lt;/b&gt;" in page
    assert "<td>&lt; 0.001</td>" in page and "<td>0</td>" not in page
    assert '<td class="best">30 ★</td>' in page and '<td class="best">6 ★</td>' in page  # fkgl: lower


@pytest.mark.slow  # two evaluate runs: about 5 s
def test_one_all_empty_reference_says_why_sari_is_not_in_the_bootstrap(tmp_path, monkeypatch, capsys):
    """Round two item 3 of issue 28: SARI on a sentence whose references are all empty is undefined,
    so SARI left the bootstrap; before, silently (the corpus SARI was still reported)."""
    monkeypatch.chdir(ROOT)
    args = _two_systems(tmp_path)
    refs = (tmp_path / "ref.txt").read_text().splitlines()
    refs[2] = ""
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n")
    out = tmp_path / "s.json"
    assert main([*FAST, "evaluate", "files", *args, "--select", "bleu,sari", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["systems"]["Good"]["scores"]["sari"] is not None  # the corpus score stands
    assert set(result["bootstrap"]["Good vs Copy"]) == {"bleu"}
    why = result["bootstrap_skipped"]["Good vs Copy"]["sari"]
    assert why.startswith("Good: sentence 3: every reference is empty")
    err = capsys.readouterr().err
    assert "note: sari not in the paired bootstrap (Good vs Copy): Good: sentence 3: every reference" in err
    refs[2] = "x"
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n")
    assert main([*FAST, "evaluate", "files", *args, "--select", "bleu,sari", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["bootstrap"]["Good vs Copy"]) == {"bleu", "sari"} and result["bootstrap_skipped"] == {}


def test_a_report_adds_no_measures_that_were_not_asked_for(tmp_path, monkeypatch):
    """Issue 35 item 6: --report computed the EASSE/copy measures and length buckets nobody
    asked for (only --measures does)."""
    monkeypatch.chdir(ROOT)
    out, report = tmp_path / "s.json", tmp_path / "r.html"
    argv = [*FAST, "evaluate", "files", *_two_systems(tmp_path), "--select", "bleu,sari"]
    assert main([*argv, "--json", str(out), "--report", str(report)]) == 0
    result = json.loads(out.read_text())
    assert all(k.startswith(("bleu", "sari")) for s in result["systems"].values() for k in s["scores"])
    assert all(not s.get("extra") for s in result["systems"].values()), "--report added measures"
    assert "Not computed: pass <code>--measures</code>" in report.read_text()


def test_scoring_options_are_typed_and_each_metric_builds_its_signature():
    """Issue 56 §4: the settings below `Scorer` are one typed `ScoringOptions` (a misspelt
    setting is a TypeError, not a silently ignored key), and the signature is the metrics' own
    parts (`Metric.signature`, sacrebleu's shape) after the run's. `score()` reads every setting
    from params `evaluate` (overrides included): `rouge_tokenizer` was read only from the
    command line, so `score(overrides={"rouge_tokenizer": ...})` scored with NLTK's tokens."""
    from medsimp.evaluation.scorer import score
    from medsimp.metrics import ScoringOptions, metrics

    with pytest.raises(TypeError):
        ScoringOptions(rouge_tokeniser="rouge-score")  # type: ignore[call-arg]
    hyps, refs = ["Les résultats sont bons ."], [["les résultats sont clairs !"]]
    nltk = score(hyps, refs, select=["rouge_l", "bleu"])
    theirs = score(hyps, refs, select=["rouge_l", "bleu"], overrides={"rouge_tokenizer": "rouge-score"})
    registry = metrics()
    run_parts = nltk.signature.split("|")[:5]
    assert nltk.signature == "|".join(
        run_parts + [registry[m].signature(None, "default") for m in ("bleu", "rouge_l")]
    )
    assert "|rouge_l:rouge-score-f1+tok-nltk-treebank-lc@" in nltk.signature
    assert "|rouge_l:rouge-score-f1+tok-rouge-score-default@" in theirs.signature
    assert theirs.scores["rouge_l"] != nltk.scores["rouge_l"]  # `résultats` cut by rouge-score's tokens
    assert registry["bleu"].signature(None, "medlane") is None  # not part of the authors' scorer
    assert registry["rouge_l"].signature(None, "medlane").startswith("rouge_l:coco-rouge-beta1.2@")


@pytest.mark.parametrize("name", ["evaluate", "evaluate_files"])
def test_the_evaluate_command_modules_are_thin(name):
    """Issue 56 §5: the commands parse and call one function of `medsimp.evaluation` (the checks of
    the flags in `medsimp.evaluation.select`, the work in `files.evaluate_files` and
    `stage.run_stage`): `add_arguments` and `run` only, none over 40 lines, no loop, about 100
    lines in all (the rule tests/test_thin_commands.py applies)."""
    import ast

    source = (ROOT / "medsimp" / "cli" / "commands" / f"{name}.py").read_text()
    tree = ast.parse(source)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert {f.name for f in functions} == {"add_arguments", "run"}
    assert max(f.end_lineno - f.lineno + 1 for f in functions) <= 40
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))]
    assert len(source.splitlines()) <= 100
