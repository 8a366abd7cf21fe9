"""Questions, answer scales and the response row format of every form."""

from __future__ import annotations

from dataclasses import dataclass

CSV_COLUMNS = ("form", "rater_id", "item_id", "stage", "system", "question", "answer")
FORMS = ("expert", "layperson", "multicochrane")
SET_SEPARATOR = "|"


@dataclass(frozen=True)
class Question:
    """One question. kind: scale (integer in `options`), set (non-empty subset of systems), text."""

    qid: str
    prompt: str
    kind: str
    options: tuple[tuple[int, str], ...] = ()
    required: bool = True

    def values(self) -> tuple[int, ...]:
        return tuple(v for v, _ in self.options)


def _likert(low: str, high: str) -> tuple[tuple[int, str], ...]:
    return ((1, f"1 - {low}"), (2, "2"), (3, "3"), (4, "4"), (5, f"5 - {high}"))


SEVERITY = (
    (1, "1 - Normal: nothing wrong"),
    (2, "2 - Minor: no action needed"),
    (3, "3 - Moderate: needs follow-up"),
    (4, "4 - Serious: needs treatment soon"),
    (5, "5 - Critical: needs urgent care"),
)

# Severity codings. The kit (and Table 2's MSE) uses 1 = normal ... 5 = critical. Yang et
# al.'s released ratings code 1 = critical ... 5 = normal: recode them with
# `recode_severity(v, "critical_first")` before comparing with kit-coded answers.
SEVERITY_CODINGS = ("normal_first", "critical_first")


def recode_severity(value: int, coding: str) -> int:
    """A severity answer in the kit's coding (1 = normal ... 5 = critical)."""
    if coding not in SEVERITY_CODINGS:
        raise ValueError(f"unknown severity coding {coding!r} (expected one of {SEVERITY_CODINGS})")
    if value not in (1, 2, 3, 4, 5):
        raise ValueError(f"severity {value} is not on the 1-5 scale")
    return value if coding == "normal_first" else 6 - value


EXPERT_PER_OUTPUT = (
    Question(
        "correctness",
        "Correctness: is everything it says right?",
        "scale",
        _likert("many errors", "fully correct"),
    ),
    Question(
        "completeness",
        "Completeness: are all findings of the original kept?",
        "scale",
        _likert("most missing", "complete"),
    ),
    Question(
        "hallucination",
        "Hallucination: does it avoid adding information?",
        "scale",
        _likert("much invented", "nothing invented"),
    ),
    Question(
        "structure",
        "Structure: body part, finding, what it means (with severity)?",
        "scale",
        _likert("none of these", "all three, clearly"),
    ),
    Question(
        "simplicity", "Simplicity: could a patient understand it?", "scale", _likert("not at all", "easily")
    ),
    Question("justification", "Justification (free text)", "text", required=False),
)
EXPERT_PER_ITEM = (Question("severity", "Severity of the finding", "scale", SEVERITY),)

Q1 = Question(
    "q1",
    "Q1. How well do you understand this sentence?",
    "scale",
    ((1, "1 - Not at all"), (2, "2 - A little"), (3, "3 - Mostly"), (4, "4 - Completely")),
)
Q2 = Question(
    "q2",
    "Q2. How confident are you about how serious the finding is?",
    "scale",
    ((1, "1 - Not confident"), (2, "2 - Somewhat confident"), (3, "3 - Very confident")),
)
Q3 = Question("q3", "Q3. How serious do you think the finding is?", "scale", SEVERITY)
# Yang et al. (2024), Sec. 5.2: four levels coded -1..2, from "further confused" to "much
# better" (the two middle labels are ours; the paper's exact wording was not reachable).
Q4 = Question(
    "q4",
    "Q4. Compared with the original alone, how well do you understand it now?",
    "scale",
    (
        (-1, "-1 - I am further confused"),
        (0, "0 - No better"),
        (1, "1 - Somewhat better"),
        (2, "2 - Much better"),
    ),
)
LAY_ORIGINAL = (Q1, Q2, Q3)
LAY_SIMPLIFIED = (Q1, Q2, Q3, Q4)
LAY_PREFERENCE = (
    Question("q5", "Q5. Which version(s) do you prefer most?", "set"),
    Question("q5_why", "Why?", "text", required=False),
    Question("q6", "Q6. Which version(s) do you like least?", "set"),
    Question("q6_why", "Why?", "text", required=False),
)
# Joseph et al. (2023), "Multilingual Simplification of Medical Texts", App. A: lower is
# better for factuality and fluency (0 = completely factual / no fluency issues, 2 = severe
# errors); simplicity is centred on the ideal (0), negative = oversimplified, positive =
# under-simplified. The released ratings (data/eval_data/*) use the same coding, so means
# read directly against the paper's Table 5. The paper's exact App. A wording and examples
# were not reachable from this machine: labels follow the quotation of App. A.
MULTICOCHRANE = (
    Question(
        "factuality",
        "Factuality: does the simplification keep the facts of the input?",
        "scale",
        ((0, "0 - Completely factual"), (1, "1 - Minor factual errors"), (2, "2 - Severe factual errors")),
    ),
    Question(
        "fluency",
        "Fluency: is the simplification well-formed text in its language?",
        "scale",
        ((0, "0 - No fluency issues"), (1, "1 - Minor fluency issues"), (2, "2 - Severe fluency issues")),
    ),
    Question(
        "simplicity",
        "Simplicity: how well is it simplified for a lay reader?",
        "scale",
        (
            (-2, "-2 - Heavily oversimplified"),
            (-1, "-1 - Somewhat oversimplified"),
            (0, "0 - Ideal simplification"),
            (1, "+1 - Somewhat under-simplified"),
            (2, "+2 - Heavily under-simplified"),
        ),
    ),
)
# Lower is better on these MultiCochrane scales (tables/correlations read them this way).
LOWER_IS_BETTER = frozenset({"factuality", "fluency"})

# Per-alignment annotation of MultiCochrane's ANNO-VIEWER (App. J), after Devaraj et al.
# (2022): the factuality error categories insertion / deletion / substitution and the
# elaboration, each 0-2 (0 = none, 2 = a lot). No form uses them yet: the alignment
# annotator (another issue) records these fields per (complex ids, simple ids) alignment.
_ZERO_TWO = ((0, "0 - None"), (1, "1 - Some"), (2, "2 - A lot"))
ALIGNMENT_PER_PAIR = (
    Question(
        "insertion", "Insertion: how much new information does the simple side add?", "scale", _ZERO_TWO
    ),
    Question(
        "deletion", "Deletion: how much information of the complex side is dropped?", "scale", _ZERO_TWO
    ),
    Question(
        "substitution",
        "Substitution: how much information is replaced by something else?",
        "scale",
        _ZERO_TWO,
    ),
    Question(
        "elaboration",
        "Elaboration: how much is added by explaining something of the complex side?",
        "scale",
        _ZERO_TWO,
    ),
)
ALIGNMENT_FACTUALITY = ("insertion", "deletion", "substitution")


def expected(manifest: dict, form: str, rater_id: str) -> list[tuple[str, str, str, Question]]:
    """(item_id, stage, system, question) that a rater of `form` answers, in page order."""
    systems = manifest["systems"]
    rows: list[tuple[str, str, str, Question]] = []
    for item in manifest["items"]:
        iid = item["item_id"]
        if form == "expert":
            rows += [(iid, "original", "", q) for q in EXPERT_PER_ITEM]
            rows += [(iid, "simplified", s, q) for s in systems for q in EXPERT_PER_OUTPUT]
        elif form == "multicochrane":
            rows += [(iid, "simplified", s, q) for s in systems for q in MULTICOCHRANE]
        elif form == "layperson":
            assigned = manifest["layperson_assignment"][rater_id][iid]
            rows += [(iid, "original", "", q) for q in LAY_ORIGINAL]
            rows += [(iid, "simplified", assigned, q) for q in LAY_SIMPLIFIED]
            rows += [(iid, "preference", "", q) for q in LAY_PREFERENCE]
        else:
            raise ValueError(f"unknown form {form!r} (expected one of {FORMS})")
    return rows
