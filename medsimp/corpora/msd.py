"""MSD builder: professional and consumer MSD Manual sentences, labelled as in Cao et al. (2020).

Inputs (params `build.msd`): the sentence table and candidate groups of `medsimp msd`
(`out/msd/sentences`, `out/msd/pairs`) and the linked table (`out/linked/msd`).
Config `sentences`: one row per sentence with the MSD dataset's label (0 =
expert/professional, 1 = layman/consumer), section, PCIO element, UMLS concepts and
readability. Config `groups`: the candidate parallel groups (both versions'
sentences sharing a PCIO element; a paired test document is one group). Splits are
by document, so both versions of a topic share a split; documents from MSD's paired
test file (`test_pair` groups) always go to test, the rest are seeded.
"""

from __future__ import annotations

import pyarrow as pa

from medsimp.corpora.common import (
    BuiltDataset,
    HubCard,
    load_links,
    read_parquet_dir,
    seeded_split,
    side_annotations,
    table_from_rows,
)
from medsimp.corpora.stats import SIDES, side_stats
from medsimp.params_schema import BuildMsd, Split
from medsimp.schemas import CONCEPT, READABILITY
from medsimp.stats import dead_letter

COLUMNS = ["sentence_id", "doc_id", "side", "language", "section", "sentence_index", "text"]
GROUP_COLUMNS = ["group_id", "doc_id", "pcio", "complex_ids", "simple_ids"]
PAIRED = "test_pair"
LABEL = {"complex": 0, "simple": 1}
SCHEMA = pa.schema(
    [
        ("sentence_id", pa.string()),
        ("doc_id", pa.string()),
        ("topic", pa.string()),
        ("audience", pa.string()),
        ("label", pa.int32()),
        ("language", pa.string()),
        ("section", pa.string()),
        ("pcio", pa.string()),
        ("sentence_index", pa.int32()),
        ("text", pa.string()),
        ("concepts", pa.list_(CONCEPT)),
        ("readability", READABILITY),
    ]
)
GROUP_SCHEMA = pa.schema(
    [
        ("group_id", pa.string()),
        ("doc_id", pa.string()),
        ("topic", pa.string()),
        ("pcio", pa.string()),
        ("complex_ids", pa.list_(pa.string())),
        ("simple_ids", pa.list_(pa.string())),
        ("complex_text", pa.string()),
        ("simple_text", pa.string()),
        ("complex_concepts", pa.list_(CONCEPT)),
        ("simple_concepts", pa.list_(CONCEPT)),
        ("complex_readability", pa.list_(READABILITY)),
        ("simple_readability", pa.list_(READABILITY)),
    ]
)
FEATURES = {
    "sentence_id": "`msd:<doc_id>:<side>:<language>:<index>`",
    "doc_id": "MSD document: title + ICD-9 code (`msd.pair_key`), else the topic slug, or the pair number of MSD's paired test file",
    "topic": "MSD Manual topic (the same in both versions)",
    "pcio": "PCIO element of the section (params `msd.pcio`; '' when unmapped, "
    "`test_pair` for a paired test document)",
    "group_id": "`<doc_id>:<pcio element>`",
    "complex_ids": "professional sentence ids of the group",
    "simple_ids": "consumer sentence ids of the group",
    "complex_text": "professional sentences of the group, joined by a space",
    "simple_text": "consumer sentences of the group, joined by a space",
    "complex_concepts": "UMLS concepts; start/end index `complex_text`",
    "simple_concepts": "UMLS concepts; start/end index `simple_text`",
    "complex_readability": "readability per professional sentence, aligned with `complex_ids`",
    "simple_readability": "readability per consumer sentence, aligned with `simple_ids`",
    "audience": "`professional` or `consumer`",
    "label": "0 = expert (professional version), 1 = layman (consumer version), as in MSD",
    "language": "ISO 639-1 language",
    "section": "section heading of the sentence",
    "sentence_index": "0-based sentence position in its version of the topic",
    "text": "the sentence",
    "concepts": "UMLS concepts; start/end index `text`",
    "readability": "readability of the sentence (null if not linked)",
}
CITATION = """@inproceedings{cao-etal-2020-expertise,
  title = {Expertise Style Transfer: A New Task Towards Better Communication between Experts
    and Laymen},
  author = {Cao, Yixin and Shui, Ruihao and Pan, Liangming and Kan, Min-Yen and Liu, Zhiyuan
    and Chua, Tat-Seng},
  booktitle = {Proceedings of the 58th Annual Meeting of the Association for Computational
    Linguistics},
  year = {2020}, pages = {1061--1071},
  url = {https://aclanthology.org/2020.acl-main.100}
}"""
ACCESS = """MSD Manual text is (c) Merck & Co., Inc.; Cao et al. released their MSD dataset for
research use only. Redistribute only what the MSD Manuals' terms allow. medsimp's additions
(labels, splits, concepts, readability) are Apache-2.0; UMLS-derived concept identifiers fall
under the UMLS licence of whoever ran the link stage."""


def _optional(table: pa.Table, name: str, default: list) -> list:
    return table.column(name).to_pylist() if name in table.column_names else default


def _split_of(docs: list[str], paired: set[str], split_cfg: Split) -> dict[str, str]:
    """Paired test documents -> test; the others seeded by ratios."""
    out = seeded_split(
        (d for d in docs if d not in paired),
        float(split_cfg.validation),
        float(split_cfg.test),
        split_cfg.seed,
    )
    out.update({d: "test" for d in paired})
    return out


def _group_rows(
    groups_dir: str, texts: dict[str, str], links: dict, rejects: list[dict]
) -> tuple[list[dict], int]:
    """Groups with their joined texts and annotations, and the number of groups read."""
    groups = read_parquet_dir(groups_dir, GROUP_COLUMNS)
    topics = _optional(groups, "topic", groups.column("doc_id").to_pylist())
    rows = []
    for group, topic in zip(groups.select(GROUP_COLUMNS).to_pylist(), topics):
        unknown = [s for s in [*group["complex_ids"], *group["simple_ids"]] if s not in texts]
        if unknown:
            rejects.append(dead_letter("msd", group["group_id"], "unknown_sentence_id", unknown[0]))
            continue
        cc, cr, _ = side_annotations(group["complex_ids"], texts, links)
        sc, sr, _ = side_annotations(group["simple_ids"], texts, links)
        rows.append(
            {
                **group,
                "topic": topic,
                "complex_text": " ".join(texts[i] for i in group["complex_ids"]),
                "simple_text": " ".join(texts[i] for i in group["simple_ids"]),
                "complex_concepts": cc,
                "simple_concepts": sc,
                "complex_readability": cr,
                "simple_readability": sr,
            }
        )
    return rows, groups.num_rows


HUB = HubCard(
    license_name="msd-manuals-terms-research-only",
    license_link="https://www.msdmanuals.com",
    task_categories=("text-generation", "text-classification"),
    tags=("medical", "expertise-style-transfer", "text-simplification", "msd-manual"),
    intended_use="""Research on expertise style transfer and simplification between the professional and
consumer MSD Manuals (Cao et al., 2020): training style classifiers and transfer models, and
measuring readability gaps. Research use only, as the MSD dataset's release allows.""",
    limitations="""Professional and consumer versions are written separately, not sentence-aligned: the
`groups` config pairs sentences only by topic and PCIO element, so they are comparable, not
parallel. Topics, audiences and writing conventions are those of one publisher, in English.""",
)


def table2_statistics(rows: list[dict], *, annotations: int) -> dict[str, float | int | None]:
    """Cao et al.'s Table 2 rows per style (`medsimp.corpora.stats`): `avg_readability_<expert|layman>`
    = the mean of the FleshKincaid, Gunning and Coleman rows (each the mean sentence score; None
    when one is missing), as Table 2's "Avg. Readability" (14.57 = (12.61 + 18.43 + 12.66) / 3);
    `annotations_<expert|layman>` = `annotations`, the number of parallel annotations ("#Annotation":
    675 per style in MSD Test, 0 in Train; one annotation may hold several sentences)."""
    out: dict[str, float | int | None] = {}
    for side, name in SIDES:
        stats = side_stats([r for r in rows if r["side"] == side])
        three = [stats[k] for k in ("fkgl", "gunning_fog", "coleman_liau")]
        out[f"avg_readability_{name}"] = None if None in three else round(sum(three) / 3, 4)
        out[f"annotations_{name}"] = annotations
    return out


def build(cfg: BuildMsd) -> BuiltDataset:
    """Build MSD from the params section `build.msd`."""
    table = read_parquet_dir(cfg.sentences, COLUMNS)
    doc_ids = table.column("doc_id").to_pylist()
    sentences = [
        {**r, "topic": t, "pcio": p}
        for r, t, p in zip(
            table.select(COLUMNS).to_pylist(),
            _optional(table, "topic", doc_ids),
            _optional(table, "pcio", [""] * table.num_rows),
        )
    ]
    texts = {r["sentence_id"]: r["text"] for r in sentences}
    links = load_links(cfg.linked)
    rejects: list[dict] = []
    groups, groups_read = _group_rows(cfg.groups, texts, links, rejects) if cfg.groups else ([], 0)
    paired = {g["doc_id"] for g in groups if g["pcio"] == PAIRED}
    split_cfg = cfg.split
    split_of = _split_of(sorted(set(doc_ids) | {g["doc_id"] for g in groups}), paired, split_cfg)
    rows: dict[str, list[dict]] = {"train": [], "validation": [], "test": []}
    missing = 0
    for r in sorted(
        sentences,
        key=lambda r: (r["doc_id"], r["side"], r["language"], r["sentence_index"], r["sentence_id"]),
    ):
        if r["side"] not in LABEL:
            rejects.append(dead_letter("msd", r["sentence_id"], "unknown_side", str(r["side"])[:20]))
            continue
        concepts, readability = links.get(r["sentence_id"], ([], None))
        missing += r["sentence_id"] not in links
        rows[split_of[r["doc_id"]]].append(
            {
                **r,
                "label": LABEL[r["side"]],
                "audience": "professional" if r["side"] == "complex" else "consumer",
                "concepts": concepts,
                "readability": readability,
            }
        )
    group_rows: dict[str, list[dict]] = {"train": [], "validation": [], "test": []}
    for g in sorted(groups, key=lambda g: (g["doc_id"], g["group_id"])):
        group_rows[split_of[g["doc_id"]]].append(g)
    kept = sum(len(v) for v in rows.values()) + len(groups)
    counts = {
        "read": len(sentences) + groups_read,
        "kept": kept,
        "filtered": 0,
        "rejected": len(rejects),
        "documents": len(split_of),
        "paired_test_documents": len(paired),
        "groups": len(groups),
        "missing_links": missing,
        "expert": sum(1 for v in rows.values() for r in v if r["label"] == 0),
        "layman": sum(1 for v in rows.values() for r in v if r["label"] == 1),
        **table2_statistics(
            [r for v in rows.values() for r in v], annotations=sum(g["pcio"] == PAIRED for g in groups)
        ),
    }
    configs = {"sentences": {s: table_from_rows(v, SCHEMA) for s, v in rows.items()}}
    descriptions = {"sentences": "professional and consumer sentences with labels"}
    if cfg.groups:
        configs["groups"] = {s: table_from_rows(v, GROUP_SCHEMA) for s, v in group_rows.items()}
        descriptions["groups"] = "candidate parallel groups: both versions' sentences per PCIO element"
    return BuiltDataset(
        name="msd",
        title="MSD expertise style transfer (medsimp build)",
        description=(
            "Sentences from the professional and consumer versions of MSD Manual topics, "
            "labelled expert (0) or layman (1) as in the MSD dataset of Cao et al. (2020), with "
            "section headings, PCIO elements, candidate parallel groups, UMLS concepts and "
            "readability."
        ),
        citation=CITATION,
        license="other",
        access=ACCESS,
        configs=configs,
        config_descriptions=descriptions,
        feature_descriptions=FEATURES,
        counts=counts,
        hub=HUB,
        default_config="sentences",
        rejects=rejects,
        notes=[
            f"Splits: by document; paired test documents -> test, the rest seeded (seed "
            f"{split_cfg.seed}, validation {split_cfg.validation}, "
            f"test {split_cfg.test})."
        ],
    )
