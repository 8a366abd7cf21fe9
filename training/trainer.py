"""Train DECLARE (joint loss Lp + Lq + Lr) and run its three modules in sequence at inference;
or the BERT-MT baseline (loss Lr, greedy generation) with the same loop.

AdamW with linear warm-up, early stopping on the validation loss, the best
checkpoint kept for test, resumable from the last checkpoint, seeded, AMP and
the GPU when present, a tqdm bar showing the loss.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from medsimp.errors import UsageError
from medsimp.numerics import require_pinned
from medsimp.params_schema import Train
from medsimp.resources import resolve_model
from training.declare import BertMT, Declare, Encoded, partial_translate
from training.labels import (
    MODIFY,
    SPAN_END,
    SPAN_START,
    derive,
    marked_source,
    marked_target,
    masked_context,
)

Pair = tuple[list[str], list[str]]
SYSTEMS = ("declare", "bertmt")
# the `train` keys a model's settings.json leaves out: what names the data (paths could differ
# between folders; the lineage and stats name the data), what only the dictionary baseline
# reads, and where it ran (resolved into the checkpoint key; train_log.json says it)
UNSAVED_KEYS = {"models", "data", "dictionaries", "dictionary_expansion", "device", "mixed_precision"}


def seed_everything(seed: int, threads: int) -> None:
    """Seeds, deterministic kernels and a fixed CPU thread count: float sums are reduced in
    a thread-count-dependent order, so the same seed on another core count differs; the kernels
    are the CPU-independent ones (medsimp.numerics), so another CPU gives the same bytes."""
    import numpy as np

    require_pinned(torch)

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)


def load_backbone(encoder: str, fallback: str | None = None):
    """(tokenizer, encoder, the name used) by name or path (`minilm` = the packaged MiniLM), span
    markers added. When `encoder` cannot be loaded here (offline and not cached, a wrong path)
    and a `fallback` is given, the fallback is used and a warning says so once."""
    from transformers import AutoModel, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(resolve_model(encoder))
        model = AutoModel.from_pretrained(resolve_model(encoder))
        used = encoder
    except OSError:
        if not fallback or fallback == encoder:
            raise
        logging.getLogger("medsimp").warning(
            "train.encoder %s cannot be loaded here (offline or not cached): the model uses %s instead "
            "(train.encoder_fallback; recorded as the model's encoder)",
            encoder,
            fallback,
        )
        tokenizer = AutoTokenizer.from_pretrained(resolve_model(fallback))
        model = AutoModel.from_pretrained(resolve_model(fallback))
        used = fallback
    tokenizer.add_special_tokens({"additional_special_tokens": [SPAN_START, SPAN_END]})
    model.resize_token_embeddings(len(tokenizer))
    return tokenizer, model, used


class Featurizer:
    """Turns word pairs into tensors for the three modules (`plain`: source and target only, BERT-MT)."""

    def __init__(self, tokenizer, dictionary: dict[str, list[str]], s: Train, plain: bool = False):
        self.tok, self.dict, self.s, self.plain = tokenizer, dictionary, s, plain
        self.start_id, self.end_id = tokenizer.convert_tokens_to_ids([SPAN_START, SPAN_END])

    def words(self, words: Sequence[str], max_length: int | None = None):
        return self.tok(
            list(words), is_split_into_words=True, truncation=True, max_length=max_length or self.s.max_length
        )

    def example(self, src: list[str], tgt: list[str], annotated: Mapping[str, str] | None = None) -> dict:
        enc = self.words(src)
        if self.plain:
            return {"src_ids": enc["input_ids"], "tgt_ids": self.words(tgt)["input_ids"]}
        labels, terms = derive(src, tgt, self.dict, self.s.max_options, self.s.locator_labels, annotated)
        cwl, seen = [], set()
        for w in enc.word_ids():
            cwl.append(-100 if w is None or w in seen else labels[w])
            if w is not None:
                seen.add(w)
        gold = [t for t in terms if t.gold is not None]
        mark = self.words(marked_source(src, {t.index: t.options[t.gold or 0] for t in gold}))
        spans = sorted({t.target_span for t in gold if t.target_span})
        spans = [sp for k, sp in enumerate(spans) if k == 0 or sp[0] >= spans[k - 1][1]]
        tgt_ids = self.words(marked_target(tgt, spans))["input_ids"]
        mc = [
            (masked_context(src, t.index, self.tok.mask_token), t.word, list(t.options), t.gold) for t in gold
        ]
        return {
            "src_ids": enc["input_ids"],
            "cwl": cwl,
            "mark_ids": mark["input_ids"],
            "tgt_ids": tgt_ids,
            "mc": mc,
        }

    def _pad(self, seqs: list[list[int]], value: int) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(x) for x in seqs)
        ids = torch.full((len(seqs), width), value, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, x in enumerate(seqs):
            ids[i, : len(x)] = torch.tensor(x, dtype=torch.long)
            mask[i, : len(x)] = 1
        return ids, mask

    def multiple_choice(self, mc: list[tuple[str, str, list[str], int | None]]) -> dict:
        """Tensors for DNLI: context, question, options (padded to max_options, masked)."""
        pad = self.tok.pad_token_id
        k = self.s.max_options
        p_ids, p_mask = self._pad(
            [self.tok(c, truncation=True, max_length=self.s.max_length)["input_ids"] for c, _, _, _ in mc],
            pad,
        )
        q_ids, q_mask = self._pad(
            [
                self.tok(q, truncation=True, max_length=self.s.max_option_length)["input_ids"]
                for _, q, _, _ in mc
            ],
            pad,
        )
        opts = [
            self.tok(o, truncation=True, max_length=self.s.max_option_length)["input_ids"]
            for _, _, options, _ in mc
            for o in options[:k]
        ]
        o_ids, o_mask = self._pad(opts, pad)
        index = [i for i, (_, _, options, _) in enumerate(mc) for _ in options[:k]]
        option_mask = torch.tensor([[j < len(options) for j in range(k)] for _, _, options, _ in mc])
        return {
            "p_ids": p_ids,
            "p_mask": p_mask,
            "q_ids": q_ids,
            "q_mask": q_mask,
            "o_ids": o_ids,
            "o_mask": o_mask,
            "option_index": torch.tensor(index, dtype=torch.long),
            "option_mask": option_mask,
            "dnli_labels": torch.tensor([g if g is not None else -100 for *_, g in mc]),
        }

    def collate(self, examples: list[dict]) -> dict:
        pad = self.tok.pad_token_id
        src_ids, src_mask = self._pad([e["src_ids"] for e in examples], pad)
        dec_in, _ = self._pad([e["tgt_ids"][:-1] for e in examples], pad)
        dec_out, _ = self._pad([e["tgt_ids"][1:] for e in examples], -100)
        batch = {"src_ids": src_ids, "src_mask": src_mask, "dec_in": dec_in, "dec_out": dec_out}
        if self.plain:
            return batch
        cwl, _ = self._pad([e["cwl"] for e in examples], -100)
        mark_ids, mark_mask = self._pad([e["mark_ids"] for e in examples], pad)
        batch.update(cwl_labels=cwl, mark_ids=mark_ids, mark_mask=mark_mask)
        mc = [m for e in examples for m in e["mc"]]
        if mc:
            batch.update(self.multiple_choice(mc))
        return batch


def _to(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device) for k, v in batch.items()}


def _rng_state(device: torch.device) -> dict:
    """The random states as tensors and plain values, so that a checkpoint loads with
    `weights_only=True` (no pickled objects: a checkpoint runs no code when resumed)."""
    import numpy as np

    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": [random.getstate()[0], list(random.getstate()[1]), random.getstate()[2]],
        "numpy": [
            str(kind),
            torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            int(pos),
            int(has_gauss),
            float(cached),
        ],
        "torch": torch.get_rng_state(),
        # the training GPU's own generator only: a CPU run starts no CUDA, a resume needs no other GPU
        "cuda": [torch.cuda.get_rng_state(device)] if device.type == "cuda" else [],
    }


def _set_rng_state(state: dict, device: torch.device) -> None:
    import numpy as np

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and device.type == "cuda":  # a CPU run resumes a GPU checkpoint without it
        torch.cuda.set_rng_state(state["cuda"][0], device)


def _resume(last: Path) -> dict | None:
    """The last checkpoint, loaded as data only (`weights_only=True`: tensors and plain values,
    never code), or None with a warning when it cannot be loaded that way (training restarts).
    Every tensor lands on the CPU: the random states must be CPU tensors, and `load_state_dict`
    copies the model's and the optimizer's onto the training device."""
    try:
        return torch.load(last, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001  an unreadable or foreign checkpoint is not resumed
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        logging.getLogger("medsimp").warning(
            "%s is not a checkpoint medsimp can load as data (%s): training starts from the first epoch",
            last,
            reason,
        )
        return None


AMP_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def select_device(device: str, mixed_precision: str) -> tuple[torch.device, str]:
    """The training device and mixed-precision mode params `train.device` / `train.mixed_precision`
    ask for (`auto`: CUDA when torch sees one; fp16 there, off on CPU). What cannot be had here is
    one line (UsageError): CUDA without a visible device, mixed precision off CUDA, bf16 on a GPU
    without it."""
    cuda = torch.cuda.is_available()
    if device == "cuda" and not cuda:
        raise UsageError("train.device is cuda but torch sees no CUDA device here: set it to auto or cpu")
    chosen = torch.device("cuda" if device == "cuda" or (device == "auto" and cuda) else "cpu")
    mode = ("fp16" if chosen.type == "cuda" else "off") if mixed_precision == "auto" else mixed_precision
    if mode != "off" and chosen.type != "cuda":
        raise UsageError(
            f"train.mixed_precision {mode} runs on CUDA only; training here is on the CPU: set it to auto or off"
        )
    if mode == "bf16" and not torch.cuda.is_bf16_supported(including_emulation=False):
        raise UsageError("train.mixed_precision bf16: this GPU has no bfloat16 support; use fp16")
    return chosen, mode


def train(
    train_pairs: list[Pair],
    val_pairs: list[Pair],
    dictionary: dict[str, list[str]],
    s: Train,
    checkpoint_dir: Path,
    progress: bool = True,
    val_terms: Sequence[Mapping[str, str]] | None = None,
    system: str = "declare",
    *,
    device: str,
    mixed_precision: str,
) -> tuple[Encoded, Featurizer, dict]:
    """Train `system` (declare: the joint loss; bertmt: Lr) on `device` with `mixed_precision`
    (params train.device / train.mixed_precision, `select_device`); returns the best model (lowest
    validation loss) and a log. `val_terms`: the annotated terms of each validation pair
    (locator labels, DNLI gold)."""
    from torch.utils.data import DataLoader
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    seed_everything(s.seed, s.threads)
    device_, mode = select_device(device, mixed_precision)
    use_amp, amp_dtype = mode != "off", AMP_DTYPES.get(mode)
    where = f"cuda ({torch.cuda.get_device_name(device_)})" if device_.type == "cuda" else "cpu"
    logging.getLogger(__name__).info(
        "train %s: device %s, mixed precision %s, batch size %d, %d CPU threads",
        system, where, mode, s.batch_size, s.threads,
    )  # fmt: skip
    tokenizer, encoder, used = load_backbone(s.encoder, s.encoder_fallback)
    feat = Featurizer(tokenizer, dictionary, s, plain=system == "bertmt")
    model = _build(system, encoder, s).to(device_)
    train_ex = [feat.example(a, b) for a, b in train_pairs]
    annotations: list[Mapping[str, str] | None] = [*(val_terms or [])] or [None] * len(val_pairs)
    val_ex = [feat.example(a, b, t) for (a, b), t in zip(val_pairs, annotations, strict=True)]
    gen = torch.Generator().manual_seed(s.seed)
    loader = DataLoader(
        train_ex, batch_size=s.batch_size, shuffle=True, generator=gen, collate_fn=feat.collate
    )
    val_loader = DataLoader(val_ex, batch_size=s.batch_size, shuffle=False, collate_fn=feat.collate)
    enc_params = [p for n, p in model.named_parameters() if n.startswith("encoder.")]
    head_params = [p for n, p in model.named_parameters() if not n.startswith("encoder.")]
    optim = torch.optim.AdamW(
        [{"params": enc_params, "lr": s.lr}, {"params": head_params, "lr": s.head_lr}],
        weight_decay=s.weight_decay,
    )
    total = max(1, len(loader) * s.epochs)
    sched = get_linear_schedule_with_warmup(optim, int(s.warmup_ratio * total), total)
    scaler = torch.amp.GradScaler("cuda", enabled=mode == "fp16")  # bf16 needs no loss scaling
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    last, best_path = checkpoint_dir / "last.pt", checkpoint_dir / "best.pt"
    log: dict = {
        "epochs": [],
        "best_epoch": None,
        "best_val_loss": None,
        "encoder": used,
        "encoder_fallback": used != s.encoder,
        "resumed_from": None,
        "device": device_.type,
        "amp": use_amp,
    }
    if use_amp:
        log["amp_dtype"] = mode
    start, bad = 0, 0
    ck = _resume(last) if last.exists() else None
    if ck is not None:
        model.load_state_dict(ck["model"])
        optim.load_state_dict(ck["optim"])
        sched.load_state_dict(ck["sched"])
        scaler.load_state_dict(ck["scaler"])
        gen.set_state(ck["gen"])
        _set_rng_state(ck["rng"], device_)
        start, bad, log = ck["epoch"] + 1, ck["bad"], ck["log"]
        log["resumed_from"] = ck["epoch"]
    for epoch in range(start, s.epochs):
        if bad and bad >= s.patience:  # `patience` epochs in a row without improvement (Keras, Lightning)
            break
        model.train()
        bar = tqdm(loader, desc=f"{system} epoch {epoch + 1}/{s.epochs}", disable=not progress, leave=False)
        running = 0.0
        for n, batch in enumerate(bar, 1):
            with torch.autocast(device_type=device_.type, dtype=amp_dtype, enabled=use_amp):
                parts = model.losses(_to(batch, device_))
                loss = sum(parts.values())
            optim.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optim)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optim)
            scaler.update()
            sched.step()
            running += float(loss.detach())
            bar.set_postfix(
                loss=f"{running / n:.3f}", **{k: f"{float(v.detach()):.2f}" for k, v in parts.items()}
            )
        val = evaluate_loss(model, val_loader, device_, amp_dtype)
        log["epochs"].append(
            {
                "epoch": epoch + 1,
                "train_loss": round(running / max(1, len(loader)), 6),
                **{f"val_{k}": round(v, 6) for k, v in val.items()},
            }
        )
        if log["best_val_loss"] is None or val["loss"] < log["best_val_loss"]:
            log["best_val_loss"], log["best_epoch"], bad = val["loss"], epoch + 1, 0
            torch.save(model.state_dict(), best_path)
        else:
            bad += 1
        torch.save(
            {
                "model": model.state_dict(),
                "optim": optim.state_dict(),
                "sched": sched.state_dict(),
                "scaler": scaler.state_dict(),
                "gen": gen.get_state(),
                "rng": _rng_state(device_),
                "epoch": epoch,
                "bad": bad,
                "log": log,
            },
            last,
        )
    if best_path.exists():
        model.load_state_dict(torch.load(best_path, map_location=device_, weights_only=True))
    return model, feat, log


def _build(system: str, encoder, s: Train) -> Encoded:
    if system == "declare":
        return Declare(encoder, s.dropout, s.copy_attention, s.decoder)
    if system == "bertmt":
        return BertMT(encoder, s.copy_attention, s.decoder)
    raise ValueError(f"system must be one of {', '.join(SYSTEMS)}, not {system!r}")


@torch.no_grad()
def evaluate_loss(
    model: Encoded, loader, device: torch.device, amp_dtype: torch.dtype | None
) -> dict[str, float]:
    """Mean validation losses per part (Lp, Lq, Lr for DECLARE; Lr for BERT-MT) and their sum."""
    model.eval()
    sums: dict[str, float] = {}
    n = 0
    for batch in loader:
        with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            parts = model.losses(_to(batch, device))
        for k, v in parts.items():
            sums[k] = sums.get(k, 0.0) + float(v)
        n += 1
    out = {k: v / max(1, n) for k, v in sums.items()}
    out["loss"] = sum(out.values())
    return out


@torch.no_grad()
def predict(model: Encoded, feat: Featurizer, sources: list[list[str]], batch_size: int = 32) -> list[str]:
    """One output sentence per source: DECLARE's CWL -> DNLI -> RSSP partial translation, or
    BERT-MT's greedy generation (at most `max_length` tokens), re-tokenized as the metrics see it."""
    model.eval()
    device = next(model.parameters()).device
    if isinstance(model, BertMT):
        return _generate(model, feat, sources, batch_size, device)
    assert isinstance(model, Declare)
    outputs = []
    for lo in range(0, len(sources), batch_size):
        chunk = sources[lo : lo + batch_size]
        for src, choices in zip(chunk, _interpret(model, feat, chunk, device)):
            outputs.append(_polish(model, feat, src, choices, device))
    return outputs


def _generate(
    model: BertMT, feat: Featurizer, sources: list[list[str]], batch_size: int, device
) -> list[str]:
    from medsimp.text.words import lower_tokens as tokenize

    outputs = []
    for lo in range(0, len(sources), batch_size):
        ids, mask = feat._pad(
            [feat.words(w)["input_ids"] for w in sources[lo : lo + batch_size]], feat.tok.pad_token_id
        )
        for toks in model.generate(
            ids.to(device), mask.to(device), feat.tok.cls_token_id, feat.tok.sep_token_id, feat.s.max_length
        ):
            text = feat.tok.decode(toks, skip_special_tokens=True, clean_up_tokenization_spaces=False)
            outputs.append(" ".join(tokenize(text)))
    return outputs


def _interpret(model: Declare, feat: Featurizer, chunk: list[list[str]], device) -> list[dict[int, str]]:
    """Locate terms (CWL) and choose one expansion each (DNLI); unknown terms stay."""
    encs = [feat.words(w) for w in chunk]
    ids, mask = feat._pad([e["input_ids"] for e in encs], feat.tok.pad_token_id)
    pred = model.cwl(model.encode(ids.to(device), mask.to(device))).argmax(-1).cpu()
    located: list[tuple[int, int]] = []
    for b, e in enumerate(encs):
        seen = set()
        for pos, w in enumerate(e.word_ids()):
            if w is None or w in seen:
                continue
            seen.add(w)
            if int(pred[b, pos]) == MODIFY and chunk[b][w] in feat.dict:
                located.append((b, w))
    choices: list[dict[int, str]] = [{} for _ in chunk]
    multi = []
    for b, w in located:
        options = feat.dict[chunk[b][w]][: feat.s.max_options]
        if len(options) == 1:
            choices[b][w] = options[0]
        else:
            multi.append((b, w, options))
    if multi:
        mc: list[tuple[str, str, list[str], int | None]] = [
            (masked_context(chunk[b], w, feat.tok.mask_token), chunk[b][w], opts, None)
            for b, w, opts in multi
        ]
        batch = {k: v.to(device) for k, v in feat.multiple_choice(mc).items() if k != "dnli_labels"}
        best = model.dnli_logits(batch).argmax(-1).cpu()
        for (b, w, opts), k in zip(multi, best.tolist()):
            choices[b][w] = opts[k]
    return choices


def _polish(model: Declare, feat: Featurizer, src: list[str], choices: dict[int, str], device) -> str:
    """RSSP over the marked sentence: copy outside spans (source words), generate inside them."""
    marked = marked_source(src, choices)
    if not choices:
        return " ".join(src)
    enc = feat.words(marked)
    ids = torch.tensor([enc["input_ids"]], device=device)
    memory = model.encode(ids, torch.ones_like(ids))
    mask = torch.ones_like(ids, dtype=torch.bool)
    state = [model.rssp.init_state(memory, mask)]

    def step(prev: int, want: bool) -> int | None:
        emb = model.rssp.embeddings(torch.tensor([prev], device=device))
        feed, att, state[0] = model.rssp.step(emb, state[0], memory, mask)
        return int(model.rssp.log_probs(feed, att, emb, ids).argmax(-1)) if want else None

    body = enc["input_ids"][1:-1]
    segments = partial_translate(body, feat.start_id, feat.end_id, step, enc["input_ids"][0], feat.s.max_span)
    word_ids = enc.word_ids()[1:-1]
    pieces: list[str] = []
    last_word = -1
    for kind, content in segments:
        if kind == "gen":
            text = feat.tok.decode(content, skip_special_tokens=True, clean_up_tokenization_spaces=False)
            pieces += text.split()
            ends = [k for k in range(last_word + 1, len(marked)) if marked[k] == SPAN_END]
            last_word = ends[0] if ends else len(marked) - 1
        else:
            for w in dict.fromkeys(word_ids[p] for p in content):
                if w is not None and w > last_word:
                    pieces.append(marked[w])
                    last_word = w
    rest = [w for w in marked[last_word + 1 :] if w not in (SPAN_START, SPAN_END)]
    return " ".join(pieces + rest)


def save(model: Encoded, feat: Featurizer, out: Path, log: dict) -> None:
    """Encoder config + tokenizer, weights (`<system>.safetensors`), settings, dictionary and training log."""
    model.encoder.config.save_pretrained(out / "encoder")
    feat.tok.save_pretrained(out / "encoder")
    from safetensors.torch import save_model

    name = "bertmt" if isinstance(model, BertMT) else "declare"
    save_model(model, str(out / f"{name}.safetensors"))  # byte-stable, unlike torch.save
    settings = feat.s.model_dump(exclude=UNSAVED_KEYS)
    (out / "settings.json").write_text(json.dumps(settings, sort_keys=True, indent=2) + "\n")
    (out / "dictionary.json").write_text(json.dumps(feat.dict, sort_keys=True, indent=1) + "\n")
    (out / "train_log.json").write_text(json.dumps(log, sort_keys=True, indent=2) + "\n")


def load(out: Path) -> tuple[Encoded, Featurizer]:
    """Rebuild a saved DECLARE or BERT-MT model (no hub access: config and weights are local)."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    require_pinned(torch)

    tokenizer = AutoTokenizer.from_pretrained(out / "encoder")
    encoder = AutoModel.from_config(AutoConfig.from_pretrained(out / "encoder"))
    s = Train.model_validate(json.loads((out / "settings.json").read_text()))  # params `train` as trained
    system = "bertmt" if (out / "bertmt.safetensors").exists() else "declare"
    model = _build(system, encoder, s)
    from safetensors.torch import load_model

    load_model(model, str(out / f"{system}.safetensors"))
    dictionary = json.loads((out / "dictionary.json").read_text())
    return model, Featurizer(tokenizer, dictionary, s, plain=system == "bertmt")
