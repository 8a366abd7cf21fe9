"""docs/fidelity.md rows added by the fidelity audit's gap list: what the user gets from
params.yaml (loaded and typed, as `dvc repro` and every command read it) and the behaviour
behind it, on hand-made inputs. One test per row; each can fail."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from medsimp.config import load_params

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def params():
    return load_params(ROOT / "params.yaml")


# ---------------------------------------------------------------- MedLane (Luo et al. 2022)


def test_medlane_source_sections_are_the_papers_three(params):
    """§3.1: "(1) History of present illness, (2) Brief summary of hospital course, and (3) Brief
    hospital course"; MIMIC-III's plain "HOSPITAL COURSE:" is not one of them."""
    from pipelines.text.sections import extractor_from_params

    assert params.notes.categories == ["Discharge summary"]
    assert list(params.notes.headers) == [
        "History of Present Illness",
        "Brief Summary of Hospital Course",
        "Brief Hospital Course",
    ]
    note = (
        "HISTORY OF PRESENT ILLNESS:  70 yo M with CHF.\n"
        "Past Medical History:\nHTN.\n"
        "Brief Summary of Hospital Course:\nDiuresed.\n"
        "HOSPITAL COURSE:\nStable.\n"
        "Brief Hospital Course:\nImproved.\n"
        "Discharge Medications:\nLasix.\n"
    )
    got = [(s.name, s.text) for s in extractor_from_params(params.notes).extract(note)]
    assert got == [
        ("History of Present Illness", "70 yo M with CHF."),
        ("Brief Summary of Hospital Course", "Diuresed."),
        ("Brief Hospital Course", "Improved."),
    ]


def test_medlane_dictionaries_are_the_packaged_files_merged_in_order(params):
    """§5.1 Dictionary Construction names Dorland (2016) and five online sources; the project
    ships its own two files, merged in order (keys lowercased, expansions deduplicated)."""
    from training.lexicon import load_dictionary

    assert params.train.dictionaries == [
        "medsimp/resources/abbreviations.json",
        "medsimp/resources/medlane_dictionary.json",
    ]
    assert params.notes.abbreviations == "medsimp/resources/abbreviations.json"
    merged = load_dictionary([ROOT / p for p in params.train.dictionaries])
    # "AFib"/"Afib"/"afib" of abbreviations.json first, then medlane_dictionary.json's lay sense
    assert merged["afib"] == ["atrial fibrillation", "abnormal heart rhythm"]
    assert merged["ct"] == ["computed tomography", "ct scan", "chest tube"]
    assert max(len(v) for v in merged.values()) <= params.train.max_options == 8


def test_medlane_batch_size_the_user_gets(params):
    """The paper gives a batch size (30) only for its Seq2Seq baselines; DECLARE/BERT-MT: 8."""
    assert params.train.batch_size == 8


def test_medlane_meteor_is_the_1_5_jar(params):
    """The paper cites Lavie and Agarwal (2007); the project runs METEOR 1.5 through
    pycocoevalcap's jar, in both modes."""
    import pycocoevalcap.meteor.meteor as coco_meteor

    from medsimp.metrics import metrics
    from medsimp.metrics.meteor import METEOR

    assert params.evaluate.meteor is True
    assert METEOR.label == "meteor-1.5-jar" and METEOR.dist == "pycocoevalcap"
    assert coco_meteor.METEOR_JAR == "meteor-1.5.jar"
    assert (Path(coco_meteor.__file__).parent / coco_meteor.METEOR_JAR).is_file()
    assert metrics()["meteor"].medlane_label == "meteor-1.5-jar"  # part of MedLane compat mode


def test_medlane_length_buckets_are_five_source_length_groups(params):
    """Figure 4 (App. D): "we divide the source sentences into five groups with different
    length"; the edges are in the figure, not the text."""
    from medsimp.evaluation.scorer import BUCKET_METRICS
    from medsimp.metrics.scoring import EvalItem, length_buckets

    edges = params.evaluate.length_buckets
    assert edges == [0, 10, 15, 20, 30]
    lengths = (9, 10, 14, 15, 19, 20, 29, 30, 64)
    items = [EvalItem(" ".join(["w"] * n), ["x"]) for n in lengths]
    labels = length_buckets(items, edges)
    assert labels == ["0-9", "10-14", "10-14", "15-19", "15-19", "20-29", "20-29", "30+", "30+"]
    assert len(set(labels)) == 5
    # source tokens are NLTK tokens: the final "." counts
    assert length_buckets([EvalItem(" ".join(["w"] * 9) + ".", ["x"])], edges) == ["10-14"]
    assert BUCKET_METRICS == ("medlane_bleu", "hit", "cwr", "ascore")


# ---------------------------------------------------------------- radiology (Yang et al. 2024)


def test_radiology_candidates_are_every_kept_findings_sentence(params):
    """§5.1: a radiologist read 100 random reports and chose 40 sentences by hand. The project
    keeps every FINDINGS / IMPRESSION sentence that passes its filters; `simplify.limit: 0`
    simplifies them all; no sample of 40 is drawn."""
    from pipelines.sources.noteevents import Note
    from pipelines.text.radiology import RadiologyExtractor

    assert params.radiology.sections == ["findings", "impression"]
    assert (params.radiology.min_tokens, params.radiology.max_tokens) == (2, 60)
    assert params.simplify.limit == 0
    assert params.humaneval.input == "out/simplify/variants.csv"
    text = (
        "FINDINGS:\nThe liver is enlarged with multiple hypodense lesions.  Unchanged.  "
        "Single portable view of the abdomen.\n\nIMPRESSION:\nHepatomegaly with several liver lesions.\n"
    )
    note = Note("9", 1, None, "Radiology", "CT ABDOMEN", "2180-01-01", text, "radiology.csv@9")
    rows, counts = RadiologyExtractor(params.radiology).rows(note)
    assert [(r["section"], r["text"]) for r in rows] == [
        ("FINDINGS", "The liver is enlarged with multiple hypodense lesions."),
        ("IMPRESSION", "Hepatomegaly with several liver lesions."),
    ]
    assert dict(counts) == {"sentences": 4, "filtered_too_short": 1, "filtered_no_finding": 1}


def test_radiology_latin_square_with_the_papers_eight_laypeople(params):
    """§5.4: "we selected one of the four simplified sentences using the Latin square design"
    (the square itself is not given). The project's: rater r sees item i with system (i + r) mod k."""
    from medsimp.humaneval.design import latin_square

    systems, n = params.humaneval.systems, params.humaneval.n_laypeople
    assert systems == ["plain", "plain_sc", "cot", "cot_sc"] and n == 8
    items = [f"s{i:02d}" for i in range(40)]
    square = latin_square(items, systems, n)
    assert sorted(square) == [f"L{r:02d}" for r in range(1, 9)]
    for i, item in enumerate(items):
        seen = Counter(square[rater][item] for rater in square)
        assert seen == {s: 2 for s in systems}, item  # each version twice per sentence
        assert square["L01"][item] == systems[i % 4] and square["L02"][item] == systems[(i + 1) % 4]
    for rater in square:
        assert Counter(square[rater].values()) == {s: 10 for s in systems}, rater


# ---------------------------------------------------------------- MultiCochrane (Joseph et al. 2023)


def test_multicochrane_sari_the_user_gets(params):
    """The paper reports SARI (Xu et al. 2016 cited) without naming an implementation. Default:
    every metric (`evaluate.select: null`), so EASSE's corpus SARI `sari` and both variants;
    SARI across languages (en sources, es/fr/fa outputs) is refused unless asked for."""
    from medsimp import metrics

    assert params.evaluate.select is None and params.evaluate.allow_cross_lingual is False
    chosen = metrics.selection(params.evaluate.select, params.evaluate.lang)
    assert {"sari", "sari_xu2016", "sari_sentmean"} <= chosen
    registry = metrics.metrics()
    assert registry["sari"].label == "easse-0.2.4-corpus-sari+del-f1"
    assert registry["sari"].scale == "0-100" and registry["sari"].same_language is True


def test_multicochrane_validation_split_the_user_gets(params):
    """§5.1's split table: validation 5 (83) en, 5 (80) es, 4 (65) fr, 3 (56) fa reviews (pairs).
    params.yaml: 5 MC-CLEAN validation reviews once `mc_human` is given; unset, as shipped,
    validation is the seeded 10% of reviews (the card says NOT MC-CLEAN)."""
    mc = params.build.multicochrane
    assert mc.mc_clean_validation == 5 and mc.mc_clean_test == 22
    assert mc.mc_human is None
    assert (mc.split.seed, mc.split.validation, mc.split.test) == (13, 0.1, 0.1)


# ---------------------------------------------------------------- Cao et al. 2020 (MSD)


def test_cao_sari_is_cocoxus_sentence_sari(params):
    """§4.8 and Table 5: SARI with "the Python package" of footnote 7 (cocoxu/simplification,
    `SARI.py`: sentence-level, deletion precision), not EASSE's corpus SARI. The user's default
    selection (`evaluate.select: null`) computes it as `sari_cocoxu`; its values equal
    `SARI.py`'s own example (tests/test_metrics.py::test_sari_cocoxu_is_xus_released_sari_py_issue_54)."""
    from medsimp import metrics
    from medsimp.metrics import Inputs

    assert params.evaluate.select is None
    assert "sari_cocoxu" in metrics.selection(params.evaluate.select, params.evaluate.lang)
    cocoxu = metrics.metrics()["sari_cocoxu"]
    assert cocoxu.label.startswith("cocoxu-simplification-SARI.py-sentence-mean")
    # a sentence-level mean, not corpus statistics: two sentences score the mean of each alone
    data = Inputs(["a b c d", "x y"], [["a b c"], ["x z"]], ["a b c", "x y z"])
    alone = [cocoxu.corpus(data.subset([i]))["sari_cocoxu"] for i in (0, 1)]
    assert cocoxu.corpus(data)["sari_cocoxu"] == pytest.approx(sum(alone) / 2)
    assert metrics.metrics()["sari"].corpus(data)["sari"] != pytest.approx(sum(alone) / 2)


def test_cao_table3_bleu_is_the_copy_baselines_bleu(params):
    """Table 3: BLEU (4-gram) between the two sentences of a parallel pair. The project's
    `copy` system outputs the source, so its `bleu` (sacrebleu, 0-100, Table 3's scale) is that
    BLEU for the pairs evaluated; the ED column is `evaluate.masked_edit_pair: gold`."""
    import sacrebleu

    from medsimp.metrics import ScoringOptions
    from medsimp.metrics.scoring import EvalItem, score
    from training.baselines import copy_source

    assert "copy" in params.evaluate.models and params.evaluate.masked_edit_pair == "gold"
    expert = ["Dyspnea is the most common symptom of heart failure .", "Patients with CAD need aspirin ."]
    layman = [
        "Shortness of breath is the most common symptom of heart failure .",
        "People with heart artery disease need aspirin .",
    ]
    hyps = copy_source([s.split() for s in expert])
    assert hyps == expert
    items = [EvalItem(s, [r]) for s, r in zip(expert, layman, strict=True)]
    got = score("default", hyps, items, set(), ["bleu"], ScoringOptions(meteor=False))["bleu"]
    assert got == pytest.approx(sacrebleu.corpus_bleu(expert, [layman]).score)
    assert 0 < got < 100


def test_cao_pcio_elements_group_both_versions(params):
    """§3.1 Step 1: sections matched by "subsection titles, which denote medical PCIO elements",
    e.g. professional Atherosclerosis.Symptoms with consumer Atherosclerosis.Signs."""
    from pipelines.sources.msd import assemble, parse_line, pcio_lookup, pcio_of
    from pipelines.sources.records import Line

    table = params.msd.pcio
    assert sorted(table) == ["cause", "diagnosis", "prevention", "prognosis", "symptoms", "treatment"]
    lookup = pcio_lookup(table)
    assert pcio_of("Symptoms", lookup) == pcio_of("Signs", lookup) == "symptoms"
    assert pcio_of("Evaluation", lookup) == "diagnosis"  # no element of its own (see the row)
    assert pcio_of("History", lookup) == ""
    records = [
        parse_line(
            Line(json.dumps({"topic": "Atherosclerosis", "audience": aud, "sections": secs}), i, i, f"m:{i}"),
            "m",
            False,
        )
        for i, (aud, secs) in enumerate(
            [
                (
                    "professional",
                    [
                        {
                            "heading": "Symptoms",
                            "text": "Atherosclerosis is asymptomatic until flow is limited.",
                        },
                        {"heading": "Treatment", "text": "Statins are given."},
                    ],
                ),
                ("consumer", [{"heading": "Signs", "text": "Most people have no symptoms at first."}]),
            ],
            start=1,
        )
    ]
    _, groups, _, _ = assemble("atherosclerosis", records, lookup, splitter=params.msd.splitter)
    assert [(g["group_id"], g["n_complex"], g["n_simple"]) for g in groups] == [
        ("atherosclerosis:symptoms", 1, 1)
    ]
