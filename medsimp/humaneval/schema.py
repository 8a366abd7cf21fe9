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


# Yang et al. (2024), Fig. 5 (App. A.1): "1 - strongly disagree, 2 - disagree, 3 - neutral,
# 4 - agree, 5 - strongly agree".
AGREE = (
    (1, "1 - strongly disagree"),
    (2, "2 - disagree"),
    (3, "3 - neutral"),
    (4, "4 - agree"),
    (5, "5 - strongly agree"),
)

# Yang et al. (2024), App. A.2, in Fig. 1's order (Critical first); the numbers are A.2's
# (HEALTHY (1) ... CRITICAL (5)). The released data codes them the other way round
# (footnote 2, Critical = 1): see `recode_severity`.
SEVERITY = (
    (
        5,
        "Critical: Describes a medical condition that poses a threat to a person's life. A "
        "critical condition requires urgent care and close monitoring.",
    ),
    (
        4,
        "Serious: Describes a condition that requires medical attention but is not immediately "
        "life-threatening. Treatment may involve hospitalization, medication, or other interventions.",
    ),
    (
        3,
        "Moderate: Describes a condition that is not severe but may require medical attention and "
        "treatment. The condition may cause discomfort or affect a person's ability to carry out "
        "normal activities.",
    ),
    (
        2,
        "Mild: Describes a condition that is not serious. The condition may cause minor discomfort "
        "or inconvenience but is unlikely to have a significant impact on a person's overall health.",
    ),
    (1, "Healthy: Findings that are considered normal or benign with no significant abnormalities."),
)
SEVERITY_NAMES = {"Critical": 5, "Serious": 4, "Moderate": 3, "Mild": 2, "Healthy": 1}

# Severity codings. The kit (and Table 2's MSE) uses App. A.2's 1 = healthy ... 5 = critical.
# Yang et al.'s released ratings (and footnote 2) code 1 = critical ... 5 = healthy: recode them with
# `recode_severity(v, "critical_first")` before comparing with kit-coded answers.
SEVERITY_CODINGS = ("normal_first", "critical_first")


def recode_severity(value: int, coding: str) -> int:
    """A severity answer in the kit's coding (1 = normal ... 5 = critical)."""
    if coding not in SEVERITY_CODINGS:
        raise ValueError(f"unknown severity coding {coding!r} (expected one of {SEVERITY_CODINGS})")
    if value not in (1, 2, 3, 4, 5):
        raise ValueError(f"severity {value} is not on the 1-5 scale")
    return value if coding == "normal_first" else 6 - value


# Yang et al. (2024), Fig. 5 (App. A.1): the expert form's five aspects, each on AGREE.
EXPERT_PER_OUTPUT = (
    Question(
        "correctness",
        "Correctness: all information in the simplification is medically correct.",
        "scale",
        AGREE,
    ),
    Question(
        "completeness",
        "Completeness: The simplification must retain all the essential information of the original "
        "radiology sentence.",
        "scale",
        AGREE,
    ),
    Question(
        "hallucination",
        "Hallucination: The simplified sentence should not introduce any harmful or misleading "
        "interpretations that are not in the original sentence.",
        "scale",
        AGREE,
    ),
    Question(
        "structure",
        "Structure: The simplification must include clear descriptions of 1) body parts, 2) the "
        "findings (such as masses, injuries, stones, swelling), and 3) what these findings indicate "
        "(for instance, benign conditions, unclear diagnoses, indications of severity).",
        "scale",
        AGREE,
    ),
    Question(
        "simplicity",
        "Simplicity: From your personal perspective, the simplification is simple enough for "
        "laypeople to understand.",
        "scale",
        AGREE,
    ),
    Question(
        "justification",
        "[Optional] You are asked to provide your optional comments/justifications about your ratings.",
        "text",
        required=False,
    ),
)
# Per original sentence: its severity (Sec. 5.4, App. A.2's five levels) and its simplicity
# (Table 1's "Original Sentence" column: 1.500; Sec. 5.4 "Do you think laypeople can understand
# the sentence?"), read by Table 1 as ("expert", "simplicity", "original").
EXPERT_PER_ITEM = (
    Question("severity", "Severity of the described medical condition (App. A.2)", "scale", SEVERITY),
    Question(
        "simplicity",
        "Simplicity of the original sentence: Do you think laypeople can understand the sentence?",
        "scale",
        AGREE,
    ),
)

# Yang et al. (2024), Fig. 1: the layperson form's wording; numbers of footnote 2 (Q1 1..4,
# Q2 1..3, Q4 -1..2; Q3 in App. A.2's numbers, see SEVERITY).
Q1 = Question(
    "q1",
    "Q1: You understand the meaning of the sentence",
    "scale",
    ((1, "Not at all"), (2, "Some parts"), (3, "Most parts"), (4, "Completely")),
)
Q2 = Question(
    "q2",
    "Q2: Can you guess the level of severity of the medical condition described in the sentence?",
    "scale",
    ((1, "Not at all"), (2, "With low confidence"), (3, "With high confidence")),
)
Q3 = Question(
    "q3", "Q3: Make your best guess about the severity of the described medical condition.", "scale", SEVERITY
)
Q4 = Question(
    "q4",
    "Q4: Has the simplified sentence improved your understanding of the original sentence?",
    "scale",
    ((-1, "Further confused"), (0, "Not help"), (1, "Slightly better"), (2, "Much better")),
)
LAY_ORIGINAL = (Q1, Q2, Q3)
LAY_SIMPLIFIED = (Q1, Q2, Q3, Q4)
LAY_PREFERENCE = (
    Question("q5", "Q5: Which simplifications do you like the most?", "set"),
    Question("q5_why", "Please provide your justifications.", "text", required=False),
    Question("q6", "Q6: Which simplifications do you like the least?", "set"),
    Question("q6_why", "Please provide your justifications.", "text", required=False),
)
# Joseph et al. (2023), "Multilingual Simplification of Medical Texts", App. A ("the exact
# framework that annotators used"): lower is better for factuality and fluency (0 = completely
# factual / no fluency issues, 2 = severe errors); simplicity is centred on the ideal (0),
# negative = oversimplified, positive = under-simplified. Prompts and labels are App. A's words
# (its worked examples are not on the form). The released ratings (data/eval_data/*) use the
# same coding, so means read directly against the paper's Table 5.
MULTICOCHRANE = (
    Question(
        "factuality",
        "Factual (faithful to input): how factually consistent is the model-generated output?",
        "scale",
        (
            (0, "0 - Completely factual"),
            (1, "1 - Inconsequential factual errors"),
            (2, "2 - Severe factual errors"),
        ),
    ),
    Question(
        "fluency",
        "Fluency: how well does the model-generated output follow grammatical rules and appear as a "
        "natural sentence?",
        "scale",
        (
            (0, "0 - No fluency issues"),
            (1, "1 - Superficial issues"),
            (2, "2 - Severe fluency issues that obfuscate the meaning of the sentence"),
        ),
    ),
    Question(
        "simplicity",
        "Simplicity: rate the level of simplification that occurred from the original English "
        "sentence to the model-generated output. Note: since the input readability is varied, "
        "please make judgements independent of the input.",
        "scale",
        (
            (
                -2,
                "-2 - Output is severely oversimplified to the point where the original intent of "
                "the original sentence has been lost.",
            ),
            (
                -1,
                "-1 - Output is oversimplified, missing some important details. However, the intent "
                "of the original sentence is preserved.",
            ),
            (
                0,
                "0 - Output is ideally simplified. It is readable to the average layman and does "
                "not omit important details.",
            ),
            (
                1,
                "1 - Output should be simplified more and include uncommon technical terms without "
                "any elaboration/explanation.",
            ),
            (
                2,
                "2 - Output should be simplified MUCH more. There is little to no change in the style "
                "of the sentence from the original sentence, and the output is difficult for the "
                "average layman to understand.",
            ),
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
