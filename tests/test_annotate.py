"""The annotator's documents, page escaping, MIMIC guard, server and ingest (agreement by hand)."""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from medsimp.annotate import ingest
from medsimp.annotate.documents import from_pairs
from medsimp.annotate.page import make_server, render
from medsimp.cli import main
from medsimp.errors import Refused

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "builders"))
import upstream

EVIL = '</script><img src=x onerror="window.pwned=1"><b>&amp;</b>'


def _doc(complex_, simple, alignments=()):
    return {
        "doc_id": "d",
        "language": "en",
        "complex": complex_,
        "simple": simple,
        "alignments": [{"c": c, "s": s, "method": "crf", "scores": {}, "keep": True} for c, s in alignments],
        "sim": {},
    }


def _export(who: str, pairs: list[tuple[int, int]], labels=None, done=True, doc_id="d") -> dict:
    labels = labels or {}
    return {
        "format": "medsimp-annotations",
        "version": 1,
        "annotator": who,
        "lineage": ["plaba"],
        "documents": [
            {
                "doc_id": doc_id,
                "language": "en",
                "done": done,
                "complex": ["c0", "c1"],
                "simple": ["s0", "s1"],
                "alignments": [
                    {"c": c, "s": s, "state": "added", "labels": labels.get((c, s), {})} for c, s in pairs
                ],
            }
        ],
    }


def test_pairs_of_a_filter_output_become_whole_documents_in_order(tmp_path):
    paths = upstream.write_cochrane(tmp_path)
    docs, counts = from_pairs(Path(paths["pairs"]).parent, Path(paths["sentences"]).parent, language="es")
    assert docs and all(d["language"] == "es" for d in docs)
    assert counts["pairs"] == sum(len(d["alignments"]) for d in docs)
    import pyarrow.parquet as pq

    sentences = pq.read_table(paths["sentences"]).to_pylist()
    d = docs[0]
    doi = d["doc_id"].rsplit(":", 1)[0]
    mine = sorted(
        (s for s in sentences if s["doc_id"] == doi and s["side"] == "complex"),
        key=lambda s: s["sentence_index"],
    )
    assert d["complex"] == [s["text"] for s in mine]  # every sentence, aligned or not
    a = d["alignments"][0]
    assert a["method"] and "overlap_r" in a["scores"] and a["keep"] in (True, False)


def test_page_escapes_every_text(tmp_path):
    html = render([_doc([EVIL], ["plain"], [(0, 0)])], f"title {EVIL}", ["plaba"])
    assert "<img" not in html and "<b>" not in html
    assert html.count("</script>") == html.count("<script")  # no early close of the data block
    data = html.split('id="data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["docs"][0]["complex"] == [EVIL]  # the text itself is kept intact


def test_restricted_input_needs_the_flag_and_gets_the_banner(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("Pt c/o SOB.\nHx of CHF.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("The patient is short of breath.\n", encoding="utf-8")
    (tmp_path / "al.txt").write_text("[0]:[0]\n[1]:[]\n", encoding="utf-8")
    args = [
        "annotate",
        "page",
        "--src",
        str(tmp_path / "a.txt"),
        "--tgt",
        str(tmp_path / "b.txt"),
        "--alignments",
        str(tmp_path / "al.txt"),
        "--set",
        "annotate.similarities=[overlap]",
        "--output",
        str(tmp_path / "page"),
    ]
    assert main(args) == 3  # unknown lineage counts as MIMIC-derived
    err = capsys.readouterr().err.splitlines()  # the announce line, then the one-line refusal
    assert len(err) == 2 and "--show-restricted" in err[1] and "SOB" not in "\n".join(err)
    assert not (tmp_path / "page").exists()
    assert main([*args, "--show-restricted"]) == 0
    html = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    data = json.loads(html.split('id="data">', 1)[1].split("</script>", 1)[0])
    assert data["restricted"] is True and data["lineage"] is None
    assert data["docs"][0]["alignments"] == [
        {"c": [0], "s": [0], "method": "vecalign", "scores": {}, "keep": None}
    ]
    with pytest.raises(Refused):
        make_server(html, "0.0.0.0", 0, tmp_path / "saved", restricted=True)


def test_server_serves_the_page_and_saves_exports(tmp_path):
    server = make_server("<p>page</p>", "127.0.0.1", 0, tmp_path / "saved", restricted=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert urllib.request.urlopen(base + "/").read() == b"<p>page</p>"
        body = json.dumps(_export("ann2", [(0, 0)])).encode()
        req = urllib.request.Request(base + "/save", data=body, method="POST")
        assert urllib.request.urlopen(req).read() == b"saved"
        assert json.loads((tmp_path / "saved" / "ann2.json").read_text())["annotator"] == "ann2"
        bad = json.dumps({**_export("x", []), "annotator": "../../etc/passwd"}).encode()
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(urllib.request.Request(base + "/save", data=bad, method="POST"))
        assert err.value.code == 400
        assert sorted(p.name for p in (tmp_path / "saved").iterdir()) == ["ann2.json"]
    finally:
        server.shutdown()
        server.server_close()


def test_agreement_and_majority_gold_equal_a_hand_computed_case(tmp_path):
    """3 annotators on a 2 x 2 document. A: {00, 11}, B: {00}, C: {00, 10}.
    Gold (> 1/2 of 3): {00}. F1 vs the others' majority (> 1/2 of 2: both) = {00}:
    A 2/3, B 1, C 2/3, macro 7/9. Alpha over the 4 cells (values 111, 000, 001, 100):
    coincidences o00 = 5, o11 = 3, o01 = o10 = 2, n = 12, n0 = 7, n1 = 5;
    D_o = 4/12, D_e = 2*7*5/(12*11) = 35/66, alpha = 1 - (1/3)/(35/66) = 13/35."""
    files = []
    for who, pairs, lab in (("A", [(0, 0), (1, 1)], 0), ("B", [(0, 0)], 1), ("C", [(0, 0), (1, 0)], 2)):
        path = tmp_path / "in" / f"{who}.json"
        path.parent.mkdir(exist_ok=True)
        labels = {(0, 0): {"elaboration": lab, "insertion": 0}}
        path.write_text(json.dumps(_export(who, pairs, labels)), encoding="utf-8")
        files.append(path)
    docs, work, lineage = ingest.read_exports(files)
    assert lineage == ["plaba"]
    agree = ingest.agreement(docs, work, 0.5, ["insertion", "elaboration"])
    assert agree["f1_vs_majority_of_others"] == {"A": round(2 / 3, 6), "B": 1.0, "C": round(2 / 3, 6)}
    assert agree["f1_macro"] == round(7 / 9, 6)
    assert agree["alpha_alignment"] == round(13 / 35, 6)
    assert agree["alpha_labels"]["insertion"] is None  # no variation: alpha undefined
    assert (
        main(
            [
                "annotate",
                "ingest",
                str(tmp_path / "in"),
                "--output",
                str(tmp_path / "gold"),
                "--metrics",
                str(tmp_path / "m.json"),
            ]
        )
        == 0
    )
    gold = [json.loads(x) for x in (tmp_path / "gold" / "gold.jsonl").read_text().splitlines()]
    assert gold == [
        {"doc_id": "d", "group": "", "complex": ["c0", "c1"], "simple": ["s0", "s1"], "pairs": [[0, 0]]}
    ]
    labels = [json.loads(x) for x in (tmp_path / "gold" / "labels.jsonl").read_text().splitlines()]
    assert labels == [{"doc_id": "d", "c": 0, "s": 0, "labels": {"elaboration": 1, "insertion": 0}}]
    assert (tmp_path / "gold" / "vecalign" / "00000.align").read_text() == "[0]:[0]\n[]:[1]\n[1]:[]\n"
    stats = json.loads((tmp_path / "gold" / "stats.json").read_text())  # m.json: the headline
    assert (stats["read"], stats["kept"], stats["annotators"]) == (1, 1, 3)


def test_unfinished_documents_are_left_out_and_bad_exports_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "a.json").write_text(json.dumps(_export("A", [(0, 0)], done=False)))
    (tmp_path / "b.json").write_text(json.dumps(_export("B", [(1, 1)], doc_id="e")))
    assert (
        main(
            [
                "annotate",
                "ingest",
                str(tmp_path / "a.json"),
                str(tmp_path / "b.json"),
                "--output",
                str(tmp_path / "g"),
                "--metrics",
                str(tmp_path / "m.json"),
            ]
        )
        == 0
    )
    stats = json.loads((tmp_path / "m.json").read_text())
    assert (stats["read"], stats["kept"], stats["filtered"]) == (2, 1, 1)  # A's is not done
    (tmp_path / "b.json").write_text(json.dumps(_export("A", [(1, 1)], doc_id="e")))
    assert (
        main(
            [
                "annotate",
                "ingest",
                str(tmp_path / "a.json"),
                str(tmp_path / "b.json"),
                "--output",
                str(tmp_path / "g"),
            ]
        )
        == 2
    )
    assert "appears in two files" in capsys.readouterr().err
    (tmp_path / "c.json").write_text('{"format": "other"}')
    assert main(["annotate", "ingest", str(tmp_path / "c.json"), "--output", str(tmp_path / "g")]) == 2
    assert "not a medsimp annotation export" in capsys.readouterr().err


def test_page_opens_on_the_multicochrane_es_builder_config(tmp_path):
    import yaml

    paths = upstream.write_cochrane(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"build": {"multicochrane": paths}}), encoding="utf-8")
    builder = tmp_path / "builders" / "multicochrane"
    assert main(["--params", str(params), "build", "multicochrane", "--output", str(builder)]) == 0
    out = tmp_path / "page"
    assert (
        main(
            [
                "annotate",
                "page",
                "--pairs",
                str(builder),
                "--config",
                "es",
                "--sentences",
                paths["sentences"],
                "--output",
                str(out),
                "--set",
                "annotate.similarities=[overlap]",
            ]
        )
        == 0
    )
    html = (out / "index.html").read_text(encoding="utf-8")
    data = json.loads(html.split('id="data">', 1)[1].split("</script>", 1)[0])
    assert data["restricted"] is False and data["lineage"] == ["cochrane"]
    assert data["docs"] and {d["language"] for d in data["docs"]} == {"es"}
    assert data["measures"] == ["overlap"]
    d = data["docs"][0]
    assert len(d["sim"]["overlap"]) == len(d["complex"]) and len(d["sim"]["overlap"][0]) == len(d["simple"])
    assert {a["method"] for doc in data["docs"] for a in doc["alignments"]} <= {"crf+vecalign"}


@pytest.mark.slow
def test_crf_similarity_is_the_aligners_pair_probability():
    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "alignment"))
    from fakes import HashEncoder

    from medsimp.alignment.crf import CRFAligner
    from medsimp.alignment.gold import read_gold
    from medsimp.annotate.similarity import cosine_matrix, crf_matrix, overlap_matrix

    docs = read_gold(Path(__file__).resolve().parents[1] / "data/sample/align_gold.jsonl")
    enc = HashEncoder()
    model = CRFAligner.train(docs, enc, {"epochs": 5})
    d = docs[0]
    mat = crf_matrix(model, d.complex, d.simple)
    assert mat.shape == (len(d.complex), len(d.simple)) and ((mat >= 0) & (mat <= 1 + 1e-9)).all()
    for (c, s), p in model.align(d.complex, d.simple).pairs.items():
        assert abs(mat[c, s] - p) < 1e-6
    cos = cosine_matrix(enc, d.complex, d.simple, "en")
    assert abs(cos[0, 0] - (enc.encode([d.complex[0]]) @ enc.encode([d.simple[0]]).T)[0, 0]) < 1e-6
    r = overlap_matrix(["The cat sat."], ["cats sat", "dog"], "en")
    assert r.tolist() == [[1.0, 0.0]]  # lemmas: cats -> cat
