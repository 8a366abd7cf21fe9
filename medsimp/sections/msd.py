"""Params `msd`."""

from __future__ import annotations

from typing import Literal

from medsimp.sections.base import Positive, Section


class Msd(Section):
    input: str = "data/sample/msd.jsonl"
    num_shards: Positive = 1
    paired_files: list[str] = ["test"]
    pair_key: Literal["title_icd9", "topic"] = "title_icd9"  # topic slug when a record lacks title or icd9
    splitter: Literal["nltk", "pysbd"] = "nltk"  # nltk: punkt (Cao et al. §3.2); pysbd: medsimp's splitter
    pcio: dict[str, list[str]] = {
        "cause": ["Etiology", "Causes", "Pathophysiology", "Risk Factors"],
        "symptoms": [
            "Symptoms and Signs",
            "Symptoms",
            "Signs",
            "Manifestations",
            "Clinical Manifestations",
        ],
        "diagnosis": ["Diagnosis", "Tests", "Screening", "Evaluation"],
        "treatment": ["Treatment", "Management", "Therapy"],
        "prevention": ["Prevention"],
        "prognosis": ["Prognosis", "Outlook", "Complications"],
    }
