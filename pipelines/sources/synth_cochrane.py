"""Synthetic Cochrane reviews at corpus scale (canonical JSONL; no real data in it).

Each review has an English technical abstract of 20-40 sentences in the Cochrane sections and
a plain-language summary of 8-25 sentences in English, Spanish, French and Farsi. The texts
are built from the embedded sample's wording (its topics, its sentence shapes, its statistics),
with a seeded choice of condition, intervention, population, outcomes and numbers per review,
so no two reviews share a summary or an abstract (about a tenth of single sentences recur, as
boilerplate does in real reviews) and aligners do real work:
- every plain sentence about an outcome has a technical counterpart in the abstract;
- the translations are sentence-parallel except for seeded edits (a sentence left out, two
  sentences joined), the 1-0 and 2-1 alignments Vecalign must find;
- about 0.5% of lines are broken the ways real exports break (truncated JSON, a missing DOI),
  so dead letters and counts are exercised too.
The same (reviews, seed) gives the same bytes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

LANGUAGES = ("en", "es", "fr", "fa")
BROKEN_RATE = 0.005
_FA_DIGITS = str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹")


def _cap(text: str) -> str:
    """First letter upper-cased, the rest as written ("vitamin D" -> "Vitamin D")."""
    return text[:1].upper() + text[1:]


# (en, es, fr: "de"-form, fa)
CONDITIONS = [
    ("asthma", "asma", "d'asthme", "آسم"),
    ("chronic low back pain", "dolor lumbar crónico", "de lombalgie chronique", "کمردرد مزمن"),
    ("type 2 diabetes", "diabetes tipo 2", "de diabète de type 2", "دیابت نوع ۲"),
    ("depression", "depresión", "de dépression", "افسردگی"),
    ("heart failure", "insuficiencia cardíaca", "d'insuffisance cardiaque", "نارسایی قلبی"),
    (
        "chronic obstructive pulmonary disease",
        "enfermedad pulmonar obstructiva crónica",
        "de bronchopneumopathie chronique obstructive",
        "بیماری انسدادی مزمن ریه",
    ),
    ("acute middle ear infection", "otitis media aguda", "d'otite moyenne aiguë", "عفونت حاد گوش میانی"),
    ("insomnia", "insomnio", "d'insomnie", "بی‌خوابی"),
    ("migraine", "migraña", "de migraine", "میگرن"),
    ("knee osteoarthritis", "artrosis de rodilla", "d'arthrose du genou", "آرتروز زانو"),
    ("high blood pressure", "presión arterial alta", "d'hypertension artérielle", "فشار خون بالا"),
    ("eczema", "eccema", "d'eczéma", "اگزما"),
    ("stroke", "accidente cerebrovascular", "d'accident vasculaire cérébral", "سکته مغزی"),
    ("atrial fibrillation", "fibrilación auricular", "de fibrillation auriculaire", "فیبریلاسیون دهلیزی"),
    ("chronic kidney disease", "enfermedad renal crónica", "de maladie rénale chronique", "بیماری مزمن کلیه"),
    ("anxiety", "ansiedad", "d'anxiété", "اضطراب"),
]
INTERVENTIONS = [
    ("exercise therapy", "el ejercicio terapéutico", "l'exercice thérapeutique", "ورزش درمانی"),
    (
        "inhaled corticosteroids",
        "los corticosteroides inhalados",
        "les corticostéroïdes inhalés",
        "کورتیکواستروئیدهای استنشاقی",
    ),
    (
        "vitamin D supplements",
        "los suplementos de vitamina D",
        "les suppléments de vitamine D",
        "مکمل‌های ویتامین D",
    ),
    ("acupuncture", "la acupuntura", "l'acupuncture", "طب سوزنی"),
    (
        "cognitive behavioural therapy",
        "la terapia cognitivo-conductual",
        "la thérapie cognitivo-comportementale",
        "درمان شناختی رفتاری",
    ),
    ("probiotics", "los probióticos", "les probiotiques", "پروبیوتیک‌ها"),
    (
        "text-message reminders",
        "los recordatorios por mensaje de texto",
        "les rappels par SMS",
        "یادآورهای پیامکی",
    ),
    ("yoga", "el yoga", "le yoga", "یوگا"),
    (
        "self-management education",
        "la educación para el autocuidado",
        "l'éducation à l'autogestion",
        "آموزش خودمراقبتی",
    ),
    (
        "home-based rehabilitation",
        "la rehabilitación en el domicilio",
        "la réadaptation à domicile",
        "توانبخشی در منزل",
    ),
    ("zinc supplements", "los suplementos de zinc", "les suppléments de zinc", "مکمل‌های روی"),
    (
        "mindfulness training",
        "el entrenamiento en atención plena",
        "l'entraînement à la pleine conscience",
        "آموزش ذهن‌آگاهی",
    ),
]
POPULATIONS = [
    ("adults", "adultos", "adultes", "بزرگسال"),
    ("children", "niños", "enfants", "کودک"),
    ("older people", "personas mayores", "personnes âgées", "سالمند"),
    ("adolescents", "adolescentes", "adolescents", "نوجوان"),
    ("pregnant women", "mujeres embarazadas", "femmes enceintes", "زن باردار"),
]
# (en, es, fr, fa, technical en); `good`: more is better
OUTCOMES = [
    ("pain", "el dolor", "la douleur", "درد", "pain intensity on a 0 to 10 scale", False),
    (
        "daily function",
        "la función diaria",
        "la fonction quotidienne",
        "عملکرد روزانه",
        "functional status",
        True,
    ),
    (
        "quality of life",
        "la calidad de vida",
        "la qualité de vie",
        "کیفیت زندگی",
        "health-related quality of life",
        True,
    ),
    (
        "hospital stays",
        "las hospitalizaciones",
        "les hospitalisations",
        "بستری شدن در بیمارستان",
        "hospital admissions",
        False,
    ),
    ("symptoms", "los síntomas", "les symptômes", "علائم", "symptom scores", False),
    ("sleep", "el sueño", "le sommeil", "خواب", "sleep quality", True),
    ("worry", "la preocupación", "l'inquiétude", "نگرانی", "anxiety scores", False),
    (
        "visits to the emergency department",
        "las visitas a urgencias",
        "les passages aux urgences",
        "مراجعه به اورژانس",
        "emergency department visits",
        False,
    ),
    (
        "days off work or school",
        "los días de ausencia laboral o escolar",
        "les jours d'absence au travail ou à l'école",
        "روزهای غیبت از کار یا مدرسه",
        "days of absence from work or school",
        False,
    ),
    ("flare-ups", "los brotes", "les poussées", "عود بیماری", "exacerbations requiring oral steroids", False),
    (
        "blood pressure",
        "la presión arterial",
        "la pression artérielle",
        "فشار خون",
        "systolic blood pressure",
        False,
    ),
    ("mood", "el estado de ánimo", "l'humeur", "خلق", "depressive symptoms", False),
]
CERTAINTY = [
    ("high", "alta", "élevée", "بالا"),
    ("moderate", "moderada", "modérée", "متوسط"),
    ("low", "baja", "faible", "پایین"),
    ("very low", "muy baja", "très faible", "بسیار پایین"),
]


def _pls_intro(c, i, p, k, n, m) -> list[tuple[str, str, str, str]]:
    return [
        (
            f"Having {c[0]} is a common long-term health problem.",
            f"Tener {c[1]} es un problema de salud frecuente y de larga duración.",
            f"Être atteint {c[2]} est un problème de santé fréquent et durable.",
            f"ابتلا به {c[3]} یک مشکل سلامتی شایع و طولانی‌مدت است.",
        ),
        (
            f"We wanted to know if {i[0]} helps {p[0]} with {c[0]}.",
            f"Quisimos saber si {i[1]} ayuda a los {p[1]} con {c[1]}.",
            f"Nous voulions savoir si {i[2]} aide les {p[2]} atteints {c[2]}.",
            f"ما می‌خواستیم بدانیم آیا {i[3]} به {p[3]}ان مبتلا به {c[3]} کمک می‌کند.",
        ),
        (
            f"We searched for studies up to {m} {2000 + k % 24}.",
            f"Buscamos estudios hasta {m} de {2000 + k % 24}.",
            f"Nous avons recherché des études jusqu'en {m} {2000 + k % 24}.",
            f"ما مطالعات را تا {m} {2000 + k % 24} جستجو کردیم.",
        ),
        (
            f"We found {k} trials with {n} {p[0]}.",
            f"Encontramos {k} ensayos con {n} {p[1]}.",
            f"Nous avons trouvé {k} essais portant sur {n} {p[2]}.",
            f"ما {k} کارآزمایی با {n} {p[3]} پیدا کردیم.",
        ),
    ]


_EFFECT_WORDS = {
    # direction: (en verb, es, fr, fa)
    "down": ("reduced", "redujo", "a réduit", "کاهش داد"),
    "up": ("improved", "mejoró", "a amélioré", "بهبود داد"),
    "same": ("made little or no difference to", "no modificó", "n'a pas modifié", "تفاوتی ایجاد نکرد در"),
}
_SIZES = [("a little", "un poco", "un peu", "کمی"), ("a lot", "mucho", "beaucoup", "بسیار")]


def _pls_fact(i, o, direction, size, weeks, cert) -> tuple[str, str, str, str]:
    verb = _EFFECT_WORDS[direction]
    if direction == "same":
        return (
            f"{_cap(i[0])} probably {verb[0]} {o[0]} after {weeks} weeks ({cert[0]}-certainty evidence).",
            f"{_cap(i[1])} probablemente {verb[1]} {o[1]} después de {weeks} semanas "
            f"(evidencia de certeza {cert[1]}).",
            f"{_cap(i[2])} {verb[2]} probablement {o[2]} après {weeks} semaines "
            f"(données probantes de certitude {cert[2]}).",
            f"{i[3]} احتمالاً پس از {weeks} هفته {verb[3]} {o[3]} (شواهد با قطعیت {cert[3]}).",
        )
    return (
        f"{_cap(i[0])} probably {verb[0]} {o[0]} {size[0]} after {weeks} weeks "
        f"({cert[0]}-certainty evidence).",
        f"{_cap(i[1])} probablemente {verb[1]} {size[1]} {o[1]} después de {weeks} semanas "
        f"(evidencia de certeza {cert[1]}).",
        f"{_cap(i[2])} {verb[2]} probablement {size[2]} {o[2]} après {weeks} semaines "
        f"(données probantes de certitude {cert[2]}).",
        f"{i[3]} احتمالاً {o[3]} را پس از {weeks} هفته {size[3]} {verb[3]} (شواهد با قطعیت {cert[3]}).",
    )


def _pls_numbers(i, o, p, a, b) -> tuple[str, str, str, str]:
    return (
        f"About {a} in 100 {p[0]} who used {i[0]} had problems with {o[0]}, compared with {b} in 100 who did not.",
        f"Alrededor de {a} de cada 100 {p[1]} que usaron {i[1]} tuvieron problemas con {o[1]}, frente a {b} "
        f"de cada 100 que no lo hicieron.",
        f"Environ {a} {p[2]} sur 100 ayant utilisé {i[2]} ont eu des problèmes avec {o[2]}, contre {b} sur 100 "
        f"chez ceux qui ne l'ont pas fait.",
        f"حدود {a} نفر از هر ۱۰۰ {p[3]} که از {i[3]} استفاده کردند با {o[3]} مشکل داشتند، در مقایسه با {b} "
        f"نفر از هر ۱۰۰ نفری که استفاده نکردند.",
    )


def _pls_close(i, p, harms, k) -> list[tuple[str, str, str, str]]:
    return [
        (
            f"About {harms} in 100 {p[0]} had mild side effects for a short time.",
            f"Alrededor de {harms} de cada 100 {p[1]} tuvieron efectos secundarios leves durante poco tiempo.",
            f"Environ {harms} {p[2]} sur 100 ont eu des effets secondaires légers pendant une courte durée.",
            f"حدود {harms} نفر از هر ۱۰۰ {p[3]} برای مدت کوتاهی عوارض جانبی خفیف داشتند.",
        ),
        (
            f"Only {max(1, k // 3)} of the trials were large and well run.",
            f"Solo {max(1, k // 3)} de los ensayos eran grandes y estaban bien realizados.",
            f"Seuls {max(1, k // 3)} des essais étaient grands et bien menés.",
            f"تنها {max(1, k // 3)} کارآزمایی بزرگ و به خوبی انجام شده بودند.",
        ),
        (
            f"More research is needed on {i[0]} over longer periods.",
            f"Se necesita más investigación sobre {i[1]} durante períodos más largos.",
            f"Des recherches supplémentaires sont nécessaires sur {i[2]} sur de plus longues périodes.",
            f"تحقیقات بیشتری درباره {i[3]} در دوره‌های طولانی‌تر لازم است.",
        ),
    ]


def _abstract(rng: random.Random, c, i, p, k, n, m, facts) -> list[dict]:
    comp = rng.choice(["usual care", "placebo", "no intervention", "waiting list", "attention control"])
    year = 2000 + k % 24
    background = [
        f"{_cap(c[0])} affects an estimated {rng.randint(2, 18)}% of {p[0]} worldwide and is a leading "
        f"cause of years lived with disability.",
        f"Guidelines recommend {i[0]} for {p[0]} with {c[0]}, but its effects on patient-important outcomes "
        f"remain uncertain.",
        f"Previous reviews, published before {year - rng.randint(3, 9)}, included fewer than "
        f"{rng.randint(5, 15)} randomised controlled trials (RCTs).",
    ]
    objectives = [f"To assess the benefits and harms of {i[0]} compared with {comp} in {p[0]} with {c[0]}."]
    search = [
        f"We searched CENTRAL, MEDLINE, Embase and CINAHL from inception to {m} {year}, with no language "
        f"restrictions.",
        f"We also searched ClinicalTrials.gov and the WHO ICTRP on {rng.randint(1, 28)} {m} {year} and checked "
        f"the reference lists of {rng.randint(10, 90)} included studies and reviews.",
    ]
    selection = [
        f"We included RCTs and cluster-RCTs comparing {i[0]} with {comp} in {p[0]} with {c[0]}, with at least "
        f"{rng.choice([4, 6, 8, 12])} weeks of follow-up."
    ]
    methods = [
        "Two review authors independently selected studies, extracted data and assessed risk of bias with the "
        "Cochrane RoB 2 tool.",
        f"We pooled data with random-effects meta-analysis and assessed heterogeneity with the I² statistic "
        f"(threshold {rng.choice([50, 60, 75])}%).",
        "We used GRADE to assess the certainty of the evidence for each main outcome.",
    ]
    results = [
        f"We included {k} trials with {n} participants (median age {rng.randint(8, 78)} years; "
        f"{rng.randint(20, 80)}% female).",
        f"Trials lasted {rng.randint(6, 52)} weeks (median {rng.randint(8, 26)}); {rng.randint(1, k)} trials "
        f"were at high risk of bias for blinding of outcome assessment.",
    ]
    for o, direction, weeks, cert in facts:
        kk, nn = rng.randint(1, k), rng.randint(40, max(41, n))
        if o[5]:
            lo, hi = round(rng.uniform(0.05, 0.6), 2), round(rng.uniform(0.61, 1.4), 2)
            stat = f"SMD {round((lo + hi) / 2, 2)}, 95% CI {lo} to {hi}"
        else:
            rr = round(rng.uniform(0.45, 1.05), 2)
            stat = f"RR {rr}, 95% CI {round(rr * 0.8, 2)} to {round(rr * 1.2, 2)}"
        change = {
            "down": "probably reduces",
            "up": "probably improves",
            "same": "probably makes little or no difference to",
        }[direction]
        results.append(
            f"Compared with {comp}, {i[0]} {change} {o[4]} at {weeks} weeks ({stat}; {kk} trials, {nn} "
            f"participants; {cert[0]}-certainty evidence)."
        )
        if rng.random() < 0.6:
            results.append(
                f"The effect on {o[4]} was similar in sensitivity analyses excluding {rng.randint(1, 5)} trials "
                f"at high risk of bias (I² = {rng.randint(0, 89)}%)."
            )
    results.append(
        f"Adverse events were reported in {rng.randint(2, 30)}% of participants in the {i[0]} groups and "
        f"{rng.randint(2, 30)}% in the control groups (RR {round(rng.uniform(0.7, 1.6), 2)}; {rng.randint(1, k)} "
        f"trials)."
    )
    conclusions = [
        f"Moderate-certainty evidence suggests that {i[0]} probably provides small benefits for {p[0]} with "
        f"{c[0]}.",
        f"Large, adequately blinded trials with follow-up beyond {rng.choice([6, 12, 24])} months are needed.",
    ]
    sections = [
        ("Background", background),
        ("Objectives", objectives),
        ("Search methods", search),
        ("Selection criteria", selection),
        ("Data collection and analysis", methods),
        ("Main results", results),
        ("Authors' conclusions", conclusions),
    ]
    total = sum(len(s) for _, s in sections)
    while total < 20:  # pad the results with subgroup findings
        results.insert(
            -1,
            f"Subgroup analysis by {rng.choice(['age', 'sex', 'dose', 'setting', 'duration'])} "
            f"found no difference (test for subgroup differences P = 0.{rng.randint(10, 99)}).",
        )
        total += 1
    return [{"heading": h, "text": " ".join(s)} for h, s in sections]


_MONTHS = ["January", "March", "May", "June", "September", "November"]
_MONTHS_ES = dict(zip(_MONTHS, ["enero", "marzo", "mayo", "junio", "septiembre", "noviembre"], strict=True))
_MONTHS_FR = dict(zip(_MONTHS, ["janvier", "mars", "mai", "juin", "septembre", "novembre"], strict=True))
_MONTHS_FA = dict(zip(_MONTHS, ["ژانویه", "مارس", "مه", "ژوئن", "سپتامبر", "نوامبر"], strict=True))
_JOIN = {"en": "; ", "es": "; ", "fr": " ; ", "fa": "؛ "}


def _localise(parallel: list[tuple[str, str, str, str]], month: str) -> list[tuple[str, str, str, str]]:
    out = []
    for en, es, fr, fa in parallel:
        out.append(
            (
                en,
                es.replace(month, _MONTHS_ES[month]),
                fr.replace(month, _MONTHS_FR[month]),
                fa.replace(month, _MONTHS_FA[month]).translate(_FA_DIGITS),
            )
        )
    return out


def _edited(rng: random.Random, sentences: list[str], language: str) -> list[str]:
    """A translation's seeded departures from sentence-parallel: 1-0 (left out) and 2-1 (joined),
    never below 8 sentences."""
    out: list[str] = []
    room = len(sentences) - 8  # each edit costs one sentence
    j = 0
    while j < len(sentences):
        roll = rng.random()
        if roll < 0.06 and room > 0:
            j, room = j + 1, room - 1
            continue
        if roll < 0.12 and room > 0 and j + 1 < len(sentences):
            out.append(
                _JOIN[language].join(
                    [sentences[j].rstrip("."), sentences[j + 1][:1].lower() + sentences[j + 1][1:]]
                )
            )
            j, room = j + 2, room - 1
            continue
        out.append(sentences[j])
        j += 1
    return out


def review(rng: random.Random, number: int) -> list[dict]:
    """The records (one per language) of one synthetic review."""
    c, i, p = rng.choice(CONDITIONS), rng.choice(INTERVENTIONS), rng.choice(POPULATIONS)
    k, n, month = rng.randint(3, 60), rng.randint(120, 24000), rng.choice(_MONTHS)
    outcomes = rng.sample(OUTCOMES, rng.randint(3, len(OUTCOMES)))
    facts = []
    for o in outcomes:
        direction = rng.choice(["down", "up", "same"]) if not o[5] else rng.choice(["up", "same"])
        if not o[5] and direction == "up":
            direction = "down"
        facts.append((o, direction, rng.choice([4, 6, 8, 12, 16, 24, 26, 52]), rng.choice(CERTAINTY)))
    parallel = _pls_intro(c, i, p, k, n, month)
    for o, d, w, cert in facts:
        parallel.append(_pls_fact(i, o, d, rng.choice(_SIZES), w, cert))
        if rng.random() < 0.4:
            parallel.append(_pls_numbers(i, o, p, rng.randint(5, 60), rng.randint(5, 60)))
    parallel += _pls_close(i, p, rng.randint(1, 30), k)[: rng.randint(1, 3)]
    parallel = _localise(parallel[:25], month)
    doi = f"10.1002/14651858.CD{700000 + number:06d}.pub{rng.randint(2, 5)}"
    titles = (
        f"{_cap(i[0])} for {c[0]} in {p[0]}",
        f"{i[1]} para {c[1]} en {p[1]}",
        f"{i[2]} chez les {p[2]} atteints {c[2]}",
        f"{i[3]} برای {c[3]} در {p[3]}ان",
    )
    records = []
    for li, language in enumerate(LANGUAGES):
        sentences = [row[li] for row in parallel]
        if language != "en":
            sentences = _edited(rng, sentences, language)
        rec: dict = {"doi": doi, "language": language, "title": titles[li]}
        if language == "en":
            rec["abstract"] = _abstract(rng, c, i, p, k, n, month, facts)
        rec["pls"] = [{"heading": "", "text": " ".join(sentences)}]
        records.append(rec)
    return records


def lines(reviews: int, seed: int = 0) -> Iterator[str]:
    """JSONL lines (each ending in a newline) for `reviews` reviews in four languages."""
    rng = random.Random(seed)
    for number in range(reviews):
        for rec in review(rng, number):
            line = json.dumps(rec, ensure_ascii=False)
            roll = rng.random()
            if roll < BROKEN_RATE / 2:
                line = line[: len(line) // 2]  # truncated export
            elif roll < BROKEN_RATE:
                rec.pop("doi")  # a record without its DOI
                line = json.dumps(rec, ensure_ascii=False)
            yield line + "\n"
