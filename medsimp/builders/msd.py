"""MSD builder: professional and consumer MSD Manual sentences, labelled as in Cao et al. (2020).

Inputs (params `build.msd`): the MSD sentence table (`out/msd/sentences`, common
sentence table; `doc_id` is the topic) and the linked table (`out/linked/msd`). One
row per sentence with the MSD dataset's label (0 = expert/professional, 1 =
layman/consumer), its section, UMLS concepts and readability; splits are seeded
by topic so both versions of a topic share a split.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from medsimp.builders.common import (CONCEPT, READABILITY, BuiltDataset, load_links,
                                     read_parquet_dir, seeded_split, table_from_rows)

COLUMNS = ["sentence_id", "doc_id", "side", "language", "section", "sentence_index", "text"]
LABEL = {"complex": 0, "simple": 1}
SCHEMA = pa.schema([
    ("sentence_id", pa.string()), ("topic", pa.string()), ("audience", pa.string()),
    ("label", pa.int32()), ("language", pa.string()), ("section", pa.string()),
    ("sentence_index", pa.int32()), ("text", pa.string()), ("concepts", pa.list_(CONCEPT)),
    ("readability", READABILITY),
])
FEATURES = {
    "sentence_id": "`msd:<topic>:<side>:<language>:<index>`",
    "topic": "MSD Manual topic (the same in both versions)",
    "audience": "`professional` or `consumer`",
    "label": "0 = expert (professional version), 1 = layman (consumer version), as in MSD",
    "language": "ISO 639-1 language", "section": "section heading of the sentence",
    "sentence_index": "0-based sentence position in its version of the topic",
    "text": "the sentence", "concepts": "UMLS concepts; start/end index `text`",
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


def build(cfg: dict[str, Any]) -> BuiltDataset:
    """Build MSD from the params section `build.msd`."""
    table = read_parquet_dir(cfg["sentences"], COLUMNS).select(COLUMNS).to_pylist()
    links = load_links(cfg["linked"])
    split_cfg = cfg.get("split", {})
    seed = int(split_cfg.get("seed", 13))
    split_of = seeded_split((r["doc_id"] for r in table), float(split_cfg.get("validation", 0.1)),
                            float(split_cfg.get("test", 0.1)), seed)
    rows: dict[str, list[dict]] = {"train": [], "validation": [], "test": []}
    rejects: list[dict] = []
    missing = 0
    for r in sorted(table, key=lambda r: (r["doc_id"], r["side"], r["language"],
                                          r["sentence_index"], r["sentence_id"])):
        if r["side"] not in LABEL:
            rejects.append({"source": "msd", "locator": r["sentence_id"], "reason": "unknown_side",
                            "detail": str(r["side"])[:20]})
            continue
        concepts, readability = links.get(r["sentence_id"], ([], None))
        missing += r["sentence_id"] not in links
        rows[split_of[r["doc_id"]]].append({
            **r, "topic": r["doc_id"], "label": LABEL[r["side"]],
            "audience": "professional" if r["side"] == "complex" else "consumer",
            "concepts": concepts, "readability": readability})
    kept = sum(len(v) for v in rows.values())
    counts = {"read": len(table), "kept": kept, "filtered": 0, "rejected": len(rejects),
              "topics": len(split_of), "missing_links": missing,
              "expert": sum(1 for v in rows.values() for r in v if r["label"] == 0),
              "layman": sum(1 for v in rows.values() for r in v if r["label"] == 1)}
    return BuiltDataset(
        name="msd", title="MSD expertise style transfer (medsimp build)",
        description=(
            "Sentences from the professional and consumer versions of MSD Manual topics, "
            "labelled expert (0) or layman (1) as in the MSD dataset of Cao et al. (2020), with "
            "section headings (the PCIO grouping of candidate parallel sentences), UMLS concepts "
            "and readability."),
        citation=CITATION, license="other", access=ACCESS,
        configs={"sentences": {s: table_from_rows(v, SCHEMA) for s, v in rows.items()}},
        config_descriptions={"sentences": "professional and consumer sentences with labels"},
        feature_descriptions=FEATURES, counts=counts, default_config="sentences",
        rejects=rejects,
        notes=[f"Splits: seeded by topic (seed {seed}, validation "
               f"{split_cfg.get('validation', 0.1)}, test {split_cfg.get('test', 0.1)})."])
