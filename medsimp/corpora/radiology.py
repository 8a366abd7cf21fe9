"""Radiology builder: de-duplicated FINDINGS / IMPRESSION finding sentences of radiology notes.

Input (params `build.radiology.sentences`): `out/radiology/sentences` from `medsimp radiology`
(docs/selfcorrect.md): the common sentence table plus `exam`, `body_parts`, `finding_words`,
`negated`, `n_duplicates` and `duplicate_doc_ids`. Config `findings`: one row per distinct
sentence with that diversity metadata, the pool Yang, Cherian & Vucetic draw their evaluation
sentences from. Splits are seeded by note (the note a sentence was kept from); with n < 3
notes only the first n of train, test, validation exist. Rows lacking a note id or text are
dead-lettered. The notes are MIMIC-III / MIMIC-IV-Note: PhysioNet terms, `mimic_derived: true`.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from medsimp.corpora.common import (
    MIMIC_III_CITATION,
    PHYSIONET_LICENSE,
    PHYSIONET_LICENSE_LINK,
    BuiltDataset,
    HubCard,
    read_parquet_dir,
    split_units,
    table_from_rows,
)
from medsimp.params_schema import BuildRadiology
from medsimp.schemas import RADIOLOGY_SENTENCES
from medsimp.stats import dead_letter
from pipelines.text.radiology import doc_order

COLUMNS = [
    "sentence_id",
    "doc_id",
    "language",
    "exam",
    "section",
    "sentence_index",
    "char_start",
    "char_end",
    "text",
    "body_parts",
    "finding_words",
    "negated",
    "n_duplicates",
    "duplicate_doc_ids",
    "locator",
]
SCHEMA = pa.schema([RADIOLOGY_SENTENCES.field(name) for name in COLUMNS])
REQUIRED = ("sentence_id", "doc_id", "text")
FEATURES = {
    "sentence_id": "`radiology:<note id>:complex:en:<sentence index>`",
    "doc_id": "note id of the first note the sentence occurs in (MIMIC-III ROW_ID or MIMIC-IV-Note note_id)",
    "language": "ISO 639-1 language",
    "exam": "the note's exam description (MIMIC-III DESCRIPTION; note type for MIMIC-IV)",
    "section": "`FINDINGS` or `IMPRESSION`",
    "sentence_index": "0-based sentence position in the note (across sections)",
    "char_start": "start offset in the section text",
    "char_end": "end offset",
    "text": "the finding sentence",
    "body_parts": "body parts named (lexicon `medsimp/resources/radiology/body_parts.tsv`)",
    "finding_words": "finding words named, singular forms (`medsimp/resources/radiology/finding_words.txt`)",
    "negated": "the sentence contains no, not, without or negative for",
    "n_duplicates": "further copies of the sentence (case, spacing, final period ignored) "
    "merged into this row",
    "duplicate_doc_ids": "notes the merged copies came from",
    "locator": "`<input file>@<byte offset>` of the note",
}
CITATION = """@inproceedings{yang-etal-2024-two,
  title = {Two-Pronged Human Evaluation of {ChatGPT} Self-Correction in Radiology Report
    Simplification},
  author = {Yang, Ziyu and Cherian, Santhosh and Vucetic, Slobodan},
  booktitle = {Findings of the Association for Computational Linguistics: ACL 2024},
  year = {2024}, pages = {4701--4714},
  doi = {10.18653/v1/2024.findings-acl.279},
  url = {https://aclanthology.org/2024.findings-acl.279}
}
@misc{johnson-etal-2023-mimic-iv-note,
  title = {MIMIC-IV-Note: Deidentified free-text clinical notes (version 2.2)},
  author = {Johnson, Alistair and Pollard, Tom and Horng, Steven and Celi, Leo Anthony
    and Mark, Roger},
  publisher = {PhysioNet}, year = {2023}, doi = {10.13026/1n74-ne17}
}"""
CITATION += "\n" + MIMIC_III_CITATION
ACCESS = """**MIMIC-derived data: PhysioNet Credentialed Health Data Use Agreement.**
The sentences derive from radiology reports of MIMIC-III (NOTEEVENTS) and/or MIMIC-IV-Note
(radiology), distributed by PhysioNet under the PhysioNet Credentialed Health Data License 1.5.0
and its Data Use Agreement. Only credentialed PhysioNet users who signed the DUA of the source
database may access this data. Do not share it with anyone who has not, do not publish it (no
public hub repositories, no pasting into online services such as hosted LLM APIs that retain
data), and make no attempt to re-identify any person. `medsimp publish` refuses this builder
(its Parquet lineage is MIMIC) whatever the target or flags: share it through PhysioNet. The
card's YAML carries `medsimp.mimic_derived: true` for tools to check."""


def _missing(row: dict[str, Any]) -> list[str]:
    return [name for name in REQUIRED if not row[name]]


HUB = HubCard(
    license_name=PHYSIONET_LICENSE,
    license_link=PHYSIONET_LICENSE_LINK,
    tags=("medical", "clinical", "radiology", "text-simplification", "mimic"),
    intended_use="""Source sentences for simplifying radiology findings (Yang et al.'s self-correction study):
generating plain-language variants and collecting human judgements, by credentialed PhysioNet
users under the source database's DUA, with locally run models or endpoints the DUA allows.""",
    limitations="""Only FINDINGS and IMPRESSION sentences, de-duplicated across notes (common normal findings
appear once, with their duplicate count), so frequencies differ from the reports. No references:
it is not a parallel corpus. Negation is flagged by a rule (`negated`), which misses some cases.""",
)


def build(cfg: BuildRadiology) -> BuiltDataset:
    """Build the radiology findings dataset from the params section `build.radiology`."""
    sentences = read_parquet_dir(cfg.sentences, COLUMNS).select(COLUMNS).to_pylist()
    rejects: list[dict] = []
    valid = []
    for row in sentences:
        missing = _missing(row)
        if missing:  # field names only: MIMIC text never goes into a dead letter
            rejects.append(dead_letter("radiology", row["locator"] or "", "missing_field", ",".join(missing)))
        else:
            valid.append(row)
    split_cfg = cfg.split
    notes = {r["doc_id"] for r in valid}
    split_of = split_units(notes, split_cfg, "notes")
    rows: dict[str, list[dict]] = {"train": [], "validation": [], "test": []}
    for row in sorted(valid, key=lambda r: (doc_order(r["doc_id"]), r["sentence_index"], r["sentence_id"])):
        rows[split_of[row["doc_id"]]].append(row)
    counts = {
        "read": len(sentences),
        "kept": len(valid),
        "filtered": 0,
        "rejected": len(rejects),
        "notes": len(notes),
        "duplicates_merged": sum(r["n_duplicates"] or 0 for r in valid),
        "negated": sum(1 for r in valid if r["negated"]),
    }
    return BuiltDataset(
        name="radiology",
        title="Radiology findings sentences (medsimp build)",
        description=(
            "Distinct finding sentences from the FINDINGS and IMPRESSION sections of MIMIC "
            "radiology reports, the kind of sentences Yang, Cherian & Vucetic simplify with "
            "ChatGPT self-correction, with diversity metadata (exam, body parts, finding words, "
            "negation) and how often each sentence recurs across reports."
        ),
        citation=CITATION,
        license="other",
        access=ACCESS,
        configs={"findings": {s: table_from_rows(r, SCHEMA) for s, r in rows.items()}},
        config_descriptions={"findings": "de-duplicated finding sentences with diversity metadata"},
        feature_descriptions=FEATURES,
        counts=counts,
        hub=HUB,
        default_config="findings",
        mimic_derived=True,
        rejects=rejects,
        notes=[
            f"Splits: seeded by note (seed {split_cfg.seed}, validation "
            f"{split_cfg.validation}, test {split_cfg.test}); a "
            "sentence goes with the note it was kept from. With n >= 3 notes every split "
            "has at least one note; with n < 3 notes only the first n of train, test, "
            "validation exist (empty splits are left out of the folder).",
            "Duplicates were merged upstream (`medsimp radiology`), so no sentence text "
            "occurs in two splits.",
        ],
    )
