"""Synthetic MIMIC-III NOTEEVENTS writer for benchmarks and samples (no real data in it).

Rows follow MIMIC-III's category mix (2,083,180 notes; about 2.9% discharge summaries)
and its CSV format (quoted header, quoted TEXT with newlines, commas and `""`).
Texts come from a seeded pool of template notes, so writing is fast; the same
(rows, seed) gives the same bytes.
"""

from __future__ import annotations

import gzip
import random
import textwrap
from collections.abc import Iterator
from typing import BinaryIO, cast

from pipelines.sources.noteevents import MIMIC3

# MIMIC-III v1.4 NOTEEVENTS counts per CATEGORY (trailing spaces as in the data).
CATEGORY_MIX: dict[str, int] = {
    "Nursing/other": 822497,
    "Radiology": 522279,
    "Nursing": 223556,
    "ECG": 209051,
    "Physician ": 141624,
    "Discharge summary": 59652,
    "Echo": 45794,
    "Respiratory ": 31739,
    "Nutrition": 9418,
    "General": 8301,
    "Rehab Services": 5431,
    "Social Work": 2670,
    "Case Management ": 967,
    "Pharmacy": 103,
    "Consult": 98,
}
ISERROR_RATE = 886 / 2083180
POOL = 400  # template notes per category

_CONDITIONS = [
    ("CAD s/p CABG", "coronary artery disease"),
    ("HTN", "hypertension"),
    ("DM2", "diabetes"),
    ("CHF", "heart failure"),
    ("COPD", "lung disease"),
    ("Afib", "atrial fibrillation"),
    ("CKD", "kidney disease"),
    ("ESRD on HD", "dialysis"),
    ("OSA", "sleep apnea"),
    ("GERD", "reflux"),
    ("HLD", "high cholesterol"),
]
_COMPLAINTS = [
    "SOB",
    "CP",
    "fevers and chills",
    "N/V",
    "BRBPR",
    "abdominal pain",
    "AMS",
    "syncope",
    "DOE",
    "productive cough",
]
_MEDS = [
    "ASA 81 mg PO daily",
    "metoprolol 25 mg PO b.i.d.",
    "lasix 40 mg IV",
    "vancomycin 1 g IV q12h",
    "heparin gtt",
    "lisinopril 10 mg PO daily",
    "atorvastatin 80 mg PO qhs",
    "insulin SSI",
    "ceftriaxone 1 g IV q24h",
    "pantoprazole 40 mg PO daily",
]
_PLACES = ["[**Hospital1 18**]", "[**Hospital 1474**]", "an OSH", "[**Hospital3 **]"]
_HPI_HEADERS = [
    "History of Present Illness:",
    "HISTORY OF PRESENT ILLNESS:",
    "HPI:",
    "History of the Present Illness:",
]
_BHC_HEADERS = ["Brief Hospital Course:", "BRIEF HOSPITAL COURSE:", "Brief Summary of Hospital Course:"]


def _vitals(rng: random.Random) -> str:
    return (
        f"T {rng.uniform(96.5, 102.5):.1f} BP {rng.randint(85, 190)}/{rng.randint(45, 105)} "
        f"HR {rng.randint(50, 140)} RR {rng.randint(12, 32)} SpO2 {rng.randint(84, 100)}% "
        f"on {rng.choice(['RA', '2L NC', '4L NC', 'NRB'])}"
    )


def _hpi(rng: random.Random) -> list[str]:
    age, sex = rng.randint(22, 94), rng.choice(["M", "F"])
    conds = rng.sample(_CONDITIONS, 3)
    c = rng.choice(_COMPLAINTS)
    place = rng.choice(_PLACES)
    out = [
        f"The patient is a {age} y/o {sex} with h/o {conds[0][0]}, {conds[1][0]}, and {conds[2][0]} "
        f"who presented to {place} on [**2151-7-{rng.randint(1, 28)}**] with {c}.",
        f"The patient reports that the {c} began {rng.randint(2, 9)} days prior to admission and "
        f"has been getting worse despite taking the medications prescribed by the PCP.",
        f"In the ED, initial vitals were {_vitals(rng)}.",
        f"Labs were notable for a WBC of {rng.uniform(3, 22):.1f}, Cr {rng.uniform(0.6, 4.5):.1f} "
        f"and a BNP of {rng.randint(80, 4000)}.",
        f"A CXR showed {rng.choice(['bilateral pleural effusions', 'a RLL infiltrate', 'no acute process'])}.",
        f"He was given {rng.choice(_MEDS)} and {rng.choice(_MEDS)} and was admitted to the "
        f"{rng.choice(['MICU', 'CCU', 'floor', 'SICU'])} for further management.",
        "She denies any recent travel, sick contacts, or changes in her diet at home.",
    ]
    return rng.sample(out, rng.randint(4, len(out)))


def _course(rng: random.Random) -> list[str]:
    sents = [
        f"The patient was admitted with {rng.choice(_COMPLAINTS)} and was treated with {rng.choice(_MEDS)}.",
        f"# {rng.choice(_CONDITIONS)[0]}: The patient was diuresed with IV lasix with good UOP, "
        f"and lasix was cont. at the home dose on discharge.",
        "# Afib with RVR: rate controlled with metoprolol; the patient was started on warfarin "
        "with a goal INR of 2-3.",
        f"Blood cultures from [**2151-7-{rng.randint(1, 28)}**] grew GPC in clusters, and ID was "
        f"consulted for recommendations regarding the duration of antibiotics.",
        f"The patient remained hemodynamically stable with SBPs in the {rng.randint(9, 15)}0s "
        f"throughout the remainder of the hospital stay.",
        "Physical therapy evaluated the patient and recommended discharge to home with services.",
        f"Dr. [**Last Name (STitle) {rng.randint(100, 9999)}**] from cardiology was consulted and "
        f"recommended a TTE, which showed an EF of {rng.randint(15, 65)}%.",
        "The patient was seen and examined on the day of discharge and was stable for discharge.",
    ]
    return rng.sample(sents, rng.randint(4, len(sents)))


def _wrap(sentences: list[str], rng: random.Random) -> str:
    width = rng.choice([0, 0, 78])
    para = " ".join(sentences)
    return textwrap.fill(para, width) if width else para


def _discharge(rng: random.Random) -> str:
    d = rng.randint(1, 28)
    parts = [
        f"Admission Date:  [**2151-7-{d}**]              Discharge Date:   [**2151-8-{d}**]\n\n"
        f"Date of Birth:  [**2079-10-12**]             Sex:   {rng.choice('MF')}\n\n"
        f"Service: {rng.choice(['MEDICINE', 'CARDIOTHORACIC', 'SURGERY'])}\n\n"
        "Allergies:\nPatient recorded as having No Known Allergies to Drugs\n\n"
        f"Attending:[**First Name3 (LF) {rng.randint(100, 9999)}**]\n"
        f"Chief Complaint:\n{rng.choice(_COMPLAINTS)}\n\n"
        "Major Surgical or Invasive Procedure:\nNone\n\n",
        f"{rng.choice(_HPI_HEADERS)}\n{_wrap(_hpi(rng), rng)}\n\n",
        "Past Medical History:\n"
        + "".join(f"{i + 1}. {c[0]}\n" for i, c in enumerate(rng.sample(_CONDITIONS, 4)))
        + "\n",
        "Social History:\nLives with wife. Former smoker, quit 10 years ago. No ETOH.\n\n"
        f"Physical Exam:\nVitals: {_vitals(rng)}\nGen: NAD, A&Ox3\nCV: RRR, no m/r/g\n\n"
        f"Pertinent Results:\n[**2151-7-{d}**] 08:15PM   WBC-{rng.uniform(3, 22):.1f} "
        f"RBC-4.01 HGB-12.1 HCT-36.2 PLT COUNT-{rng.randint(90, 450)}\n\n",
        f"{rng.choice(_BHC_HEADERS)}\n{_wrap(_course(rng), rng)}\n\n",
        "Medications on Admission:\n"
        + "".join(f"{i + 1}. {m}\n" for i, m in enumerate(rng.sample(_MEDS, 4)))
        + "\n",
        "Discharge Disposition:\nHome With Service\n\nDischarge Diagnosis:\n"
        f"{rng.choice(_CONDITIONS)[1]}\n\nDischarge Condition:\nstable\n\n"
        'Followup Instructions:\nPlease follow up with your PCP, "Dr. [**Last Name (STitle) 21**]", '
        "in 1-2 weeks.\n",
    ]
    return "".join(parts)


def _radiology(rng: random.Random) -> str:
    return (
        f"[**2151-7-{rng.randint(1, 28)}**] 3:15 PM\n CHEST (PORTABLE AP)"
        f"                                             Clip # [**Clip Number (Radiology) "
        f"{rng.randint(1000, 99999)}**]\n Reason: eval for infiltrate\n"
        " ______________________________________________________________________________\n"
        f"FINDINGS: Single portable AP view of the chest. {rng.choice(['Mild', 'Moderate'])} "
        "pulmonary vascular congestion, with small bilateral pleural effusions. The ETT tip is "
        f"{rng.randint(2, 6)} cm above the carina.\n\nIMPRESSION: "
        f"{rng.choice(['No pneumothorax.', 'Worsening RLL opacity, concerning for PNA.'])}\n"
    )


def _other(rng: random.Random, category: str) -> str:
    return (
        f"{category.strip()} note\nPt is {rng.randint(22, 94)} y/o, {_vitals(rng)}.\n"
        "Neuro: A&Ox3, follows commands, MAE.\nResp: LS clear, sx for small amt thick "
        f"secretions.\nGI: abd soft, +BS, tolerating TF at goal {rng.randint(20, 80)} cc/hr.\n"
        'Plan: cont to monitor, wean O2 as tolerated, "pain control".\n'
    )


def _quote(text: str) -> bytes:
    return ('"' + text.replace('"', '""') + '"').encode("utf-8")


def _pools(rng: random.Random) -> dict[str, list[bytes]]:
    make = {"Discharge summary": _discharge, "Radiology": _radiology}
    return {
        cat: [_quote(make[cat](rng) if cat in make else _other(rng, cat)) for _ in range(POOL)]
        for cat in CATEGORY_MIX
    }


_DESCRIPTIONS = {
    "Discharge summary": "Report",
    "Radiology": "CHEST (PORTABLE AP)",
    "ECG": "Report",
    "Echo": "Report",
}


def rows(count: int, seed: int = 0) -> Iterator[bytes]:
    """`count` CSV data rows (bytes, each ending in a newline)."""
    rng = random.Random(seed)
    pools = _pools(rng)
    cats = rng.choices(list(CATEGORY_MIX), weights=list(CATEGORY_MIX.values()), k=count)
    for i, cat in enumerate(cats):
        subject = 10000 + rng.randrange(50000)
        hadm = (
            ""
            if cat in ("ECG", "Nursing/other") and rng.random() < 0.3
            else str(100000 + rng.randrange(100000))
        )
        day = f"21{rng.randint(10, 99)}-0{rng.randint(1, 9)}-{rng.randint(10, 28)}"
        time = "" if cat == "Discharge summary" else f"{day} {rng.randint(10, 23)}:00:00"
        iserror = "1" if rng.random() < ISERROR_RATE else ""
        desc = _DESCRIPTIONS.get(cat, "Generic Note")
        yield (
            (
                f'{i + 1},{subject},{hadm},{day},{time},{time},"{cat}","{desc}",'
                f"{'' if cat == 'Discharge summary' else 14000 + i % 900},{iserror},"
            ).encode()
            + pools[cat][rng.randrange(POOL)]
            + b"\n"
        )


def header() -> bytes:
    return (",".join(f'"{c}"' for c in MIMIC3.columns) + "\n").encode()


def write(fh: BinaryIO, count: int, seed: int = 0) -> None:
    """Write the header and `count` rows to a binary file."""
    fh.write(header())
    batch: list[bytes] = []
    for row in rows(count, seed):
        batch.append(row)
        if len(batch) >= 4096:
            fh.write(b"".join(batch))
            batch.clear()
    fh.write(b"".join(batch))


def write_file(path: str, count: int, seed: int = 0) -> None:
    """Write a synthetic NOTEEVENTS file (gzip when `path` ends in .gz; mtime 0 for stable bytes)."""
    with open(path, "wb") as raw:
        if path.endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0, filename="") as fh:
                write(cast(BinaryIO, fh), count, seed)
        else:
            write(raw, count, seed)
