"""Generator -> Radiologist + Patient critics -> Processor rounds for one sentence.

Round 0 is the Generator's first answer (the Plain or CoT variant). Each later round
asks both critics about the current simplification; the Processor decides whether the
feedback holds a critical comment. If not, the loop stops; if so, its summary goes to
the Generator, which revises. The loop also stops after `max_rounds` critique rounds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from medsimp.selfcorrect.cache import CachedChat
from medsimp.selfcorrect.prompts import PromptSet

_VERDICT = re.compile(r"VERDICT:\s*(CRITICAL|NONE)", re.IGNORECASE)
_SUMMARY = re.compile(r"SUMMARY:\s*(.+)", re.IGNORECASE | re.DOTALL)


def extract_answer(reply: str) -> str:
    """The text after the last "SIMPLIFIED:" marker (else the whole reply), on one line."""
    parts = re.split(r"SIMPLIFIED:", reply, flags=re.IGNORECASE)
    text = parts[-1] if len(parts) > 1 else reply
    return " ".join(text.split())


def parse_verdict(reply: str) -> tuple[bool | None, str]:
    """(critical?, summary) from a Processor reply; critical is None when unparseable."""
    m = _VERDICT.search(reply)
    if not m:
        return None, ""
    critical = m.group(1).upper() == "CRITICAL"
    s = _SUMMARY.search(reply)
    summary = " ".join(s.group(1).split()) if s else " ".join(reply[m.end():].split())
    return critical, summary


@dataclass
class Tally:
    """Token and call counts of one loop."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    turns: list[dict[str, Any]] = field(default_factory=list)


def _ask(chat: CachedChat, prompts: PromptSet, role: str, tally: Tally, round_no: int,
         **values: str) -> str:
    messages = prompts.messages(role, **values)
    result, _cached = chat.complete(messages)
    tally.calls += 1
    tally.prompt_tokens += result.prompt_tokens
    tally.completion_tokens += result.completion_tokens
    tally.turns.append({"round": round_no, "role": role, "messages": messages,
                        "reply": result.text, "prompt_tokens": result.prompt_tokens,
                        "completion_tokens": result.completion_tokens})
    return result.text


def self_correct(sentence: str, mode: str, chat: CachedChat, prompts: PromptSet,
                 max_rounds: int) -> dict[str, Any]:
    """Both variants of one mode ("plain" or "cot"): the first answer and the corrected one."""
    if mode not in ("plain", "cot"):
        raise ValueError(f"mode must be plain or cot, not {mode!r}")
    tally = Tally()
    first = extract_answer(_ask(chat, prompts, f"generator_{mode}", tally, 0, sentence=sentence))
    first_tokens = (tally.prompt_tokens, tally.completion_tokens)
    current, rounds, revisions, stop = first, 0, 0, "max_rounds"
    for round_no in range(1, max_rounds + 1):
        rounds = round_no
        rad = _ask(chat, prompts, "radiologist", tally, round_no, sentence=sentence,
                   simplification=current)
        pat = _ask(chat, prompts, "patient", tally, round_no, simplification=current)
        critical, summary = parse_verdict(_ask(chat, prompts, "processor", tally, round_no,
                                               sentence=sentence, simplification=current,
                                               radiologist=rad, patient=pat))
        if critical is None:
            stop = "unparseable_verdict"
            break
        if not critical:
            stop = "no_critical_comment"
            break
        current = extract_answer(_ask(chat, prompts, "generator_revise", tally, round_no,
                                      sentence=sentence, simplification=current,
                                      feedback=summary))
        revisions += 1
    return {
        "first": {"text": first, "prompt_tokens": first_tokens[0],
                  "completion_tokens": first_tokens[1]},
        "corrected": {"text": current, "rounds_used": rounds, "revisions": revisions,
                      "stop_reason": stop, "prompt_tokens": tally.prompt_tokens,
                      "completion_tokens": tally.completion_tokens},
        "transcript": tally.turns,
        "calls": tally.calls,
    }
