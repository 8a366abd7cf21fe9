"""MedLane builder: annotated clinical sentences (MedLane format) and MIMIC candidate sentences.

Config `annotated` reads a folder of MedLane-format files (params `build.medlane.input`):
`train.txt` plus either `validation.txt` and `test.txt`, or a single `test.txt`
evaluation file that is split as in the paper (the first `validation_size` records,
1015 of 2031, are validation, the rest test). MedLane's validation and test records are both
drawn from its evaluation pool (annotated with rephrased and simplified references, unlike
train), so validation is never carved from train: an evaluation file with no more records
than `validation_size` (e.g. the 200-record public sample) is split in the paper's
proportion instead (1015/2031 of it to validation, the rest to test), with a warning and a
note on the card. Config `mimic-candidates` holds the
sentences the notes job selected (`keep` true) for annotation. Both derive from
MIMIC-III and carry the PhysioNet terms and `mimic_derived: true`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from medsimp.corpora.common import (
    MIMIC_III_CITATION,
    PHYSIONET_LICENSE,
    PHYSIONET_LICENSE_LINK,
    BuildError,
    BuiltDataset,
    HubCard,
    read_parquet_dir,
    table_from_rows,
)
from medsimp.params_schema import BuildMedlane
from pipelines.sources.medlane import read_medlane_eval, read_medlane_train, split_eval

log = logging.getLogger(__name__)
PAPER_EVAL_SPLIT = (1015, 2031)  # validation records / evaluation records (Luo et al., 2022, §4)
TERM = pa.struct([("abbreviation", pa.string()), ("expansion", pa.string()), ("reference_index", pa.int32())])
ANNOTATED = pa.schema(
    [
        ("record_id", pa.string()),
        ("line", pa.int32()),
        ("source", pa.string()),
        ("target", pa.string()),
        ("target_second_person", pa.string()),
        ("references", pa.list_(pa.string())),
        ("reference_labels", pa.list_(pa.int32())),
        ("raw_references", pa.list_(pa.string())),
        ("terms", pa.list_(TERM)),
    ]
)
CANDIDATE_COLUMNS = ["sentence_id", "doc_id", "section", "sentence_index", "char_start", "char_end", "text"]
SELECTION_FIELDS = [
    ("category", pa.string()),
    ("n", pa.int32()),
    ("abb", pa.int32()),
    ("unc", pa.int32()),
    ("ratio", pa.float64()),
]
CANDIDATES = pa.schema(
    [
        ("sentence_id", pa.string()),
        ("doc_id", pa.string()),
        ("section", pa.string()),
        ("sentence_index", pa.int32()),
        ("char_start", pa.int32()),
        ("char_end", pa.int32()),
        ("text", pa.string()),
        *SELECTION_FIELDS,
    ]
)

FEATURES = {
    "record_id": "`<split>:<n>`, n the 0-based record number in its file",
    "line": "1-based line of the record's source sentence in its file",
    "source": "the clinical sentence",
    "target": "expert simplification (train only; null in validation/test)",
    "target_second_person": "the simplification addressed to the patient (train only)",
    "references": "reference simplifications (validation/test) with each `abbr[full form]` "
    "replaced by its full form, as MedLane's scorer reads them",
    "reference_labels": "the 1-4 prefix each reference had in the file",
    "raw_references": "the references as written, annotations inline",
    "terms": "annotated terms: abbreviation, expansion and the 0-based index of the reference they occur in",
    "sentence_id": "`notes:<note id>:complex:en:<sentence index>`",
    "doc_id": "MIMIC note id (ROW_ID)",
    "section": "note section the sentence came from",
    "sentence_index": "0-based sentence position in the note",
    "char_start": "start offset in the section text",
    "char_end": "end offset",
    "text": "the candidate sentence (to be annotated)",
    "category": "MIMIC note category",
    "n": "Algorithm 1: word tokens",
    "abb": "Algorithm 1: abbreviation tokens",
    "unc": "Algorithm 1: uncommon tokens",
    "ratio": "Algorithm 1: (unc + abb) / n",
}

CITATION = """@inproceedings{luo-etal-2022-benchmarking,
  title = {Benchmarking Automated Clinical Language Simplification: Dataset, Algorithm, and
    Evaluation},
  author = {Luo, Junyu and Zheng, Zifei and Ye, Hanzhong and Ye, Muchao and Wang, Yaqing
    and You, Quanzeng and Xiao, Cao and Ma, Fenglong},
  booktitle = {Proceedings of the 29th International Conference on Computational Linguistics},
  year = {2022},
  pages = {3550--3562},
  url = {https://aclanthology.org/2022.coling-1.313}
}"""
CITATION += "\n" + MIMIC_III_CITATION

PHYSIONET_TERMS = """**MIMIC-derived data: PhysioNet Credentialed Health Data Use Agreement.**
The sentences derive from MIMIC-III clinical notes, distributed by PhysioNet under the
PhysioNet Credentialed Health Data License 1.5.0 and its Data Use Agreement. Only credentialed
PhysioNet users who signed the MIMIC-III DUA may access this data. Do not share it with anyone
who has not, do not publish it (no public hub repositories, no pasting into online services),
and make no attempt to re-identify any person. `medsimp publish` refuses this builder (its
Parquet lineage is MIMIC) whatever the target or flags: share it through PhysioNet. The card's
YAML carries
`medsimp.mimic_derived: true` for tools to check."""


def _annotated_files(folder: Path) -> dict[str, Path]:
    files = {
        "train": folder / "train.txt",
        "validation": folder / "validation.txt",
        "test": folder / "test.txt",
    }
    for split in ("train", "test"):
        if not files[split].is_file():
            raise BuildError(f"MedLane {split} file not found: {files[split]}")
    return files


def _validation_size(n_records: int, validation_size: int, notes: list[str]) -> int:
    """`validation_size`, or the paper's share of the file when that would leave test empty."""
    if validation_size < n_records:
        return validation_size
    share = round(n_records * PAPER_EVAL_SPLIT[0] / PAPER_EVAL_SPLIT[1])
    message = (
        f"the evaluation file (test.txt) has {n_records} records, not more than validation_size "
        f"{validation_size}: validation gets the paper's share ({PAPER_EVAL_SPLIT[0]} of "
        f"{PAPER_EVAL_SPLIT[1]}), {share} records, test the other {n_records - share}"
    )
    log.warning("medlane: %s", message)
    notes.append(message[0].upper() + message[1:] + ".")
    return share


def _annotated(
    folder: Path, validation_size: int, rejects: list[dict], notes: list[str]
) -> dict[str, list[dict]]:
    files = _annotated_files(folder)
    out: dict[str, list[dict]] = {"train": read_medlane_train(files["train"], rejects)}
    if files["validation"].is_file():
        out["validation"] = read_medlane_eval(files["validation"], rejects)
        out["test"] = read_medlane_eval(files["test"], rejects)
    else:
        records = read_medlane_eval(files["test"], rejects)
        out["validation"], out["test"] = split_eval(
            records, _validation_size(len(records), validation_size, notes)
        )
    for split, records in out.items():
        for n, rec in enumerate(records):
            rec["record_id"] = f"{split}:{n}"
    return out


HUB = HubCard(
    license_name=PHYSIONET_LICENSE,
    license_link=PHYSIONET_LICENSE_LINK,
    tags=("medical", "clinical", "text-simplification", "lexical-simplification", "mimic-iii"),
    intended_use="""Training and evaluating clinical lexical simplifiers (DECLARE and baselines) on MedLane's
sentence-level adaptations, by credentialed PhysioNet users under the MIMIC-III DUA, on their own
machines. Not for publication, public hubs or hosted services that retain data.""",
    limitations="""MedLane's annotators rewrote single sentences selected by Algorithm 1 from discharge
summaries: the sentences favour abbreviations and uncommon words, not whole notes. References are
expert rewrites (a few per sentence), so metrics reward their wording; de-identification
placeholders (`[**...**]`) replace names and dates. The `mimic-candidates` config is unannotated.""",
)


def build(cfg: BuildMedlane) -> BuiltDataset:
    """Build MedLane from the params section `build.medlane`."""
    rejects: list[dict] = []
    split_notes: list[str] = []
    annotated = _annotated(Path(cfg.input), cfg.validation_size, rejects, split_notes)
    configs = {"annotated": {s: table_from_rows(r, ANNOTATED) for s, r in annotated.items()}}
    descriptions = {
        "annotated": "MedLane annotations: train (source, target, second-person "
        "target); validation/test (source, references, terms)"
    }
    n_records = sum(len(r) for r in annotated.values())
    counts = {"annotated_records": n_records, "candidate_sentences": 0}
    read, kept, filtered = n_records + len(rejects), n_records, 0
    if cfg.candidates:
        table = read_parquet_dir(cfg.candidates, [*CANDIDATE_COLUMNS, "keep"])
        selected = table.filter(pc.field("keep"))
        for name, type_ in SELECTION_FIELDS:  # selection features, null when the job lacks them
            if name not in selected.column_names:
                selected = selected.append_column(name, pa.nulls(selected.num_rows, type_))
        selected = (
            selected.select(CANDIDATES.names)
            .sort_by([("doc_id", "ascending"), ("sentence_index", "ascending"), ("sentence_id", "ascending")])
            .cast(CANDIDATES)
        )
        configs["mimic-candidates"] = {"train": selected}
        descriptions["mimic-candidates"] = (
            "sentences the notes job selected for annotation "
            "(Algorithm 1 `keep` true); the single split is "
            "named train"
        )
        counts["candidate_sentences"] = selected.num_rows
        read, kept = read + table.num_rows, kept + selected.num_rows
        filtered += table.num_rows - selected.num_rows
    counts.update({"read": read, "kept": kept, "filtered": filtered, "rejected": len(rejects)})
    return BuiltDataset(
        name="medlane",
        title="MedLane (medsimp build)",
        description=(
            "Clinical-language simplification data in the MedLane format (Luo et al., 2022): "
            "discharge-summary sentences from MIMIC-III with expert simplifications (train) and "
            "up to four references with inline abbreviation annotations (validation/test), plus "
            "the candidate sentences the medsimp notes job selected for annotation."
        ),
        citation=CITATION,
        license="other",
        access=PHYSIONET_TERMS,
        configs=configs,
        config_descriptions=descriptions,
        feature_descriptions=FEATURES,
        counts=counts,
        hub=HUB,
        default_config="annotated",
        mimic_derived=True,
        rejects=rejects,
        notes=[
            "Evaluation records whose file repeats a reference keep the repetition "
            "(MedLane's sample has records labelled 1,1,3,3: two distinct references).",
            *split_notes,
        ],
    )
