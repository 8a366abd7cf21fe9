"""Generator -> Radiologist + Layperson critics -> Processor rounds for one sentence.

Yang et al. (2024), Sec. 4: round 0 is the Generator's first answer (the Plain or CoT
variant). Each later round asks both critics about the current simplification; the
Processor says whether their feedback holds any critical comment or improvement suggestion
("Yes": its summary goes back to the Generator, which revises in the same conversation, so
it remembers its earlier answers; "No": the loop stops). `max_rounds` is only a safety cap
(set high; runs that hit it are reported with `stop_reason: max_rounds`).
`memory=False` gives the reviser a fresh single-turn prompt instead (our earlier variant).

Two flows (the prompt set's `flow`): `per_agent` (Sec. 4.2 and App. A.3.4, the default set
`yang2024`): each critic's feedback goes through the Processor on its own ("Feedback:
<FEEDBACK>"); the loop stops when neither processed feedback starts with "Yes", else the
refine prompt carries the Radiologist's and the Patient's processed feedback in its two
slots. `combined` (our earlier sets): one Processor call reads both critics and its summary
fills the refine prompt's single `feedback` slot.

A Processor reply that is neither Yes/No nor `VERDICT:` is unreadable. The paper iterates
"until Processor determines that no further improvement is needed" (Sec. 4.2), so one Yes is
enough to revise (the unreadable reply fills its slot as written, like a "No ..." reply); the
loop stops on an unreadable reply only when no Processor said Yes (`unparseable_verdict`).
Each variant counts them (`unreadable_verdicts`, of which `unreadable_beside_yes` revised
anyway); the stage reports the counts once per reason, never the replies (they may quote the
input, which can be MIMIC-derived).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from medsimp.selfcorrect.cache import CachedChat
from medsimp.selfcorrect.prompts import PromptSet

_VERDICT = re.compile(r"VERDICT:\s*(CRITICAL|NONE)", re.IGNORECASE)
_SUMMARY = re.compile(r"SUMMARY:\s*(.+)", re.IGNORECASE | re.DOTALL)
_YES_NO = re.compile(r"^\W*(yes|no)\b[\s.:,;!-]*", re.IGNORECASE)


def extract_answer(reply: str, marker: str = "SIMPLIFIED:") -> str:
    """The text after the last match of `marker` (a regex; else the whole reply), on one line."""
    parts = re.split(marker, reply, flags=re.IGNORECASE)
    text = parts[-1] if len(parts) > 1 else reply
    return " ".join(text.split())


def parse_verdict(reply: str) -> tuple[bool | None, str]:
    """(continue?, summary) from a Processor reply; None when unparseable.

    The paper's Processor answers "Yes" (critical comments or improvement suggestions:
    continue) or "No" (stop) first; the summary is the rest of the reply. Our earlier
    prompts' `VERDICT: CRITICAL|NONE` + `SUMMARY:` is read too.
    """
    yn = _YES_NO.match(reply)
    if yn:
        go = yn.group(1).lower() == "yes"
        rest = reply[yn.end() :]
        s = _SUMMARY.search(rest)
        return go, " ".join((s.group(1) if s else rest).split()) if go else ""
    m = _VERDICT.search(reply)
    if not m:
        return None, ""
    critical = m.group(1).upper() == "CRITICAL"
    s = _SUMMARY.search(reply)
    summary = " ".join(s.group(1).split()) if s else " ".join(reply[m.end() :].split())
    return critical, summary


@dataclass
class Tally:
    """Token and call counts of one loop."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    turns: list[dict[str, Any]] = field(default_factory=list)


def _ask(
    chat: CachedChat,
    prompts: PromptSet,
    role: str,
    tally: Tally,
    round_no: int,
    history: list[dict[str, str]] | None = None,
    **values,
) -> str:
    messages = history if history is not None else prompts.messages(role, **values)
    result, _cached = chat.complete(messages)
    tally.calls += 1
    tally.prompt_tokens += result.prompt_tokens
    tally.completion_tokens += result.completion_tokens
    tally.turns.append(
        {
            "round": round_no,
            "role": role,
            "messages": messages,
            "reply": result.text,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
        }
    )
    return result.text


def _revise(
    chat: CachedChat,
    prompts: PromptSet,
    tally: Tally,
    round_no: int,
    conversation: list[dict[str, str]],
    values: dict[str, Any],
    memory: bool,
    opening: int,
) -> str:
    """The Generator's refined simplification (in its conversation when `memory`). Without
    memory: a fresh prompt (`combined`), or for `per_agent` (whose refine prompt names no
    sentence) the opening prompt, the current simplification and the refine prompt."""
    refine = {"role": "user", "content": prompts.user("generator_revise", **values)}
    if memory:
        conversation.append(refine)
        reply = _ask(chat, prompts, "generator_revise", tally, round_no, history=list(conversation))
        conversation.append({"role": "assistant", "content": reply})
    elif prompts.flow == "per_agent":
        history = conversation[:opening] + [
            {"role": "assistant", "content": values["simplification"]},
            refine,
        ]
        reply = _ask(chat, prompts, "generator_revise", tally, round_no, history=history)
    else:
        reply = _ask(chat, prompts, "generator_revise", tally, round_no, None, **values)
    return extract_answer(reply, prompts.answer_marker)


def self_correct(
    sentence: str, mode: str, chat: CachedChat, prompts: PromptSet, max_rounds: int, memory: bool = True
) -> dict[str, Any]:
    """Both variants of one mode ("plain" or "cot"): the first answer and the corrected one."""
    if mode not in ("plain", "cot"):
        raise ValueError(f"mode must be plain or cot, not {mode!r}")
    tally = Tally()
    conversation = prompts.messages(f"generator_{mode}", sentence=sentence)
    opening = len(conversation)
    reply = _ask(chat, prompts, f"generator_{mode}", tally, 0, history=list(conversation))
    conversation.append({"role": "assistant", "content": reply})
    first = extract_answer(reply, prompts.answer_marker)
    first_tokens = (tally.prompt_tokens, tally.completion_tokens)
    current, rounds, revisions, stop = first, 0, 0, "max_rounds"
    unreadable = unreadable_beside_yes = 0
    for round_no in range(1, max_rounds + 1):
        rounds = round_no
        rad = _ask(chat, prompts, "radiologist", tally, round_no, sentence=sentence, simplification=current)
        pat = _ask(chat, prompts, "patient", tally, round_no, simplification=current)
        values: dict[str, Any]
        if prompts.flow == "per_agent":
            processed = [
                _ask(chat, prompts, "processor", tally, round_no, feedback=fb).strip() for fb in (rad, pat)
            ]
            verdicts = [parse_verdict(p)[0] for p in processed]
            unreadable += verdicts.count(None)
            if not any(verdicts):  # no Processor asked for an improvement
                stop = "unparseable_verdict" if None in verdicts else "no_critical_comment"
                break
            unreadable_beside_yes += verdicts.count(None)
            values = {
                "sentence": sentence,
                "simplification": current,
                "radiologist_feedback": processed[0],
                "patient_feedback": processed[1],
                "memory": memory,
            }
            current = _revise(chat, prompts, tally, round_no, conversation, values, memory, opening)
            revisions += 1
            continue
        go_on, summary = parse_verdict(
            _ask(
                chat,
                prompts,
                "processor",
                tally,
                round_no,
                sentence=sentence,
                simplification=current,
                radiologist=rad,
                patient=pat,
            )
        )
        if go_on is None:
            unreadable += 1
            stop = "unparseable_verdict"
            break
        if not go_on:
            stop = "no_critical_comment"
            break
        values = {"sentence": sentence, "simplification": current, "feedback": summary, "memory": memory}
        current = _revise(chat, prompts, tally, round_no, conversation, values, memory, opening)
        revisions += 1
    return {
        "first": {"text": first, "prompt_tokens": first_tokens[0], "completion_tokens": first_tokens[1]},
        "corrected": {
            "text": current,
            "rounds_used": rounds,
            "revisions": revisions,
            "stop_reason": stop,
            "unreadable_verdicts": unreadable,
            "unreadable_beside_yes": unreadable_beside_yes,
            "prompt_tokens": tally.prompt_tokens,
            "completion_tokens": tally.completion_tokens,
        },
        "transcript": tally.turns,
        "calls": tally.calls,
    }
