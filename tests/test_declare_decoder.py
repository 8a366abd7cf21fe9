"""RSSP's decoder follows Luo et al. Sec. 4.3 by default: dot attention o_ti = h_t . v_i and
r_t = softmax(W [h_t; s_t] + b); the earlier Luong decoder (bilinear attention, input feeding,
tied output) is the `luong_tied` option. A hand-computed step (issue 27)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

from medsimp.params_schema import Train
from training.declare import RSSP

ROOT = Path(__file__).resolve().parents[1]


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_paper_decoder_step_by_hand():
    torch.manual_seed(0)
    rssp = RSSP(nn.Embedding(3, 2), hidden=2, copy=False)  # the default decoder
    with torch.no_grad():
        for p in rssp.lstm.parameters():
            p.zero_()
        # LSTMCell gate order i, f, g, o: only the cell input g has a bias, (1, -1)
        rssp.lstm.bias_hh[4:6] = torch.tensor([1.0, -1.0])
        rssp.out.weight.copy_(torch.tensor([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]))
        rssp.out.bias.copy_(torch.tensor([0.0, 0.5, -0.5]))
    memory = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # v_1, v_2
    mask = torch.ones(1, 2, dtype=torch.bool)
    state = (torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2))  # h_0 = c_0 = 0
    feat, att, _ = rssp.step(rssp.embeddings(torch.tensor([1])), state, memory, mask)

    # h = o * tanh(i * g) with i = o = sigmoid(0) and g = tanh(+-1)
    h1 = _sigmoid(0) * math.tanh(_sigmoid(0) * math.tanh(1.0))
    h = [h1, -h1]
    o = [h[0] * 1 + h[1] * 0, h[0] * 0 + h[1] * 1]  # o_ti = h_t . v_i
    z = math.exp(o[0]) + math.exp(o[1])
    alpha = [math.exp(o[0]) / z, math.exp(o[1]) / z]
    s = [alpha[0], alpha[1]]  # sum_i alpha_i v_i
    assert att[0].tolist() == pytest.approx(alpha, abs=1e-6)
    assert feat[0].tolist() == pytest.approx(h + s, abs=1e-6)  # [h_t; s_t]
    logits = [h[0] + 0.0, s[0] + 0.5, s[1] - 0.5]  # W [h; s] + b
    zl = sum(math.exp(v) for v in logits)
    expected = [v - math.log(zl) for v in logits]
    got = rssp.log_probs(feat, att, torch.zeros(1, 2), torch.tensor([[0, 1]]))
    assert got[0].tolist() == pytest.approx(expected, abs=1e-6)


def test_luong_tied_is_the_named_option():
    emb = nn.Embedding(5, 4)
    rssp = RSSP(emb, hidden=4, copy=False, decoder="luong_tied")
    assert rssp.lstm.input_size == 4 + 4  # input feeding
    assert not hasattr(rssp, "out") and hasattr(rssp, "attn")
    paper = RSSP(emb, hidden=4, copy=False)
    assert paper.lstm.input_size == 4 and paper.out.out_features == 5 and not hasattr(paper, "attn")
    with pytest.raises(ValueError):
        RSSP(emb, hidden=4, decoder="bahdanau")


def test_the_params_values_the_user_gets():
    train = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))["train"]
    assert train["decoder"] == Train().decoder == "paper"
    # Sec. 5.1: BERT-MT (and RSSP, "the same as BERT-MT") use AdamW at 5e-5: the schema's value;
    # params.yaml's sample profile raises the heads' rate so the models learn on 160 records
    assert Train().head_lr == 5.0e-5 == train["lr"] == Train().lr
    assert train["head_lr"] == 5.0e-3
