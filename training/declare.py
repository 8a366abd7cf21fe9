"""DECLARE (Luo et al., MedLane): complex word locator (CWL), dictionary-based neural lexical
interpreter (DNLI, DCMN+-style multiple choice) and restricted syntactic simplification
polisher (RSSP, transformer encoder + attention LSTM decoder, partial translation).

The three modules share one pre-trained transformer encoder (loaded by name or path).
`BertMT` is MedLane's BERT-MT baseline (Table 3) built from the same parts: the encoder and
RSSP's decoder generating the whole simple sentence, no locator, no dictionary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

NEG_INF = -1e4


class CWL(nn.Module):
    """Token classification modify / keep over encoder states."""

    def __init__(self, hidden: int, dropout: float = 0.1):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, 2)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.out(self.drop(states))  # (B, T, 2)


class BiMatch(nn.Module):
    """DCMN+ bidirectional matching of two sequences, fused by a gate into one vector."""

    def __init__(self, hidden: int):
        super().__init__()
        self.bilinear = nn.Linear(hidden, hidden, bias=False)
        self.proj = nn.Linear(2 * hidden, hidden)
        self.gate_a = nn.Linear(hidden, hidden)
        self.gate_b = nn.Linear(hidden, hidden, bias=False)

    def _side(self, x: torch.Tensor, attended: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        s = F.relu(self.proj(torch.cat([attended - x, attended * x], dim=-1)))
        s = s.masked_fill(~mask.unsqueeze(-1), NEG_INF)
        return s.max(dim=1).values

    def forward(
        self, a: torch.Tensor, a_mask: torch.Tensor, b: torch.Tensor, b_mask: torch.Tensor
    ) -> torch.Tensor:
        g = torch.bmm(self.bilinear(a), b.transpose(1, 2))  # (N, La, Lb)
        pair = a_mask.unsqueeze(2) & b_mask.unsqueeze(1)
        g = g.masked_fill(~pair, NEG_INF)
        a_att = torch.bmm(torch.softmax(g, dim=2), b)  # a attends to b
        b_att = torch.bmm(torch.softmax(g, dim=1).transpose(1, 2), a)  # b attends to a
        ma, mb = self._side(a, a_att, a_mask), self._side(b, b_att, b_mask)
        gate = torch.sigmoid(self.gate_a(ma) + self.gate_b(mb))
        return gate * ma + (1 - gate) * mb


class DNLI(nn.Module):
    """Multiple choice over dictionary expansions: (masked context, term, option) matching."""

    def __init__(self, hidden: int):
        super().__init__()
        self.po, self.qo, self.pq = BiMatch(hidden), BiMatch(hidden), BiMatch(hidden)
        self.score = nn.Linear(3 * hidden, 1)

    def forward(self, p, p_mask, q, q_mask, o, o_mask, option_index, option_mask) -> torch.Tensor:
        """Score the real options only; padded slots get a very negative logit.

        p: (N, Lp, H), q: (N, Lq, H); o: (M, Lo, H) the M real options, option_index (M,)
        the question each belongs to; option_mask (N, K) marks real slots -> logits (N, K).
        """
        pf, pmf, qf, qmf = p[option_index], p_mask[option_index], q[option_index], q_mask[option_index]
        feats = torch.cat(
            [self.po(pf, pmf, o, o_mask), self.qo(qf, qmf, o, o_mask), self.pq(pf, pmf, qf, qmf)], dim=-1
        )
        logits = feats.new_full(option_mask.shape, NEG_INF)
        return logits.masked_scatter(option_mask, self.score(feats).squeeze(-1).to(logits.dtype))


DECODERS = ("paper", "luong_tied")


class RSSP(nn.Module):
    """Attention LSTM decoder over encoder states.

    `paper` (default, Luo et al. Sec. 4.3): the LSTM reads the previous token's embedding;
    dot attention o_ti = h_t . v_i over the encoder states, s_t = sum_i alpha_ti v_i; the
    output r_t = softmax(W [h_t; s_t] + b) with its own W and b. `luong_tied` (our earlier
    decoder, an option): bilinear attention h_t W_a v_i, input feeding of the attentional state
    tanh(W_c [h_t; s_t]), output projected onto the tied input embeddings. With `copy` the output
    mixes in the attention over the input tokens through a generation gate (pointer-generator)."""

    def __init__(self, embeddings: nn.Embedding, hidden: int, copy: bool = True, decoder: str = "paper"):
        super().__init__()
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {', '.join(DECODERS)}, not {decoder!r}")
        self.embeddings = embeddings
        self.decoder = decoder
        dim = embeddings.embedding_dim
        feed_dim = 2 * hidden if decoder == "paper" else hidden
        if decoder == "paper":
            self.lstm = nn.LSTMCell(dim, hidden)
            self.out = nn.Linear(2 * hidden, embeddings.num_embeddings)
        else:
            self.lstm = nn.LSTMCell(dim + hidden, hidden)
            self.attn = nn.Linear(hidden, hidden, bias=False)
            self.combine = nn.Linear(2 * hidden, hidden)
            self.to_emb = nn.Linear(hidden, dim)
        self.copy = copy
        self.gate = nn.Linear(feed_dim + dim, 1) if copy else None
        self.hidden = hidden

    def init_state(self, memory: torch.Tensor, mask: torch.Tensor):
        m = mask.unsqueeze(-1).to(memory.dtype)
        mean = (memory * m).sum(1) / m.sum(1).clamp(min=1)
        return mean, torch.zeros_like(mean), torch.zeros_like(mean)

    def step(self, emb: torch.Tensor, state, memory: torch.Tensor, mask: torch.Tensor):
        """One step: embedded previous token (B, D) -> (output features (B, 2H) for `paper`,
        the attentional state (B, H) for `luong_tied`; attention (B, S); state)."""
        h, c, feed = state
        if self.decoder == "paper":
            h, c = self.lstm(emb, (h, c))
            scores = torch.bmm(memory, h.unsqueeze(2)).squeeze(2)  # o_ti = h_t . v_i
        else:
            h, c = self.lstm(torch.cat([emb, feed], dim=-1), (h, c))
            scores = torch.bmm(memory, self.attn(h).unsqueeze(2)).squeeze(2)
        att = torch.softmax(scores.masked_fill(~mask, NEG_INF), dim=1)
        ctx = torch.bmm(att.unsqueeze(1), memory).squeeze(1)
        if self.decoder == "paper":
            out = torch.cat([h, ctx], dim=-1)  # [h_t; s_t]
            return out, att, (h, c, feed)
        feed = torch.tanh(self.combine(torch.cat([h, ctx], dim=-1)))
        return feed, att, (h, c, feed)

    def log_probs(
        self, feed: torch.Tensor, att: torch.Tensor, emb: torch.Tensor, src_ids: torch.Tensor
    ) -> torch.Tensor:
        """Next-token log-probabilities; feed (..., H), att (..., S), emb (..., D), src_ids (B, S)."""
        if self.decoder == "paper":
            logits = self.out(feed).float()  # W [h_t; s_t] + b
        else:
            logits = (self.to_emb(feed) @ self.embeddings.weight.t()).float()
        if not self.copy:
            return torch.log_softmax(logits, dim=-1)
        assert self.gate is not None  # built when copy is on
        p_gen = torch.sigmoid(self.gate(torch.cat([feed, emb], dim=-1))).float()
        probs = p_gen * torch.softmax(logits, dim=-1)
        index = src_ids if att.dim() == 2 else src_ids.unsqueeze(1).expand(-1, att.shape[1], -1)
        probs = probs.scatter_add(-1, index, (1 - p_gen) * att.float())
        return torch.log(probs + 1e-12)

    def forward(
        self, dec_in: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor, src_ids: torch.Tensor
    ) -> torch.Tensor:
        """Teacher forcing: dec_in (B, T) -> log-probabilities (B, T, V)."""
        state = self.init_state(memory, mask)
        emb = self.embeddings(dec_in)
        feeds, atts = [], []
        for t in range(dec_in.shape[1]):
            feed, att, state = self.step(emb[:, t], state, memory, mask)
            feeds.append(feed)
            atts.append(att)
        return self.log_probs(torch.stack(feeds, 1), torch.stack(atts, 1), emb, src_ids)


class Encoded(nn.Module):
    """A pre-trained encoder; subclasses add RSSP's attention LSTM decoder (`rssp`) over its states."""

    rssp: RSSP

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state


class BertMT(Encoded):
    """BERT-MT: the decoder generates the simple sentence from the complex one; `losses` gives Lr."""

    def __init__(self, encoder: nn.Module, copy: bool = False, decoder: str = "paper"):
        super().__init__(encoder)
        self.rssp = RSSP(encoder.get_input_embeddings(), encoder.config.hidden_size, copy, decoder)

    def losses(self, batch: dict) -> dict[str, torch.Tensor]:
        memory = self.encode(batch["src_ids"], batch["src_mask"])
        logp = self.rssp(batch["dec_in"], memory, batch["src_mask"].bool(), batch["src_ids"])
        return {"lr": F.nll_loss(logp.flatten(0, 1), batch["dec_out"].flatten(), ignore_index=-100)}

    @torch.no_grad()
    def generate(self, ids: torch.Tensor, mask: torch.Tensor, bos_id: int, eos_id: int, max_len: int):
        """Greedy decoding of a batch: token ids per sentence, up to `eos_id` (excluded) or `max_len`."""
        memory, bmask = self.encode(ids, mask), mask.bool()
        state = self.rssp.init_state(memory, bmask)
        prev = torch.full((ids.shape[0],), bos_id, dtype=torch.long, device=ids.device)
        out: list[list[int]] = [[] for _ in range(ids.shape[0])]
        done = [False] * ids.shape[0]
        for _ in range(max_len):
            emb = self.rssp.embeddings(prev)
            feed, att, state = self.rssp.step(emb, state, memory, bmask)
            prev = self.rssp.log_probs(feed, att, emb, ids).argmax(-1)
            for b, tok in enumerate(prev.tolist()):
                done[b] = done[b] or tok == eos_id
                if not done[b]:
                    out[b].append(tok)
            if all(done):
                break
        return out


class Declare(Encoded):
    """Encoder + CWL + DNLI + RSSP; `losses` gives Lp, Lq, Lr for the joint loss."""

    def __init__(self, encoder: nn.Module, dropout: float = 0.1, copy: bool = True, decoder: str = "paper"):
        super().__init__(encoder)
        hidden = encoder.config.hidden_size
        self.cwl = CWL(hidden, dropout)
        self.dnli = DNLI(hidden)
        self.rssp = RSSP(encoder.get_input_embeddings(), hidden, copy, decoder)

    def dnli_logits(self, batch: dict) -> torch.Tensor:
        p = self.encode(batch["p_ids"], batch["p_mask"])
        q = self.encode(batch["q_ids"], batch["q_mask"])
        o = self.encode(batch["o_ids"], batch["o_mask"])
        return self.dnli(
            p,
            batch["p_mask"].bool(),
            q,
            batch["q_mask"].bool(),
            o,
            batch["o_mask"].bool(),
            batch["option_index"],
            batch["option_mask"],
        )

    def losses(self, batch: dict) -> dict[str, torch.Tensor]:
        states = self.encode(batch["src_ids"], batch["src_mask"])
        lp = F.cross_entropy(self.cwl(states).flatten(0, 1), batch["cwl_labels"].flatten(), ignore_index=-100)
        if "p_ids" in batch:
            lq = F.cross_entropy(self.dnli_logits(batch), batch["dnli_labels"])
        else:
            lq = states.new_zeros(())
        memory = self.encode(batch["mark_ids"], batch["mark_mask"])
        logp = self.rssp(batch["dec_in"], memory, batch["mark_mask"].bool(), batch["mark_ids"])
        lr = F.nll_loss(logp.flatten(0, 1), batch["dec_out"].flatten(), ignore_index=-100)
        return {"lp": lp, "lq": lq, "lr": lr}


def partial_translate(
    input_ids: Sequence[int],
    start_id: int,
    end_id: int,
    step: Callable[[int, bool], int | None],
    bos_id: int,
    max_span: int = 16,
) -> list[tuple[str, list[int]]]:
    """Appendix B partial translation over one marked input (no special tokens besides markers).

    Outside marked spans the input token is copied (and fed to the decoder); at a start
    marker the decoder generates greedily until it emits the end marker (or `max_span`
    tokens), then the input resumes after the matching end marker. `step(prev, predict)`
    feeds the previous output token and, when `predict`, returns the argmax next token.
    Returns segments `("copy", [input positions])` and `("gen", [token ids])` in order.
    """
    segments: list[tuple[str, list[int]]] = []
    prev = bos_id
    i = 0
    while i < len(input_ids):
        tok = input_ids[i]
        if tok == start_id:
            step(prev, False)
            prev = start_id
            generated: list[int] = []
            for _ in range(max_span):
                nxt = step(prev, True)
                assert nxt is not None
                prev = nxt
                if nxt == end_id:
                    break
                generated.append(nxt)
            else:
                step(prev, False)
                prev = end_id
            segments.append(("gen", generated))
            while i < len(input_ids) and input_ids[i] != end_id:
                i += 1
            i += 1
            continue
        step(prev, False)
        prev = tok
        if segments and segments[-1][0] == "copy":
            segments[-1][1].append(i)
        else:
            segments.append(("copy", [i]))
        i += 1
    return segments
