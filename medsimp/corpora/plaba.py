"""PLABA builder: gold sentence-aligned abstract -> plain-language adaptation pairs.

Inputs (params `build.plaba`): the pairs `medsimp plaba` emits (`out/plaba/pairs`, see
`pipelines.sources.plaba.gold_pairs`), its sentence table and the linked table
(`out/linked/plaba`). Config `pairs` holds every sentence pair including deletions
(`alignment` 1-0); config `abstracts` one row per abstract (the whole abstract as the
source, each adaptation joined as a reference: the paper's benchmark unit); splits are by
question, 70/15/15 as in Attal et al. (2023), so all
abstracts of a question (and all adaptations of an abstract) land in one split.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from medsimp.corpora.common import (
    BuildError,
    BuiltDataset,
    HubCard,
    cover_splits,
    exact_split,
    load_links,
    load_texts,
    read_parquet_dir,
    side_annotations,
    split_units,
    table_from_rows,
)
from medsimp.params_schema import BuildPlaba, PlabaSplit
from medsimp.schemas import CONCEPT, READABILITY
from medsimp.stats import dead_letter

PAIR_COLUMNS = [
    "pair_id",
    "question_id",
    "pmid",
    "adaptation",
    "sentence_number",
    "complex_id",
    "complex_text",
    "simple_ids",
    "simple_text",
    "alignment",
]
SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("question_id", pa.string()),
        ("pmid", pa.string()),
        ("adaptation", pa.int32()),
        ("sentence_number", pa.int32()),
        ("complex_id", pa.string()),
        ("complex_text", pa.string()),
        ("simple_ids", pa.list_(pa.string())),
        ("simple_text", pa.string()),
        ("alignment", pa.string()),
        ("complex_concepts", pa.list_(CONCEPT)),
        ("simple_concepts", pa.list_(CONCEPT)),
        ("complex_readability", READABILITY),
        ("simple_readability", pa.list_(READABILITY)),
    ]
)
FEATURES = {
    "pair_id": "`<question_id>:<pmid>[:a<k>]:<sentence number>`",
    "question_id": "PLABA question id",
    "pmid": "PubMed id of the abstract",
    "adaptation": "which expert adaptation (1, 2, ...)",
    "sentence_number": "number of the abstract sentence in PLABA",
    "complex_id": "sentence id of the abstract sentence",
    "complex_text": "the abstract sentence",
    "simple_ids": "sentence ids of the adaptation (empty when the sentence was deleted)",
    "simple_text": "the adaptation sentence(s), joined by a space ('' for a deletion)",
    "alignment": "`1-0` (deleted), `1-1` or `1-N` (split)",
    "complex_concepts": "UMLS concepts of the abstract sentence",
    "simple_concepts": "UMLS concepts of the adaptation; start/end index `simple_text`",
    "complex_readability": "readability of the abstract sentence (null if not linked)",
    "simple_readability": "readability of each adaptation sentence, aligned with `simple_ids`",
}
ABSTRACT_SCHEMA = pa.schema(
    [
        ("abstract_id", pa.string()),
        ("question_id", pa.string()),
        ("pmid", pa.string()),
        ("source", pa.string()),
        ("references", pa.list_(pa.string())),
        ("adaptations", pa.list_(pa.int32())),
        ("n_sentences", pa.int32()),
    ]
)
ABSTRACT_FEATURES = {
    "abstract_id": "`<question_id>:<pmid>`",
    "source": "the whole PubMed abstract: its sentences in PLABA's numbering, joined by a space",
    "references": "one entry per expert adaptation: its sentences in the abstract's numbering "
    "(deleted sentences omitted), joined by a space",
    "adaptations": "which adaptation (1, 2, ...) each reference is",
    "n_sentences": "number of abstract sentences",
}
CITATION = """@article{attal-etal-2023-plaba,
  title = {A dataset for plain language adaptation of biomedical abstracts},
  author = {Attal, Kush and Ondov, Brian and Demner-Fushman, Dina},
  journal = {Scientific Data}, volume = {10}, number = {1}, pages = {8}, year = {2023},
  doi = {10.1038/s41597-022-01920-3}
}"""
ACCESS = """The expert adaptations come from PLABA (U.S. National Library of Medicine); follow the
terms stated in the PLABA repository. The abstracts are PubMed abstracts whose copyright stays with
their publishers. medsimp's additions (splits, concepts, readability) are Apache-2.0; UMLS-derived
concept identifiers fall under the UMLS licence of whoever ran the link stage."""


def plaba_split(questions: set[str], split_cfg: PlabaSplit) -> dict[str, str]:
    """question id -> split (params `build.plaba.split`; its defaults are Attal et al. (2023)'s
    70/15/15 train/validation/test, grouped by question). `method: exact` (default) takes
    exactly round(n * ratio) questions per evaluation split; `hash` is the project's
    refresh-stable split (`seeded_split`: each question by its own hash, ratios in expectation)."""
    method = split_cfg.method
    if method == "hash":
        return split_units(questions, split_cfg, "questions")
    if method != "exact":
        raise BuildError(f"build.plaba.split.method must be exact or hash, got {method!r}")
    seed = split_cfg.seed
    return cover_splits(
        exact_split(questions, float(split_cfg.validation), float(split_cfg.test), seed),
        {"questions": questions},
        seed,
    )


HUB = HubCard(
    license_name="plaba-terms",
    license_link="https://github.com/attal-kush/PLABA",
    tags=("medical", "biomedical", "text-simplification", "plain-language", "pubmed"),
    intended_use="""Training and evaluating plain-language adaptation of biomedical abstracts at the sentence
level (Attal et al., 2023), with splits grouped by consumer question as in the paper.""",
    limitations="""Abstracts were chosen to answer consumer health questions, so topics follow those questions.
Adaptations are by a small group of experts; sentences they deleted have no simple side
(`deletions`), and split or merged sentences make 1-N pairs. Only English.""",
)


def abstract_rows(pairs: list[dict]) -> list[dict]:
    """Abstract-level rows (Attal et al. 2023, "Experimental setup": each PubMed abstract is
    the source document, the expert adaptations are its references) from sentence pairs of
    one split. Sentences are ordered by PLABA's sentence number; a deleted sentence adds
    nothing to an adaptation; an adaptation with no sentence left is not a reference."""
    by_abstract: dict[tuple[str, str], dict[str, Any]] = {}
    for p in pairs:
        a = by_abstract.setdefault((p["question_id"], p["pmid"]), {"source": {}, "refs": {}})
        a["source"].setdefault(p["sentence_number"], p["complex_text"])
        if p["simple_text"]:
            a["refs"].setdefault(p["adaptation"], {})[p["sentence_number"]] = p["simple_text"]
    rows = []
    for (question, pmid), a in sorted(by_abstract.items()):
        refs = {k: v for k, v in sorted(a["refs"].items()) if v}
        rows.append(
            {
                "abstract_id": f"{question}:{pmid}",
                "question_id": question,
                "pmid": pmid,
                "source": " ".join(a["source"][n] for n in sorted(a["source"])),
                "references": [" ".join(r[n] for n in sorted(r)) for r in refs.values()],
                "adaptations": list(refs),
                "n_sentences": len(a["source"]),
            }
        )
    return rows


def build(cfg: BuildPlaba) -> BuiltDataset:
    """Build PLABA from the params section `build.plaba`."""
    pairs = read_parquet_dir(cfg.pairs, PAIR_COLUMNS).to_pylist()
    texts = load_texts(cfg.sentences)
    links = load_links(cfg.linked)
    split_cfg = cfg.split
    questions = {p["question_id"] for p in pairs}
    split_of = plaba_split(questions, split_cfg)
    rows: dict[str, list[dict]] = {"train": [], "validation": [], "test": []}
    rejects: list[dict] = []
    missing = 0
    for pair in sorted(
        pairs,
        key=lambda p: (p["question_id"], p["pmid"], p["adaptation"], p["sentence_number"], p["pair_id"]),
    ):
        unknown = [s for s in [pair["complex_id"], *pair["simple_ids"]] if s not in texts]
        if unknown:
            rejects.append(dead_letter("plaba", pair["pair_id"], "unknown_sentence_id", unknown[0]))
            continue
        cc, cr, m1 = side_annotations([pair["complex_id"]], texts, links)
        sc, sr, m2 = side_annotations(pair["simple_ids"], texts, links)
        missing += m1 + m2
        rows[split_of[pair["question_id"]]].append(
            {
                **pair,
                "complex_concepts": cc,
                "simple_concepts": sc,
                "complex_readability": cr[0],
                "simple_readability": sr,
            }
        )
    kept = sum(len(r) for r in rows.values())
    counts = {
        "read": len(pairs),
        "kept": kept,
        "filtered": 0,
        "rejected": len(rejects),
        "questions": len(split_of),
        "abstracts": len({(p["question_id"], p["pmid"]) for r in rows.values() for p in r}),
        "missing_links": missing,
        "deletions": sum(1 for r in rows.values() for p in r if p["alignment"] == "1-0"),
    }
    return BuiltDataset(
        name="plaba",
        title="PLABA (medsimp build)",
        description=(
            "Plain Language Adaptation of Biomedical Abstracts (Attal et al., 2023): PubMed "
            "abstract sentences with their expert plain-language adaptations, aligned sentence "
            "by sentence (deletions and splits kept), with UMLS concepts and readability."
        ),
        citation=CITATION,
        license="other",
        access=ACCESS,
        configs={
            "pairs": {s: table_from_rows(r, SCHEMA) for s, r in rows.items()},
            "abstracts": {s: table_from_rows(abstract_rows(r), ABSTRACT_SCHEMA) for s, r in rows.items()},
        },
        config_descriptions={
            "pairs": "gold abstract-sentence -> adaptation pairs",
            "abstracts": "whole abstracts (source) with their expert adaptations joined "
            "(references): the paper's benchmark unit",
        },
        feature_descriptions={**FEATURES, **ABSTRACT_FEATURES},
        counts=counts,
        hub=HUB,
        default_config="pairs",
        rejects=rejects,
        notes=[
            f"Splits: by question, {split_cfg.method} (seed {split_cfg.seed}, validation "
            f"{split_cfg.validation}, test {split_cfg.test}; Attal et al. 2023: "
            "70/15/15 by question); with n < 3 questions only the first n of train, test, "
            "validation."
        ],
    )
