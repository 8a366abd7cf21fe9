"""The self-correction loop follows Yang et al. (2024) (issue 19 item 5): the Processor
continues on critical comments OR improvement suggestions and the loop runs until it says
"No"; the reviser keeps its conversation; temperature 0.8; no severity steer in CoT."""

from __future__ import annotations

from pathlib import Path

import yaml

from medsimp.selfcorrect.backends import Completion
from medsimp.selfcorrect.cache import CachedChat
from medsimp.selfcorrect.loop import parse_verdict, self_correct
from medsimp.selfcorrect.prompts import DEFAULT_TEMPLATES, load_prompts

ROOT = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))


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
        load_prompts(),
        max_rounds=int(PARAMS["simplify"]["max_rounds"]),
    )
    sc = res["corrected"]
    assert (sc["rounds_used"], sc["revisions"], sc["stop_reason"]) == (6, 5, "no_critical_comment")
    capped = self_correct(
        "Small left pleural effusion.",
        "plain",
        CachedChat(Scripted(yes=5), None),
        load_prompts(),
        max_rounds=3,
    )
    assert capped["corrected"]["stop_reason"] == "max_rounds"


def test_reviser_keeps_its_conversation():
    res = self_correct(
        "Small left pleural effusion.",
        "cot",
        CachedChat(Scripted(yes=2), None),
        load_prompts(),
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
        load_prompts(),
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
    prompts = load_prompts()
    text = DEFAULT_TEMPLATES.read_text(encoding="utf-8")
    assert "NOT VERBATIM" in text  # said plainly: App. A.3's wording was not reachable
    assert "critical comments or improvement suggestions" in prompts.raw["processor"]
    assert 'Answer "Yes" or "No"' in prompts.raw["processor"]
    cot = prompts.raw["generator_cot"].lower()
    assert "serious" not in cot and "severity" not in cot  # no severity steer in CoT
    assert "minor" not in prompts.raw["processor"].lower()
