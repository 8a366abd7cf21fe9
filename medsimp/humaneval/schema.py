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


SEVERITY = ((1, "1 - Normal: nothing wrong"), (2, "2 - Minor: no action needed"),
            (3, "3 - Moderate: needs follow-up"), (4, "4 - Serious: needs treatment soon"),
            (5, "5 - Critical: needs urgent care"))

EXPERT_PER_OUTPUT = (
    Question("correctness", "Correctness: is everything it says right?", "scale",
             _likert("many errors", "fully correct")),
    Question("completeness", "Completeness: are all findings of the original kept?", "scale",
             _likert("most missing", "complete")),
    Question("hallucination", "Hallucination: does it avoid adding information?", "scale",
             _likert("much invented", "nothing invented")),
    Question("structure", "Structure: body part, finding, what it means (with severity)?", "scale",
             _likert("none of these", "all three, clearly")),
    Question("simplicity", "Simplicity: could a patient understand it?", "scale",
             _likert("not at all", "easily")),
    Question("justification", "Justification (free text)", "text", required=False),
)
EXPERT_PER_ITEM = (Question("severity", "Severity of the finding", "scale", SEVERITY),)

Q1 = Question("q1", "Q1. How well do you understand this sentence?", "scale",
              ((1, "1 - Not at all"), (2, "2 - A little"), (3, "3 - Mostly"), (4, "4 - Completely")))
Q2 = Question("q2", "Q2. How confident are you about how serious the finding is?", "scale",
              ((1, "1 - Not confident"), (2, "2 - Somewhat confident"), (3, "3 - Very confident")))
Q3 = Question("q3", "Q3. How serious do you think the finding is?", "scale", SEVERITY)
Q4 = Question("q4", "Q4. How helpful was the simplified version?", "scale",
              _likert("not helpful", "very helpful"))
LAY_ORIGINAL = (Q1, Q2, Q3)
LAY_SIMPLIFIED = (Q1, Q2, Q3, Q4)
LAY_PREFERENCE = (
    Question("q5", "Q5. Which version(s) do you prefer most?", "set"),
    Question("q5_why", "Why?", "text", required=False),
    Question("q6", "Q6. Which version(s) do you like least?", "set"),
    Question("q6_why", "Why?", "text", required=False),
)
MULTICOCHRANE = (
    Question("factuality", "Factuality", "scale",
             ((0, "0 - Major errors"), (1, "1 - Minor errors"), (2, "2 - Faithful"))),
    Question("fluency", "Fluency", "scale",
             ((0, "0 - Not fluent"), (1, "1 - Some errors"), (2, "2 - Fluent"))),
    Question("simplicity", "Simplicity compared with the original", "scale",
             ((-2, "-2 - Much harder"), (-1, "-1 - Harder"), (0, "0 - Same"), (1, "+1 - Simpler"),
              (2, "+2 - Much simpler"))),
)


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
