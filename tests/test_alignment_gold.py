"""Gold readers (PLABA, MC-CLEAN, wiki-auto, Vecalign blocks) and the overlap filter r."""

from __future__ import annotations

import json

import pytest

from alignment.gold import DocPair, GoldFormatError, parse_blocks, read_gold
from alignment.overlap import filter_row, lemma_set, overlap_r
from alignment.score import blocks_to_pairs, pair_prf, pairs_to_blocks

PLABA = {
    "7": {
        "question": "q?",
        "123": {
            "Title": "t",
            "abstract": {
                "1": "Thyroiditis is inflammation.",
                "2": "Levothyroxine treats it.",
                "3": "Methods were used.",
                "10": "Ten.",
            },
            "translation1": {
                "1": "Thyroiditis is swelling. It affects the thyroid.",
                "2": "A drug treats it.",
                "3": "",
                "10": "Ten again.",
            },
            "translation2": {"2": "Levothyroxine helps."},
        },
    }
}


def test_plaba_sentence_numbers(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(PLABA), encoding="utf-8")
    docs = read_gold(path)
    assert [d.doc_id for d in docs] == ["7:123:translation1", "7:123:translation2"]
    d1, d2 = docs
    assert d1.complex[3] == "Ten." and d1.group == "7"
    assert d1.simple == [
        "Thyroiditis is swelling.",
        "It affects the thyroid.",
        "A drug treats it.",
        "Ten again.",
    ]
    assert d1.pairs == {(0, 0), (0, 1), (1, 2), (3, 3)}  # split 1-N; "3" empty -> deletion
    assert d2.pairs == {(1, 0)}


def test_mc_clean_documents_and_rows(tmp_path):
    doc = [
        {"doi": "10.1/x", "abstract": ["A b.", "C d."], "pls": ["A.", "C."], "alignments": [[0, 0], [1, 1]]}
    ]
    path = tmp_path / "mc_human.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (d,) = read_gold(path, "mc_clean")
    assert d.doc_id == "10.1/x" and d.pairs == {(0, 0), (1, 1)}
    rows = [
        {
            "label": "aligned",
            "simple_id": "doc-simple-0-1",
            "complex_id": "doc-complex-0-0",
            "simple": "S1",
            "complex": "C0",
        },
        {
            "label": "notAligned",
            "simple_id": "doc-simple-0-0",
            "complex_id": "doc-complex-0-0",
            "simple": "S0",
            "complex": "C0",
        },
    ]
    path.write_text(json.dumps(rows), encoding="utf-8")
    (d,) = read_gold(path, "mc_clean")
    assert d.simple == ["S0", "S1"] and d.pairs == {(0, 1)}
    path.write_text(json.dumps([{"doi": "x", "abstract": ["a"], "pls": ["b"], "alignments": [[0, 3]]}]))
    with pytest.raises(GoldFormatError, match="out of range"):
        read_gold(path, "mc_clean")


def test_wiki_auto_tsv(tmp_path):
    path = tmp_path / "wiki.tsv"
    path.write_text(
        "label\tsimple-sent-index\tcomplex-sent-index\tsimple-sent\tcomplex-sent\n"
        "aligned\tAarhus-simple-0-1\tAarhus-0-2\tIt is big.\tIt is a large city.\n"
        "partialAligned\tAarhus-simple-0-0\tAarhus-0-10\tAarhus is in Denmark.\tAarhus, Denmark.\n"
        "notAligned\tAarhus-simple-0-0\tAarhus-0-2\tAarhus is in Denmark.\tIt is a large city.\n",
        encoding="utf-8",
    )
    (d,) = read_gold(path)
    assert d.complex == ["It is a large city.", "Aarhus, Denmark."]  # 0-2 before 0-10
    assert d.simple == ["Aarhus is in Denmark.", "It is big."]
    assert d.pairs == {(0, 1), (1, 0)}
    path.write_text("aligned\tx-1\ty-1\n", encoding="utf-8")
    with pytest.raises(GoldFormatError, match="5 tab-separated"):
        read_gold(path)


def test_vecalign_blocks_and_pairs():
    blocks = parse_blocks(["[0]:[0]", "[1, 2]:[1]:0.3", "[]:[2]", "[3]:[]"])
    assert blocks == [((0,), (0,)), ((1, 2), (1,)), ((), (2,)), ((3,), ())]
    assert blocks_to_pairs(blocks) == {(0, 0), (1, 1), (2, 1)}
    assert pairs_to_blocks({(0, 0), (1, 1), (2, 1)}, 4, 3) == [
        ((0,), (0,)),
        ((1, 2), (1,)),
        ((), (2,)),
        ((3,), ()),
    ]
    with pytest.raises(GoldFormatError):
        parse_blocks(["nonsense"])
    assert pair_prf([{(0, 0), (1, 1)}], [{(0, 0), (2, 2)}])["f1"] == pytest.approx(0.5)
    assert DocPair.from_json(DocPair("d", ["a"], ["b"], frozenset({(0, 0)})).to_json()).pairs == {(0, 0)}


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_overlap_r_hand_computed():
    # Lc = {the, patient, be, treat, with, drug}; Ls = {patient, be, treat} -> r = 3/3
    assert lemma_set("The patients were treated with drugs.") == {
        "the",
        "patient",
        "be",
        "treat",
        "with",
        "drug",
    }
    assert overlap_r("The patients were treated with drugs.", "Patients are treated.") == 1.0
    # Ls = {child, grow, a, little, less} ; Lc = {growth, be, slightly, reduce, in, the, first, year}: r = 0
    assert overlap_r("Growth was slightly reduced in the first year.", "Children grew a little less.") == 0.0
    # Ls = {we, find, 12, study} ; Lc = {we, include, 12, trial}: r = 2/4
    assert overlap_r("We included 12 trials.", "We found 12 studies.") == pytest.approx(0.5)
    assert overlap_r("Anything.", "...") == 0.0
    # the Spanish lookup table maps "los" -> "lo"
    assert lemma_set("Los pacientes fueron tratados.", "es") == {"lo", "paciente", "ser", "tratar"}
    assert lemma_set("بیماران درمان شدند.", "fa") == {"بیماران", "درمان", "شدند"}


def test_filter_row_bridged_pair_inherits_english_decision():
    base = {"complex_text": "We included 12 trials.", "pivot_ids": [], "pivot_text": ""}
    en = filter_row({**base, "language": "en", "simple_text": "We found 12 studies."}, 0.4)
    assert en["overlap_r"] == pytest.approx(0.5) and en["keep"] is True
    # r = 0.5 does not exceed 0.5 (paper); the `ge` option keeps it
    assert filter_row({**base, "language": "en", "simple_text": "We found 12 studies."}, 0.5)["keep"] is False
    assert (
        filter_row({**base, "language": "en", "simple_text": "We found 12 studies."}, 0.5, "ge")["keep"]
        is True
    )
    fr = filter_row(
        {
            **base,
            "language": "fr",
            "simple_text": "Nous avons trouvé 12 études.",
            "pivot_ids": ["p"],
            "pivot_text": "We found 12 studies.",
        },
        0.6,
    )
    assert fr["overlap_r"] == pytest.approx(0.5) and fr["keep"] is False


def _jsonl(path, docs):
    path.write_text("".join(json.dumps(d.to_json()) + "\n" for d in docs), encoding="utf-8")
    return path


def test_several_gold_sources_are_concatenated(tmp_path):
    """`align.gold` as a list: every source's documents, in order (issue 29: retraining on one
    annotated document replaced the base gold); a re-annotated document replaces its base copy."""
    from alignment.gold import gold_sources, read_golds

    (tmp_path / "plaba.json").write_text(json.dumps(PLABA), encoding="utf-8")
    base = [DocPair("a", ["A1.", "A2."], ["a1."], frozenset({(0, 0)})), DocPair("b", ["B."], ["b."])]
    annotated = [DocPair("b", ["B."], ["b."], frozenset({(0, 0)})), DocPair("c", ["C."], ["c."])]
    sources = [str(_jsonl(tmp_path / "base.jsonl", base)), str(_jsonl(tmp_path / "ann.jsonl", annotated))]
    docs = read_golds([*sources, str(tmp_path / "plaba.json")])
    plaba = read_gold(tmp_path / "plaba.json")
    assert [d.doc_id for d in docs] == ["a", "b", "c"] + [d.doc_id for d in plaba]
    assert docs[1].pairs == {(0, 0)}  # the annotated copy of "b"
    assert read_golds(sources[0]) == read_gold(sources[0]) == base  # one path: as before
    assert gold_sources("x.jsonl") == ["x.jsonl"] and gold_sources(["x", "y"]) == ["x", "y"]


def test_params_align_gold_takes_a_list_or_a_string(tmp_path):
    from medsimp.config import load_params
    from medsimp.errors import MedsimpError

    params = tmp_path / "params.yaml"
    params.write_text("align:\n  gold: [base.jsonl, out/annotate/gold/gold.jsonl]\n", encoding="utf-8")
    assert load_params(params).align.gold == ["base.jsonl", "out/annotate/gold/gold.jsonl"]
    assert load_params(params, ["align.gold=one.jsonl"]).align.gold == "one.jsonl"
    with pytest.raises(MedsimpError):
        load_params(params, ["align.gold={a: 1}"])


def test_drop_cost_counts_what_the_filter_drops_and_what_the_aligner_held_of_it():
    from alignment.overlap import describe_cost, drop_cost

    cost = drop_cost([(True, 0.9), (False, 0.7), (False, 0.2), (False, None), (True, 0.5)])
    assert cost == {
        "pairs": 5,
        "dropped": 3,
        "dropped_aligner_sure": 1,
        "dropped_scored": 2,
        "median_score_dropped": pytest.approx(0.45),
        "median_score_kept": pytest.approx(0.7),
    }
    assert describe_cost(cost) == (
        "drops 3 of 5 pairs (60.0%); the aligner held 1 of them (50.0%) aligned (CRF probability "
        ">= 0.5); median CRF probability 0.450 of the dropped pairs, 0.700 of the kept"
    )
    assert describe_cost(drop_cost([(True, None)])) == "drops 0 of 1 pairs (0.0%)"
