"""Neural CRF sentence aligner (Jiang et al. 2020, "Neural CRF Model for Sentence Alignment
in Text Simplification").

For a document pair, each row sentence i (a simple sentence in the forward direction)
takes a state a_i in {NULL, 1..m} (the column sentence it aligns to). The score of a
labelling is sum_i E(i, a_i) + T(a_{i-1}, a_i):

* emissions E: a small MLP over pairwise features (`alignment.features`: bi-encoder cosine
  from a pluggable encoder plus lexical overlap, length ratio, shared numbers, relative
  position); NULL has its own learned emission (a linear layer over the row's best
  cosine/containment and a bias);
* transitions T: features jump distance d = |a_i - a_{i-1} - 1| (capped at `jump_cap`),
  d == 0, staying on the same state, and indicators NULL->NULL, aligned->NULL,
  NULL->aligned, combined by a small learned layer (MLP). The first row jumps from a
  virtual aligned state 0.

Training minimises the CRF negative log-likelihood (forward algorithm, exact, in torch)
of the gold labelling. Decoding is Viterbi; pair scores are posterior marginals
(forward-backward). Because jumps are capped, every transition from a state farther
than `jump_cap` costs the same, so decoding and marginals run exactly in
O(n * m * jump_cap) time and O(n * m) memory with prefix/suffix max / logsumexp: a
1000 x 1000 document is cheap.

One pass finds 1 column -> N rows. `CRFAligner` trains a forward (rows = simple) and a
reverse (rows = complex) model and merges their pairs (see docs/alignment.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from pydantic import ValidationError
from torch import nn

from alignment.features import NULL_FEATURES, PAIR_FEATURES, null_features, pair_features
from alignment.gold import Block, DocPair
from alignment.score import pairs_to_blocks
from medsimp.errors import InputError
from medsimp.numerics import require_blas_pinned, require_pinned
from medsimp.params_schema import Crf, updated
from medsimp.progress import counting

# The CRF's knobs and their defaults are params `align.crf` (medsimp.params_schema.Crf).


class CRFScorer(nn.Module):
    """Emission and transition layers of one direction."""

    def __init__(self, jump_cap: int = 8, hidden: int = 16):
        super().__init__()
        if jump_cap < 2:
            raise ValueError("jump_cap must be >= 2")
        self.jump_cap = jump_cap
        self.emit = nn.Sequential(nn.Linear(len(PAIR_FEATURES), hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.null = nn.Linear(len(NULL_FEATURES), 1)
        self.trans = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))

    def emissions(self, feats: torch.Tensor, nfeats: torch.Tensor) -> torch.Tensor:
        """(n, m+1): column 0 is NULL."""
        e = self.emit(feats).squeeze(-1)
        return torch.cat([self.null(nfeats), e], dim=1)

    def transition_table(self) -> dict[str, torch.Tensor]:
        """`aa[d]` for aligned->aligned jumps d = 0..jump_cap, `same` for a_i == a_{i-1}, and the NULL moves."""
        k = self.jump_cap
        d = torch.arange(k + 1, dtype=torch.float32)
        z = torch.zeros(k + 1)
        aa = torch.stack([d / k, (d == 0).float(), z, z, z, z], dim=1)
        other = torch.tensor(
            [
                [1 / k, 0, 1, 0, 0, 0],  # same state (d = 1)
                [0, 0, 0, 1, 0, 0],  # NULL -> NULL
                [0, 0, 0, 0, 1, 0],  # aligned -> NULL
                [0, 0, 0, 0, 0, 1],
            ]
        )  # NULL -> aligned
        out = self.trans(torch.cat([aa, other])).squeeze(-1)
        return {"aa": out[: k + 1], "same": out[k + 1], "nn": out[k + 2], "an": out[k + 3], "na": out[k + 4]}

    def full_transitions(self, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Dense (m+1, m+1) transition matrix [prev, cur] and the start vector (m+1)."""
        t = self.transition_table()
        pos = torch.arange(1, m + 1)
        d = (pos[None, :] - pos[:, None] - 1).abs().clamp(max=self.jump_cap)
        aa = t["aa"][d]
        aa = torch.where(torch.eye(m, dtype=torch.bool), t["same"], aa)
        top = torch.cat([t["nn"].view(1), t["na"].expand(m)]).view(1, m + 1)
        body = torch.cat([t["an"].expand(m, 1), aa], dim=1)
        start = torch.cat([t["an"].view(1), t["aa"][(pos - 1).clamp(max=self.jump_cap)]])
        return torch.cat([top, body]), start

    def nll(self, feats: torch.Tensor, nfeats: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """CRF negative log-likelihood of the gold labelling (0 = NULL, j = column j-1)."""
        e = self.emissions(feats, nfeats)
        n, m1 = e.shape
        trans, start = self.full_transitions(m1 - 1)
        alpha = start + e[0]
        gold = start[labels[0]] + e[0, labels[0]]
        for i in range(1, n):
            alpha = e[i] + torch.logsumexp(alpha[:, None] + trans, dim=0)
            gold = gold + trans[labels[i - 1], labels[i]] + e[i, labels[i]]
        return torch.logsumexp(alpha, dim=0) - gold


@dataclass
class Lattice:
    """Numpy view of one direction's scores for a document: emissions and transition table."""

    emit: np.ndarray  # (n, m+1), column 0 NULL
    aa: np.ndarray  # (jump_cap+1,)
    same: float
    nn: float
    an: float
    na: float

    @property
    def cap(self) -> int:
        return len(self.aa) - 1

    def _weights(self, forward: bool) -> np.ndarray:
        """Transition weight of each window position of `_windows` (near moves, d < cap)."""
        k = self.cap
        offsets = [k - p for p in range(2 * k - 1)] if forward else [2 - k + p for p in range(2 * k - 1)]
        return np.array([self.same if o == 0 else self.aa[abs(o - 1)] for o in offsets])

    def _windows(self, vec: np.ndarray, forward: bool) -> np.ndarray:
        """(m, 2cap-1) view: row j holds the aligned states within jump distance < cap of j.

        Forward: previous states k = j-cap .. j+cap-2; backward: next states j+2-cap .. j+cap.
        """
        k, m = self.cap, len(vec)
        padded = np.full(m + 2 * k, -np.inf)
        padded[k : k + m] = vec
        start = 0 if forward else 2
        return np.lib.stride_tricks.sliding_window_view(padded, 2 * k - 1)[start : start + m]

    def _far_bounds(self, m: int, forward: bool) -> tuple[np.ndarray, np.ndarray]:
        j = np.arange(m)
        if forward:  # prev k with k <= j-1-cap or k >= j-1+cap
            return j - 1 - self.cap, j - 1 + self.cap
        return j + 1 - self.cap, j + 1 + self.cap  # next j' for prev j

    def _far(self, vec: np.ndarray, forward: bool) -> np.ndarray:
        m = len(vec)
        lo, hi = self._far_bounds(m, forward)
        pre = np.logaddexp.accumulate(vec)
        suf = np.logaddexp.accumulate(vec[::-1])[::-1]
        out = np.full(m, -np.inf)
        ok = lo >= 0
        out[ok] = pre[lo[ok]]
        ok = hi <= m - 1
        out[ok] = np.logaddexp(out[ok], suf[hi[ok]])
        return out + self.aa[self.cap]

    def _start(self, m: int) -> np.ndarray:
        return np.concatenate([[self.an], self.aa[np.minimum(np.arange(m), self.cap)]])

    def _aligned_step(self, vec: np.ndarray, from_null: float, forward: bool) -> np.ndarray:
        """log-sum over moves into (forward) / out of (backward) each aligned state."""
        near = _lse_rows(self._windows(vec, forward) + self._weights(forward))
        return np.logaddexp(np.logaddexp(near, self._far(vec, forward)), from_null)

    def forward_backward(self) -> tuple[np.ndarray, float]:
        """Posterior marginals (n, m+1) and log Z, exactly, in O(n m cap)."""
        e = self.emit.astype(np.float64)
        n, m1 = e.shape
        alpha = np.empty_like(e)
        alpha[0] = self._start(m1 - 1) + e[0]
        for i in range(1, n):
            prev = alpha[i - 1]
            cur = self._aligned_step(prev[1:], prev[0] + self.na, True)
            null = np.logaddexp(prev[0] + self.nn, np.logaddexp.reduce(prev[1:] + self.an))
            alpha[i] = e[i] + np.concatenate([[null], cur])
        beta = np.zeros_like(e)
        for i in range(n - 2, -1, -1):
            g = e[i + 1] + beta[i + 1]
            cur = self._aligned_step(g[1:], g[0] + self.an, False)
            null = np.logaddexp(g[0] + self.nn, np.logaddexp.reduce(g[1:] + self.na))
            beta[i] = np.concatenate([[null], cur])
        logz = float(np.logaddexp.reduce(alpha[-1]))
        return np.exp(alpha + beta - logz), logz

    def viterbi(self) -> list[int]:
        """Best labelling (0 = NULL, j = column j-1), exactly, in O(n m cap)."""
        e = self.emit.astype(np.float64)
        n, m1 = e.shape
        m, cap = m1 - 1, self.cap
        score = self._start(m) + e[0]
        back = np.zeros((n, m1), dtype=np.int64)
        idx = np.arange(m)
        lo, hi = self._far_bounds(m, True)
        w = self._weights(True)
        for i in range(1, n):
            a = score[1:]
            win = self._windows(a, True) + w
            p = np.argmax(win, axis=1)
            best = win[idx, p]
            arg = idx - cap + p + 1  # window position p holds previous state k = j - cap + p
            from_null = score[0] + self.na
            better = from_null > best
            best[better], arg[better] = from_null, 0
            pre = np.maximum.accumulate(a)
            pre_arg = np.maximum.accumulate(np.where(a >= pre, idx, 0))
            ra = a[::-1]
            suf = np.maximum.accumulate(ra)[::-1]
            suf_arg = (m - 1 - np.maximum.accumulate(np.where(ra >= np.maximum.accumulate(ra), idx, 0)))[::-1]
            for ok, vals, args, bound in ((lo >= 0, pre, pre_arg, lo), (hi <= m - 1, suf, suf_arg, hi)):
                pos = np.clip(bound, 0, m - 1)
                v = np.where(ok, vals[pos] + self.aa[cap], -np.inf)
                better = v > best
                best[better] = v[better]
                arg[better] = args[pos][better] + 1
            nulls = np.concatenate([[score[0] + self.nn], a + self.an])
            back[i, 0] = int(np.argmax(nulls))
            back[i, 1:] = arg
            score = e[i] + np.concatenate([[nulls[back[i, 0]]], best])
        path = [int(np.argmax(score))]
        for i in range(n - 1, 0, -1):
            path.append(int(back[i, path[-1]]))
        return path[::-1]


def _lse_rows(x: np.ndarray) -> np.ndarray:
    """logsumexp over axis 1; rows of -inf give -inf."""
    mx = x.max(axis=1)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(x - safe[:, None]).sum(axis=1))


def _tensor(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))


def lattice(scorer: CRFScorer, feats: np.ndarray, null_prior: float = 0.0) -> Lattice:
    """Score one direction of a document with a trained scorer (no gradients); `null_prior` is
    taken off every row's NULL emission (params `align.crf.deletion_prior`, forward only)."""
    with torch.no_grad():
        emit = scorer.emissions(_tensor(feats), _tensor(null_features(feats))).numpy()
        t = {k: v.numpy() for k, v in scorer.transition_table().items()}
    if null_prior:
        emit = emit.copy()
        emit[:, 0] -= np.float32(null_prior)
    return Lattice(
        emit, t["aa"].astype(np.float64), float(t["same"]), float(t["nn"]), float(t["an"]), float(t["na"])
    )


def gold_labels(pairs: set[tuple[int, int]], n_rows: int, cosine: np.ndarray) -> list[int]:
    """One state per row from gold (row, col) pairs; a row with several columns keeps its most similar one."""
    by_row: dict[int, list[int]] = {}
    for r, c in pairs:
        by_row.setdefault(r, []).append(c)
    return [
        0 if r not in by_row else 1 + max(sorted(by_row[r]), key=lambda c: cosine[r, c])
        for r in range(n_rows)
    ]


def train_scorer(
    examples: Sequence[tuple[np.ndarray, list[int]]], config: Crf, tick: Callable[[int], None] | None = None
) -> CRFScorer:
    """Fit one direction by Adam on the summed per-document NLL (divided by rows). The thread
    count is fixed (float sums depend on it) whether or not the encoder ran first (cold cache),
    and the kernels are the CPU-independent ones (medsimp.numerics)."""
    require_pinned(torch)
    require_blas_pinned()  # the features came through numpy's BLAS
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    scorer = CRFScorer(config.jump_cap, config.hidden)
    opt = torch.optim.Adam(scorer.parameters(), lr=float(config.lr))
    data = [
        (_tensor(f), _tensor(null_features(f)), torch.tensor(y)) for f, y in examples if len(y) and f.shape[1]
    ]
    for _ in range(config.epochs):
        for f, nf, y in data:
            opt.zero_grad()
            loss = scorer.nll(f, nf, y) / len(y)
            loss.backward()
            opt.step()
        if tick:
            tick(1)  # an epoch done (progress only)
    return scorer


@dataclass
class CRFResult:
    pairs: dict[tuple[int, int], float]  # (complex, simple) -> posterior probability
    blocks: list[Block]  # (complex ids, simple ids) components, in order
    block_scores: list[float]  # mean pair probability per block (0 for 1-0 / 0-1)


class CRFAligner:
    """Forward (simple rows) and reverse (complex rows) CRFs over one encoder, merged."""

    def __init__(self, encoder, config: Crf, forward: CRFScorer, reverse: CRFScorer):
        require_pinned(torch)  # inference too: a worker that imported torch after medsimp is pinned here
        require_blas_pinned()  # the cosine features go through numpy's BLAS
        self.encoder = encoder
        self.config = config  # its `encoder` spec is not read: `encoder` is the one in use
        self.forward, self.reverse = forward, reverse

    @staticmethod
    def featurize(
        encoder,
        complex_: Sequence[str],
        simple: Sequence[str],
        lang: str | None = "en",
        stopwords: str = "spacy",
    ) -> np.ndarray:
        """Features with rows = simple sentences, columns = complex sentences; `stopwords` is
        the config's stop-word list (`alignment.text.STOPWORD_LISTS`)."""
        if not complex_ or not simple:
            return np.zeros((len(simple), len(complex_), len(PAIR_FEATURES)), np.float32)
        cos = encoder.encode(list(simple), lang) @ encoder.encode(list(complex_), lang).T
        return pair_features(simple, complex_, cos, stopwords)

    @classmethod
    def train(cls, docs: Sequence[DocPair], encoder, config: Crf | None = None) -> CRFAligner:
        """`config`: params `align.crf` (none: the schema's defaults)."""
        config = config or Crf()
        stopwords = config.stopwords
        fwd, rev = [], []
        with counting("aligner features", len(docs)) as tick:  # progress only, past a minute
            for d in docs:
                f = cls.featurize(encoder, d.complex, d.simple, stopwords=stopwords)
                cos = f[..., 0]
                fwd.append((f, gold_labels({(s, c) for c, s in d.pairs}, len(d.simple), cos)))
                rf = (
                    np.ascontiguousarray(pair_features(d.complex, d.simple, cos.T, stopwords))
                    if f.size
                    else np.zeros((len(d.complex), len(d.simple), len(PAIR_FEATURES)), np.float32)
                )
                rev.append((rf, gold_labels(set(d.pairs), len(d.complex), cos.T)))
                tick()
        with counting("aligner training", 2 * config.epochs, "epochs") as tick:
            forward = train_scorer(fwd, config, tick)
            reverse = train_scorer(rev, config, tick)
        return cls(encoder, config, forward, reverse)

    def align(self, complex_: Sequence[str], simple: Sequence[str], lang: str | None = "en") -> CRFResult:
        n_c, n_s = len(complex_), len(simple)
        pairs: dict[tuple[int, int], float] = {}
        if n_c and n_s:
            stopwords = self.config.stopwords
            f = self.featurize(self.encoder, complex_, simple, lang, stopwords)
            # the same thread count as training, whatever the process set (float sums depend on it)
            torch.set_num_threads(self.config.threads)
            merge = self.config.merge
            lat = lattice(self.forward, f, self.config.deletion_prior)
            marg, _ = lat.forward_backward()
            fwd = {(a - 1, s): float(marg[s, a]) for s, a in enumerate(lat.viterbi()) if a}
            rev: dict[tuple[int, int], float] = {}
            if merge != "forward":
                rlat = lattice(
                    self.reverse,
                    np.ascontiguousarray(pair_features(complex_, simple, f[..., 0].T, stopwords)),
                )
                rmarg, _ = rlat.forward_backward()
                rev = {(c, a - 1): float(rmarg[c, a]) for c, a in enumerate(rlat.viterbi()) if a}
            if merge == "union":
                keys = set(fwd) | set(rev)
            elif merge == "intersection":
                keys = set(fwd) & set(rev)
            else:  # forward
                keys = set(fwd)
            pairs = {k: max(fwd.get(k, 0.0), rev.get(k, 0.0)) for k in sorted(keys)}
        blocks = pairs_to_blocks(pairs, n_c, n_s)
        scores = [
            float(np.mean([pairs[(c, s)] for c in b[0] for s in b[1] if (c, s) in pairs]))
            if b[0] and b[1]
            else 0.0
            for b in blocks
        ]
        return CRFResult(pairs, blocks, scores)

    def save(self, out_dir: str | Path) -> None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        torch.save(
            {"forward": self.forward.state_dict(), "reverse": self.reverse.state_dict()}, out / "model.pt"
        )
        # spaCy's stop words and no deletion prior are what a config without the key means (models
        # saved before it was a param), so a default model keeps its bytes and content hash, which
        # its packaged held-out scores are keyed by (medsimp/resources/aligner_heldout.json)
        implicit = {
            k for k in ("stopwords", "deletion_prior") if getattr(self.config, k) == getattr(Crf(), k)
        }
        cfg = {
            **self.config.model_dump(exclude={"encoder", *implicit}),
            "encoder": self.encoder.name,
            # the encoder's content, not only its name: another model in a folder of the same
            # name would give other emissions (issue 54)
            "encoder_sha256": self.encoder.fingerprint(),
        }
        (out / "config.json").write_text(json.dumps(cfg, sort_keys=True, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, model_dir: str | Path, encoder, merge: str | None = None) -> CRFAligner:
        """Load a trained aligner; `encoder.name` must match the one it was trained with;
        `merge` (params `align.crf.merge`) replaces the merge it was saved with."""
        d = Path(model_dir)
        if not (d / "model.pt").exists():
            raise FileNotFoundError(
                f"no CRF model in {d} (run `medsimp align train` / `dvc repro align_train`)"
            )
        try:
            cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"CRF model {d}: config.json cannot be read ({type(exc).__name__})") from None
        if not isinstance(cfg, dict):
            raise InputError(f"CRF model {d}: config.json is not a JSON object")
        if cfg.get("encoder") != encoder.name:
            raise InputError(
                f"CRF model {d} was trained with encoder {cfg.get('encoder')!r}, not {encoder.name!r}: "
                "set align.crf.encoder to the model's, or train one with this encoder (medsimp align train)"
            )
        trained_with = cfg.pop("encoder_sha256", None)  # absent in models saved before 2026-12
        if trained_with is not None and trained_with != encoder.fingerprint():
            raise InputError(
                f"CRF model {d} was trained with another encoder of the same name {encoder.name!r} "
                "(its files or weights differ): point align.crf.encoder at the model it was trained "
                "with, or train one with this encoder (medsimp align train)"
            )
        del cfg["encoder"]
        try:
            config = updated(Crf.model_validate(cfg), {"merge": merge} if merge else None)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(k) for k in first["loc"])
            raise InputError(
                f"CRF model {d}: config.json is not an align.crf config ({where}: {first['msg']})"
            ) from None
        state = torch.load(d / "model.pt", map_location="cpu", weights_only=True)
        fwd, rev = (CRFScorer(config.jump_cap, config.hidden) for _ in range(2))
        fwd.load_state_dict(state["forward"])
        rev.load_state_dict(state["reverse"])
        return cls(encoder, config, fwd.eval(), rev.eval())
