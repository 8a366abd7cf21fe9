"""The self-correction loop follows Yang et al. (2024) (issue 19 item 5, issue 27 item 1): the
default prompt set is App. A.3/A.4 verbatim (pinned below to the paper's words, embedded
here so the test runs without ../shared; scripts/check_humaneval_data.py --papers checks them
against the paper's file); each critic's feedback goes through the Processor (Sec. 4.2) and the
refine prompt carries both processed feedbacks; the Processor continues on critical comments OR
improvement suggestions and the loop runs until it says "No"; the reviser keeps its
conversation; temperature 0.8; the model is ChatGPT-3.5 (Sec. 4.1/5.2). Our earlier wordings
stay as the named sets `yang2024-paraphrase` and `v1`."""

from __future__ import annotations

from pathlib import Path

import yaml

from medsimp.selfcorrect.backends import Completion
from medsimp.selfcorrect.cache import CachedChat
from medsimp.selfcorrect.loop import parse_verdict, self_correct
from medsimp.selfcorrect.prompts import DEFAULT_TEMPLATES, PROMPT_SETS, load_prompts, prompt_path

ROOT = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
PARAPHRASE = "yang2024-paraphrase"

# Yang et al. (2024), App. A.3.1, A.3.4 and A.4 (Figs. 6 and 7), copied from the paper with
# its placeholders; only the line layout of the figures is ours (compared whitespace-folded).
PAPER = {
    "generator_plain": "Simplify the sentence: <RADIOLOGY SENTENCE>.",
    "generator_cot": "Sentence: <RADIOLOGY SENTENCE>. Can you list all the complicated medical terms "
    "and provide explanations that are understandable by laypeople? Finally, write a "
    "simplification of the original sentence that laypeople can understand.",
    "radiologist": "You are an experienced radiologist, specialized in evaluating the quality of "
    "simplified radiology sentences. Your role is to analyze a given sentence, comparing it to "
    "its simplified version and assessing the quality and simplicity of the simplification. "
    "Your assessment should be based on five key criteria: "
    "Correctness: It's crucial that the simplification correctly reflects the content of the "
    "original radiology sentence. "
    "Completeness: The simplification must retain all the essential information of the "
    "original radiology sentence. "
    "Hallucination: The simplified sentence should not introduce any harmful or misleading "
    "interpretations that are not present in the original radiology sentence. "
    "Structure: The simplification must include clear descriptions of the 1) body parts, 2) the "
    "findings (such as masses, injuries, stones, swelling), and 3) what these findings indicate "
    "(for instance, benign conditions, unclear diagnoses, indications of severity). "
    "Simplicity: Do you think the Simplification is simple enough for laypeople without "
    "medical knowledge? "
    "Radiology Sentence: <RADIOLOGY SENTENCE> Simplification: <SIMPLIFICATION> "
    "Please provide your feedback.",
    "patient": "You are a person who does not have any medical knowledge. You've never taken a "
    "medical-related course or class and struggle to grasp medical concepts. Your task is to "
    "evaluate the clarity and comprehensibility of simplified medical information, providing "
    "feedback on whether you understand all the words and concepts presented. However, you "
    "must not comment on the factuality of the information nor attempt to further simplify the "
    "sentence yourself. Your perspective is vital to ensure the simplification does not contain "
    "any complicated medical terms that you cannot understand. "
    "Simplification: <SIMPLIFICATION> Please provide your feedback.",
    "processor": "Feedback: <FEEDBACK> Are there any critical comments or improvement suggestions "
    'in Feedback? If so, extract them starting with "Yes". Otherwise, say "No".',
    "generator_revise": "Radiologist's feedback: <PROCESSED FEEDBACK> Patient's feedback: "
    "<PROCESSED FEEDBACK> Can you improve your simplification while keeping it concise?",
}
PLACEHOLDERS = {
    "sentence": "<RADIOLOGY SENTENCE>",
    "simplification": "<SIMPLIFICATION>",
    "feedback": "<FEEDBACK>",
    "radiologist_feedback": "<PROCESSED FEEDBACK>",
    "patient_feedback": "<PROCESSED FEEDBACK>",
}


def _fold(text: str) -> str:
    return " ".join(text.split())


class Verbatim:
    """In-process backend for App. A.3's prompts (no system messages): the Radiologist always
    suggests something, the Patient understands; the Processor says "Yes ..." for the
    Radiologist's feedback `yes` times, "No" otherwise."""

    def __init__(self, yes: int):
        self.yes, self.rad_processed = yes, 0
        self.calls: list[list[dict]] = []

    def identity(self):
        return {"backend": "verbatim"}

    def complete(self, messages):
        self.calls.append(messages)
        user = messages[-1]["content"]
        if user.startswith("You are an experienced radiologist"):
            text = "Correct, but 'effusion' may be hard for laypeople."
        elif user.startswith("You are a person"):
            text = "I understand all the words."
        elif user.startswith("Feedback: Correct"):
            self.rad_processed += 1
            text = "Yes, replace 'effusion' with a plain word." if self.rad_processed <= self.yes else "No"
        elif user.startswith("Feedback:"):
            text = "No, there are no critical comments."
        elif "Can you list all the complicated medical terms" in user:
            text = (
                "1. Effusion: fluid that collects.\nSimplification: There is a little fluid by the left lung."
            )
        else:
            n = sum(m["role"] == "assistant" for m in messages)
            text = f"Here is an improved simplification: version {n}"
        return Completion(text, 1, 1)


class Scripted:
    """In-process backend: the Processor says "Yes" (a mere suggestion) `yes` times, then "No"."""

    def __init__(self, yes: int):
        self.yes, self.processor_calls = yes, 0
        self.calls: list[list[dict]] = []

    def identity(self):
        return {"backend": "scripted"}

    def complete(self, messages):
        self.calls.append(messages)
        system = messages[0]["content"]
        if "coordinate" in system:
            self.processor_calls += 1
            text = (
                "Yes\nMaybe use a shorter word than 'effusion'." if self.processor_calls <= self.yes else "No"
            )
        elif system.startswith("You are a radiologist"):
            text = "Correct and complete; a shorter word would help."
        elif system.startswith("You are a patient"):
            text = "I understand it."
        else:
            text = f"SIMPLIFIED: version {sum('assistant' in [m['role'] for m in c] for c in self.calls)}"
        return Completion(text, 1, 1)


def test_processor_yes_no_parsing():
    assert parse_verdict("Yes\nUse a plainer word.") == (True, "Use a plainer word.")
    assert parse_verdict("yes. Summary: explain it") == (True, "explain it")
    assert parse_verdict("No") == (False, "")
    assert parse_verdict("No.") == (False, "")
    assert parse_verdict("Not sure what to say") == (None, "")
    assert parse_verdict("VERDICT: CRITICAL\nSUMMARY: fix x") == (True, "fix x")  # earlier prompts


def test_loop_runs_until_no_on_improvement_suggestions():
    # five rounds of mere suggestions: the old loop (cap 3, "minor style points are not
    # critical") stopped early; the paper's loop revises until the Processor says "No"
    backend = Scripted(yes=5)
    res = self_correct(
        "Small left pleural effusion.",
        "plain",
        CachedChat(backend, None),
        load_prompts(PARAPHRASE),
        max_rounds=int(PARAMS["simplify"]["max_rounds"]),
    )
    sc = res["corrected"]
    assert (sc["rounds_used"], sc["revisions"], sc["stop_reason"]) == (6, 5, "no_critical_comment")
    capped = self_correct(
        "Small left pleural effusion.",
        "plain",
        CachedChat(Scripted(yes=5), None),
        load_prompts(PARAPHRASE),
        max_rounds=3,
    )
    assert capped["corrected"]["stop_reason"] == "max_rounds"


def test_reviser_keeps_its_conversation():
    res = self_correct(
        "Small left pleural effusion.",
        "cot",
        CachedChat(Scripted(yes=2), None),
        load_prompts(PARAPHRASE),
        max_rounds=10,
    )
    revises = [t for t in res["transcript"] if t["role"] == "generator_revise"]
    assert [len(t["messages"]) for t in revises] == [4, 6]
    second = revises[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "step by step" in second[1]["content"] and second[2]["content"].startswith("SIMPLIFIED:")
    assert "shorter word" in second[-1]["content"]
    fresh = self_correct(
        "Small left pleural effusion.",
        "cot",
        CachedChat(Scripted(yes=1), None),
        load_prompts(PARAPHRASE),
        max_rounds=10,
        memory=False,
    )
    revise = next(t for t in fresh["transcript"] if t["role"] == "generator_revise")
    assert len(revise["messages"]) == 2 and "Small left pleural effusion." in revise["messages"][1]["content"]


def test_defaults_follow_the_paper():
    sp = PARAMS["simplify"]
    assert sp["openai"]["temperature"] == 0.8 and sp["local"]["temperature"] == 0.8
    assert sp["max_rounds"] >= 10 and sp["reviser_memory"] is True
    assert Path(sp["prompts"]).name == DEFAULT_TEMPLATES.name == "selfcorrect-yang2024.yaml"
    assert sp["openai"]["model"] == "gpt-3.5-turbo"  # Sec. 4.1 / 5.2: ChatGPT-3.5
    from medsimp.params_schema import Simplify

    schema = Simplify()
    assert Path(schema.prompts).name == DEFAULT_TEMPLATES.name
    assert schema.openai.model == "gpt-3.5-turbo" and schema.openai.temperature == 0.8
    prompts = load_prompts()
    assert (prompts.version, prompts.flow) == ("yang2024-appA3", "per_agent")


def test_default_templates_are_the_papers_words():
    prompts = load_prompts(ROOT / PARAMS["simplify"]["prompts"])  # the file params.yaml names
    for role, paper in PAPER.items():
        raw = prompts.raw[role]
        for name, mark in PLACEHOLDERS.items():
            raw = raw.replace("{{ " + name + " }}", mark)
        assert _fold(raw) == _fold(paper), role
    # no persona for Generator and Processor (Sec. 4.2): no system message is sent
    for key in ("generator_system", "processor_system", "radiologist_system", "patient_system"):
        assert prompts.raw[key].strip() == ""
    assert prompts.messages("generator_plain", sentence="Small effusion") == [
        {"role": "user", "content": "Simplify the sentence: Small effusion."}
    ]
    rad = prompts.user("radiologist", sentence="S1", simplification="S2")
    assert "Simplicity: Do you think the Simplification is simple enough" in rad  # the fifth criterion
    assert rad.endswith("Radiology Sentence: S1\nSimplification: S2\n\nPlease provide your feedback.")
    pat = prompts.user("patient", simplification="S2")
    assert "you must not comment on the factuality of the information nor attempt to further simplify" in pat
    refine = prompts.user("generator_revise", radiologist_feedback="R", patient_feedback="P")
    assert refine == (
        "Radiologist's feedback: R\nPatient's feedback: P\n"
        "Can you improve your simplification while keeping it concise?"
    )


def test_named_prompt_sets_stay_available():
    assert set(PROMPT_SETS) == {"yang2024", "yang2024-paraphrase", "v1"}
    assert prompt_path("yang2024") == DEFAULT_TEMPLATES == prompt_path(None)
    para = load_prompts(PARAPHRASE)
    assert (para.version, para.flow) == ("yang2024-paraphrase-1", "combined")
    assert "critical comments or improvement suggestions" in para.raw["processor"]
    cot = para.raw["generator_cot"].lower()
    assert "serious" not in cot and "severity" not in cot  # no severity steer in CoT
    assert load_prompts("v1").version == "selfcorrect-v1"
    assert "NOT VERBATIM" not in DEFAULT_TEMPLATES.read_text(encoding="utf-8")


def test_each_critic_goes_through_the_processor_and_both_fill_the_refine_prompt():
    backend = Verbatim(yes=2)
    res = self_correct("Small left pleural effusion.", "cot", CachedChat(backend, None), load_prompts(), 10)
    assert res["first"]["text"] == "There is a little fluid by the left lung."  # after "Simplification:"
    roles = [t["role"] for t in res["transcript"]]
    one_round = ["radiologist", "patient", "processor", "processor"]
    assert roles == ["generator_cot"] + (one_round + ["generator_revise"]) * 2 + one_round
    processor = [t for t in res["transcript"] if t["role"] == "processor"]
    assert processor[0]["messages"] == [
        {
            "role": "user",
            "content": "Feedback: Correct, but 'effusion' may be hard for laypeople.\n\n"
            "Are there any critical comments or improvement suggestions in Feedback? If so, "
            'extract them starting with "Yes". Otherwise, say "No".',
        }
    ]
    assert processor[1]["messages"][0]["content"].startswith("Feedback: I understand all the words.")
    revise = [t for t in res["transcript"] if t["role"] == "generator_revise"]
    assert revise[0]["messages"][-1]["content"] == (
        "Radiologist's feedback: Yes, replace 'effusion' with a plain word.\n"
        "Patient's feedback: No, there are no critical comments.\n"
        "Can you improve your simplification while keeping it concise?"
    )
    # the Generator refines in its own conversation (no system message: no persona)
    assert [m["role"] for m in revise[1]["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    sc = res["corrected"]
    assert sc["text"] == "version 2" and (sc["revisions"], sc["stop_reason"]) == (2, "no_critical_comment")


def test_per_agent_flow_without_memory_shows_the_current_simplification():
    res = self_correct(
        "Small left pleural effusion.", "plain", CachedChat(Verbatim(yes=2), None), load_prompts(), 10, False
    )
    revise = [t for t in res["transcript"] if t["role"] == "generator_revise"]
    second = revise[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[0]["content"] == "Simplify the sentence: Small left pleural effusion.."
    assert second[1]["content"] == "version 1"
