"""The local transformers backend with a tiny GPT-2 built from a config (no hub access)."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from medsimp.cli.app import main  # noqa: E402
from medsimp.selfcorrect.backends import LocalChat  # noqa: E402
from medsimp.selfcorrect.cache import CachedChat  # noqa: E402
from medsimp.selfcorrect.loop import self_correct  # noqa: E402
from medsimp.selfcorrect.prompts import load_prompts  # noqa: E402

WORDS = "the a lung fluid small left there is no chest scan SIMPLIFIED : VERDICT NONE".split()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["[UNK]", "[EOS]", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]", pad_token="[EOS]"
    )
    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=len(vocab), n_positions=512, n_embd=16, n_layer=1, n_head=2, bos_token_id=1, eos_token_id=1
    )
    path = tmp_path_factory.mktemp("tiny-gpt2")
    GPT2LMHeadModel(cfg).save_pretrained(path)
    fast.save_pretrained(path)
    return str(path)


def test_local_backend_counts_tokens_and_is_deterministic(tiny_model):
    chat = LocalChat(tiny_model, max_tokens=6)
    msgs = [{"role": "system", "content": "the lung"}, {"role": "user", "content": "small fluid"}]
    a, b = chat.complete(msgs), chat.complete(msgs)
    assert a == b
    assert 1 <= a.completion_tokens <= 6
    # "System: the lung\n\nUser: small fluid\n\nAssistant:" -> 7 whitespace words
    assert a.prompt_tokens == 7
    assert chat.identity()["config"]["n_layer"] == 1


def test_loop_runs_on_local_model(tiny_model, tmp_path):
    chat = CachedChat(LocalChat(tiny_model, max_tokens=4), str(tmp_path))
    res = self_correct("Small left pleural effusion.", "cot", chat, load_prompts(), 2)
    # a random tiny model never says VERDICT: the loop stops after one critique round
    assert res["corrected"]["stop_reason"] == "unparseable_verdict"
    roles = [t["role"] for t in res["transcript"]]  # each critic through the Processor (Yang et al. Sec. 4.2)
    assert roles == ["generator_cot", "radiologist", "patient", "processor", "processor"]


def test_simplify_command_local_backend(tiny_model, tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(
        f"simplify: {{local: {{path: '{tiny_model}', max_tokens: 3}}, max_rounds: 1}}\n"
        f"cache: {{dir: '{tmp_path / 'cache'}'}}\n"
    )
    inp = tmp_path / "s.jsonl"
    inp.write_text(json.dumps({"sentence_id": "x:1", "text": "No pneumothorax."}) + "\n")
    out = tmp_path / "out"
    assert (
        main(
            [
                "--params",
                str(params),
                "simplify",
                "--backend",
                "local",
                "--input",
                str(inp),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    rec = json.loads((out / "simplifications.jsonl").read_text())
    assert set(rec["variants"]) == {"plain", "plain_sc", "cot", "cot_sc"}
    assert rec["variants"]["plain"]["completion_tokens"] <= 3
