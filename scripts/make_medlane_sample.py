"""Regenerate the embedded synthetic MedLane-format sample (data/sample/medlane).

    python scripts/make_medlane_sample.py [--out data/sample/medlane]
        [--dictionary medsimp/resources/medlane_dictionary.json]

Deterministic (fixed seed): clinical sentence templates with abbreviations and
professional terms; train records are (source, target, second-person target),
evaluation records a source and 4 references with `abbr[expansion]` annotations
(references 2 and 4 use alternative lay wordings). The dictionary lists every term with its
candidate expansions (several senses for ambiguous abbreviations); it is a packaged resource,
the default of `train.dictionaries`, so a command gives the same numbers from any folder.
All text is synthetic.
"""

import argparse
import json
import random
import re
from pathlib import Path

# term -> candidate expansions (lay wording first where one exists)
DICT = {
    "pt": ["patient", "physical therapy", "prothrombin time"],
    "htn": ["high blood pressure", "hypertension"],
    "sob": ["shortness of breath"],
    "cp": ["chest pain", "cerebral palsy"],
    "afib": ["abnormal heart rhythm", "atrial fibrillation"],
    "cad": ["heart artery disease", "coronary artery disease"],
    "chf": ["heart failure", "congestive heart failure"],
    "copd": ["chronic lung disease", "chronic obstructive pulmonary disease"],
    "dm": ["diabetes", "diabetes mellitus", "diastolic murmur"],
    "mi": ["heart attack", "myocardial infarction", "mitral insufficiency"],
    "bp": ["blood pressure", "bipolar"],
    "hr": ["heart rate", "hour", "hazard ratio"],
    "iv": ["through the vein", "intravenous", "fourth"],
    "po": ["by mouth", "orally"],
    "uti": ["urine infection", "urinary tract infection"],
    "cxr": ["chest x-ray"],
    "ekg": ["heart tracing", "electrocardiogram"],
    "icu": ["intensive care unit"],
    "s/p": ["after", "status post"],
    "h/o": ["history of"],
    "abx": ["antibiotics"],
    "gi": ["stomach and bowel", "gastrointestinal"],
    "ed": ["emergency department", "erectile dysfunction"],
    "ms": ["mental status", "multiple sclerosis", "mitral stenosis", "morphine sulfate"],
    "pe": ["blood clot in the lung", "physical exam", "pulmonary embolism"],
    "ra": ["room air", "right atrium", "rheumatoid arthritis"],
    "ct": ["ct scan", "chest tube", "computed tomography"],
    "pna": ["lung infection", "pneumonia"],
    "bid": ["twice a day"],
    "tid": ["three times a day"],
    "prn": ["as needed"],
    "npo": ["nothing by mouth"],
    "sbp": ["top blood pressure number", "spontaneous bacterial peritonitis", "systolic blood pressure"],
    "arf": ["sudden kidney failure", "acute renal failure"],
    "ckd": ["long term kidney disease", "chronic kidney disease"],
    "gerd": ["acid reflux", "gastroesophageal reflux disease"],
    "osa": ["sleep breathing stops", "obstructive sleep apnea"],
    "hypotension": ["low blood pressure"],
    "tachycardia": ["fast heart rate"],
    "bradycardia": ["slow heart rate"],
    "dyspnea": ["shortness of breath", "trouble breathing"],
    "edema": ["swelling"],
    "diuresis": ["medicine to remove extra fluid"],
    "hematuria": ["blood in the urine"],
    "syncope": ["fainting"],
    "emesis": ["vomiting"],
    "febrile": ["feverish"],
    "afebrile": ["without fever"],
    "intubated": ["put on a breathing machine"],
    "extubated": ["taken off the breathing machine"],
    "thrombus": ["blood clot"],
    "anticoagulation": ["blood thinners"],
    "hyperkalemia": ["high potassium"],
    "hyponatremia": ["low sodium"],
}
ALT = {
    "high blood pressure": "raised blood pressure",
    "patient": "person",
    "shortness of breath": "trouble breathing",
    "heart attack": "heart damage from a blocked artery",
    "blood clot": "clot of blood",
    "swelling": "fluid swelling",
    "by mouth": "orally",
    "twice a day": "two times a day",
    "lung infection": "chest infection",
    "fainting": "passing out",
    "vomiting": "throwing up",
    "emergency department": "emergency room",
}
ABBR = {k for k in DICT if not k.isalpha() or len(k) <= 5 and k not in {"edema", "emesis"}}
# {term=lay} slot; lay must be in DICT[term]
T = [
    "{pt=patient} is a {age} year old {sex} with {h/o=history of} {htn=high blood pressure} and {dm=diabetes} who presents with {cp=chest pain} .",
    "{pt=patient} was admitted to the {icu=intensive care unit} for {hypotension=low blood pressure} requiring pressors .",
    "in the {ed=emergency department} , {S} was found to be {febrile=feverish} with a {hr=heart rate} of {n3} .",
    "{S} was started on {iv=through the vein} {abx=antibiotics} for presumed {pna=lung infection} .",
    "{cxr=chest x-ray} showed worsening {edema=swelling} consistent with {chf=heart failure} exacerbation .",
    "{ekg=heart tracing} revealed {afib=abnormal heart rhythm} with rapid ventricular response .",
    "{O} {bp=blood pressure} was {n3} / {n2} on arrival and {S} complained of {sob=shortness of breath} .",
    "{pt=patient} was restarted on {diuresis=medicine to remove extra fluid} to help mobilize fluid .",
    "{S} is {s/p=after} cardiac catheterization for {mi=heart attack} with stent placement .",
    "{O} {ms=mental status} improved after the {uti=urine infection} was treated .",
    "{ct=ct scan} of the chest was negative for {pe=blood clot in the lung} .",
    "{S} was saturating {n2} % on {ra=room air} and denied {dyspnea=shortness of breath} .",
    "metoprolol was increased to {n2} mg {bid=twice a day} for {tachycardia=fast heart rate} .",
    "{S} was kept {npo=nothing by mouth} overnight for the {gi=stomach and bowel} procedure .",
    "oxycodone was given {po=by mouth} {prn=as needed} for pain .",
    "{S} had an episode of {syncope=fainting} at home followed by {emesis=vomiting} .",
    "{O} {sbp=top blood pressure number} dropped to the {n2}s and {S} became {bradycardia=slow heart rate} .",
    "labs were notable for {hyperkalemia=high potassium} and {hyponatremia=low sodium} in the setting of {arf=sudden kidney failure} .",
    "{S} has a {h/o=history of} {ckd=long term kidney disease} and {gerd=acid reflux} .",
    "{S} was {intubated=put on a breathing machine} for airway protection and {extubated=taken off the breathing machine} on day {n1} .",
    "a {thrombus=blood clot} was seen in the left ventricle and {anticoagulation=blood thinners} was started .",
    "{O} {copd=chronic lung disease} and {osa=sleep breathing stops} were managed with home oxygen .",
    "{S} remained {afebrile=without fever} and {hematuria=blood in the urine} resolved by discharge .",
    "{pt=patient} will follow up with {pt=physical therapy} after discharge .",
    "{cad=heart artery disease} was managed with aspirin and a statin ; {htn=high blood pressure} was controlled .",
    "{O} {hr=heart rate} was in the {n2}s and {bp=blood pressure} stable on {ra=room air} .",
    "{S} was transferred from the {ed=emergency department} to the {icu=intensive care unit} with {hypotension=low blood pressure} .",
    "furosemide {n2} mg {iv=through the vein} {tid=three times a day} was given for {edema=swelling} .",
    "{S} denies {cp=chest pain} , {sob=shortness of breath} , or {syncope=fainting} .",
    "{ct=ct scan} of the abdomen showed no {gi=stomach and bowel} bleeding source .",
]
SEX = [("male", "he", "his"), ("female", "she", "her")]


def render(t, rng):
    sex, s, o = rng.choice(SEX)
    fill = {
        "age": str(rng.randint(40, 89)),
        "sex": sex,
        "S": s,
        "O": o,
        "n3": str(rng.randint(100, 180)),
        "n2": str(rng.randint(40, 99)),
        "n1": str(rng.randint(2, 9)),
    }
    src, tgt, ref, alt = [], [], [], []
    for part in re.split(r"(\{[^}]+\})", t):
        if not part.startswith("{"):
            for x in (src, tgt, ref, alt):
                x.append(part)
            continue
        body = part[1:-1]
        if "=" not in body:
            for x in (src, tgt, ref, alt):
                x.append(fill[body])
            continue
        term, lay = body.split("=")
        assert lay in DICT[term], (term, lay)
        src.append(term)
        tgt.append(lay)
        alt.append(ALT.get(lay, lay))
        ref.append(f"{term}[{lay}]" if term in ABBR else lay)
        if term in ABBR:
            alt[-1] = f"{term}[{ALT.get(lay, lay)}]"

    def j(xs: list[str]) -> str:
        return re.sub(r"\s+", " ", "".join(xs)).strip()

    return j(src), j(tgt), j(ref), j(alt)


def second(s):
    w = s.split(" ")
    m = {"he": "you", "she": "you", "his": "your", "her": "your", "him": "you"}
    w = [m.get(x, x) for x in w]
    out = " ".join(w)
    for a, b in [
        ("you was", "you were"),
        ("you is", "you are"),
        ("you has", "you have"),
        ("you denies", "you deny"),
    ]:
        out = out.replace(a, b)
    out = re.sub(r"^patient\b", "you", out)
    out = re.sub(r"^pt\[patient\]", "you", out)
    out = out.replace("you was", "you were").replace("you is", "you are")
    return out


parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--out", default="data/sample/medlane")
parser.add_argument("--dictionary", default="medsimp/resources/medlane_dictionary.json")
rng = random.Random(20220706)
args = parser.parse_args()
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)


def records(n):
    return [render(rng.choice(T), rng) for _ in range(n)]


train = records(160)
val = records(30)
test = records(30)
with open(out / "train.txt", "w") as f:
    for s, t, _r, _a in train:
        f.write(f"{s}\n{t}\n{second(t)}\n\n")
for name, recs in [("validation", val), ("test", test)]:
    with open(out / f"{name}.txt", "w") as f:
        for s, _t, r, a in recs:
            f.write(f"{s}\n1 {r}\n2 {a}\n3 {second(r)}\n4 {second(a)}\n\n")
json.dump({k: DICT[k] for k in sorted(DICT)}, open(args.dictionary, "w"), indent=1, sort_keys=True)
