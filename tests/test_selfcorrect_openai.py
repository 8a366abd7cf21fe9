"""Self-correction loop and `medsimp simplify` against a local fake chat-completions server."""

from __future__ import annotations

import json
import os

import pytest

from medsimp.cli import main
from medsimp.selfcorrect.backends import BackendError, OpenAIChat, RateLimiter
from medsimp.selfcorrect.cache import CachedChat
from medsimp.selfcorrect.fake_server import FakeChatServer
from medsimp.selfcorrect.loop import extract_answer, parse_verdict, self_correct
from medsimp.selfcorrect.prompts import load_prompts

os.environ.setdefault("HF_HUB_OFFLINE", "1")
MSG = [{"role": "system", "content": "You are a patient"}, {"role": "user", "content": "hi there"}]


def _chat(url: str, **kw) -> OpenAIChat:
    kw.setdefault("backoff", 0.01)
    return OpenAIChat(url, "fake-model", timeout=5, **kw)


def test_protocol_usage_and_auth(monkeypatch):
    monkeypatch.setenv("MEDSIMP_TEST_KEY", "sk-test")
    with FakeChatServer() as srv:
        res = _chat(srv.url, api_key_env="MEDSIMP_TEST_KEY", temperature=0.3).complete(MSG)
    assert res.text == "ALL CLEAR"
    assert (res.prompt_tokens, res.completion_tokens) == (6, 2)
    req = srv.requests[0]
    assert req["authorization"] == "Bearer sk-test"
    assert req["body"]["model"] == "fake-model" and req["body"]["temperature"] == 0.3
    assert req["body"]["messages"] == MSG


def test_retries_429_and_500_then_succeeds():
    with FakeChatServer(fail_first=[429, 500, 503], retry_after="0") as srv:
        chat = _chat(srv.url, max_retries=3)
        assert chat.complete(MSG).text == "ALL CLEAR"
    assert len(srv.requests) == 4 and chat.retries == 3


def test_gives_up_with_clear_error_and_no_prompt_text():
    with FakeChatServer(fail_always=True) as srv:
        with pytest.raises(BackendError, match=r"gave up after 3 attempts \(last: HTTP 500\)") as e:
            _chat(srv.url, max_retries=2).complete(MSG)
    assert "hi there" not in str(e.value)


def test_non_retryable_status_fails_fast():
    with FakeChatServer() as srv:
        with pytest.raises(BackendError, match="HTTP 404"):
            _chat(srv.url + "/wrong").complete(MSG)
    assert srv.requests == []


def test_retries_are_urllib3s_retry_on_the_session_adapter():
    from urllib3.util.retry import Retry

    from medsimp.selfcorrect.backends import RETRY_STATUS

    chat = _chat("http://127.0.0.1:9/v1", max_retries=3, max_backoff=7)
    retry = chat._session().get_adapter(chat.base_url).max_retries
    assert isinstance(retry, Retry) and retry.total == 3 and retry.allowed_methods is None
    assert set(retry.status_forcelist) == RETRY_STATUS and retry.respect_retry_after_header
    assert (retry.backoff_factor, retry.backoff_max, retry.retry_after_max) == (0.01, 7, 7)
    assert not retry.raise_on_status


def test_retry_after_is_honoured_up_to_max_backoff():
    import time

    with FakeChatServer(fail_first=[429], retry_after="30") as srv:
        chat = _chat(srv.url, max_retries=1, max_backoff=1)
        start = time.monotonic()
        assert chat.complete(MSG).text == "ALL CLEAR"
        assert 0.9 <= time.monotonic() - start < 10 and chat.retries == 1


def test_unreadable_retry_after_falls_back_to_the_backoff():
    with FakeChatServer(fail_first=[503], retry_after="soon") as srv:
        chat = _chat(srv.url, max_retries=1)
        assert chat.complete(MSG).text == "ALL CLEAR" and len(srv.requests) == 2


def test_connection_errors_are_retried_and_named():
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    chat = _chat(f"http://127.0.0.1:{port}/v1", max_retries=2)
    with pytest.raises(BackendError, match=r"gave up after 3 attempts \(last: NewConnectionError\)"):
        chat.complete(MSG)
    assert (chat.requests_sent, chat.retries) == (3, 2)


def test_rate_limiter_spaces_calls():
    now = [0.0]
    slept: list[float] = []
    lim = RateLimiter(120, clock=lambda: now[0], sleep=slept.append)
    for _ in range(3):
        lim.wait()
    assert slept == [0.5, 1.0]


def test_parsers():
    assert extract_answer("step 1\nSIMPLIFIED:  A  b\nc") == "A b c"
    assert extract_answer("just text") == "just text"
    assert parse_verdict("VERDICT: CRITICAL\nSUMMARY: fix x") == (True, "fix x")
    assert parse_verdict("verdict: none") == (False, "")
    assert parse_verdict("unsure") == (None, "")


def test_loop_revises_once_then_stops(tmp_path):
    with FakeChatServer() as srv:
        chat = CachedChat(_chat(srv.url), str(tmp_path))
        res = self_correct("Small left pleural effusion.", "plain", chat, load_prompts(), 3)
    assert res["first"]["text"] == "There is some fluid near the lung."
    sc = res["corrected"]
    assert sc["text"].endswith("revised to say it is not serious.")
    assert (sc["rounds_used"], sc["revisions"], sc["stop_reason"]) == (2, 1, "no_critical_comment")
    roles = [t["role"] for t in res["transcript"]]
    assert roles == [  # Yang et al. Sec. 4.2: each critic's feedback through the Processor
        "generator_plain",
        "radiologist",
        "patient",
        "processor",
        "processor",
        "generator_revise",
        "radiologist",
        "patient",
        "processor",
        "processor",
    ]
    assert sc["prompt_tokens"] == sum(t["prompt_tokens"] for t in res["transcript"])


def test_max_rounds_bounds_the_loop(tmp_path):
    with FakeChatServer() as srv:
        chat = CachedChat(_chat(srv.url), None)
        res = self_correct("Small left pleural effusion.", "cot", chat, load_prompts(), 1)
    assert res["first"]["text"] == "There is a little fluid near the lung."
    assert (res["corrected"]["rounds_used"], res["corrected"]["stop_reason"]) == (1, "max_rounds")


def _params(tmp_path, url: str, extra: str = "") -> str:
    p = tmp_path / "params.yaml"
    p.write_text(f"""
simplify:
  enabled: true
  backend: openai
  max_rounds: 3
  concurrency: 2
  openai: {{base_url: "{url}", model: fake-model, backoff: 0.01, max_retries: 1, timeout: 5}}
{extra}
cache: {{dir: "{tmp_path / "cache"}"}}
""")
    return str(p)


def _input(tmp_path) -> str:
    p = tmp_path / "sents.jsonl"
    rows = [
        {"sentence_id": f"r:{i}", "text": t}
        for i, t in enumerate(["Small left pleural effusion.", "No pneumothorax.", "  "])
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def test_simplify_command_end_to_end_and_resume(tmp_path):
    out, inp = tmp_path / "out", _input(tmp_path)
    with FakeChatServer(fail_always=True) as srv:  # a run that dies: every call fails
        params = _params(tmp_path, srv.url)
        assert main(["--params", params, "simplify", "--input", inp, "--output", str(out)]) == 4
    stats = json.loads((out / "stats.json").read_text())
    assert (stats["read"], stats["kept"], stats["filtered"], stats["rejected"]) == (3, 0, 1, 2)
    dead = [json.loads(x) for x in (out / "dead_letter" / "part-00000.jsonl").read_text().splitlines()]
    assert [d["locator"] for d in dead] == ["r:0", "r:1"] and "effusion" not in json.dumps(dead)

    with FakeChatServer() as srv:
        params = _params(tmp_path, srv.url)
        assert (
            main(["--params", params, "simplify", "--input", inp, "--output", str(out), "--limit", "1"]) == 0
        )
        first_calls = len(srv.requests)
        # 2 modes x 10 turns (two Processor calls a round, Yang et al. Sec. 4.2) = 20, minus the
        # turns whose messages repeat: the Processor on the Patient's unchanged feedback, and in
        # the CoT mode the Processor on the Radiologist's first feedback and all round-2 critics
        assert first_calls == 13
        assert (
            main(
                [
                    "--params",
                    params,
                    "simplify",
                    "--input",
                    inp,
                    "--output",
                    str(out),
                    "--metrics",
                    str(tmp_path / "m.json"),
                ]
            )
            == 0
        )
        # the first sentence came from the cache: only the second one was paid for, and its
        # Patient and Processor turns (which see only the simplification or the feedback) were
        # cache hits as well: 2 generator + 2 revise + 3 Radiologist calls
        assert len(srv.requests) - first_calls == 7
        before = (out / "simplifications.jsonl").read_bytes()
        assert main(["--params", params, "simplify", "--input", inp, "--output", str(out)]) == 0
        assert len(srv.requests) - first_calls == 7  # fully cached rerun
    assert (out / "simplifications.jsonl").read_bytes() == before
    recs = [json.loads(x) for x in before.decode().splitlines()]
    assert [r["sentence_id"] for r in recs] == ["r:0", "r:1"]
    assert set(recs[0]["variants"]) == {"plain", "plain_sc", "cot", "cot_sc"}
    assert recs[0]["variants"]["cot_sc"]["revisions"] == 1
    assert set(recs[0]["variants"]["plain"]["readability"]) == {"fkgl", "gunning_fog", "ari"}
    lines = (out / "variants.csv").read_text().splitlines()
    assert lines[0].startswith("sentence_id,variant,source,output") and len(lines) == 9
    m = json.loads((tmp_path / "m.json").read_text())
    assert json.loads((tmp_path / "m.json.run.json").read_text())["cache_hits"] > 0
    assert m["kept"] == 2 and "cache_hits" not in m
    stats = json.loads((out / "stats.json").read_text())
    assert stats["variants"]["plain_sc"]["mean_rounds_used"] == 2


def test_disabled_stage_skips_with_message(tmp_path, capsys):
    p = tmp_path / "params.yaml"
    p.write_text("simplify: {enabled: false}\n")
    out = tmp_path / "out"
    assert (
        main(["--params", str(p), "simplify", "--output", str(out), "--metrics", str(tmp_path / "m.json")])
        == 0
    )
    assert "skipped" in capsys.readouterr().err
    assert json.loads((out / "stats.json").read_text())["skipped"] is True
    assert json.loads((tmp_path / "m.json").read_text())["read"] == 0


def test_enabled_without_endpoint_is_a_clear_error(tmp_path, capsys):
    p = tmp_path / "params.yaml"
    p.write_text("simplify: {enabled: true, backend: openai}\n")
    assert (
        main(["--params", str(p), "simplify", "--input", _input(tmp_path), "--output", str(tmp_path / "o")])
        == 2
    )
    assert "base_url" in capsys.readouterr().err


def test_an_unreadable_processor_reply_does_not_stop_the_others_yes(tmp_path, capsys):
    # issue 54, fidelity row "Processor per critic": Yang et al. Sec. 4.2 iterate "until
    # Processor determines that no further improvement is needed". The Patient's Processor
    # answers neither Yes nor No; the Radiologist's says Yes in round 1: the old loop stopped
    # there (unparseable_verdict, no revision), the paper's revises, then stops in round 2 when
    # no Processor says Yes. The unreadable replies are reported once per reason, never quoted.
    unreadable = {"Feedback: I understand all the words.": "Perhaps, hard to say."}
    with FakeChatServer(answers=unreadable) as srv:
        res = self_correct(
            "Small left pleural effusion.", "plain", CachedChat(_chat(srv.url), None), load_prompts(), 10
        )
        sc = res["corrected"]
        assert sc["text"].endswith("revised to say it is not serious.")
        assert (sc["rounds_used"], sc["revisions"], sc["stop_reason"]) == (2, 1, "unparseable_verdict")
        assert (sc["unreadable_verdicts"], sc["unreadable_beside_yes"]) == (2, 1)
        revise = next(t for t in res["transcript"] if t["role"] == "generator_revise")
        assert revise["messages"][-1]["content"].startswith(
            "Radiologist's feedback: Yes, explain how serious the finding is.\n"
            "Patient's feedback: Perhaps, hard to say.\n"
        )
        out, inp = tmp_path / "out", _input(tmp_path)
        capsys.readouterr()
        assert (
            main(["--params", _params(tmp_path, srv.url), "simplify", "--input", inp, "--output", str(out)])
            == 0
        )
    err = capsys.readouterr().err
    stats = json.loads((out / "stats.json").read_text())
    assert stats["variants"]["plain_sc"]["unreadable_verdicts"] == 4  # 2 sentences x 2 rounds
    assert stats["variants"]["plain_sc"]["mean_rounds_used"] == 2
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert notes == [
        "note: 4 unreadable Processor repl(ies) beside a Yes: revised, as in the paper",
        "note: 4 loop(s) stopped at an unreadable Processor reply with no Yes (unparseable_verdict)",
    ]
    assert "effusion" not in err and "pneumothorax" not in err and "hard to say" not in err
