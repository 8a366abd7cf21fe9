"""The same numbers on any x86-64 CPU: PyTorch's CPU kernels pinned to code paths that do not
depend on the instruction set.

PyTorch picks its CPU code at run time from what the processor offers: ATen's vectorised kernels
(AVX-512, AVX2 or plain), MKL's GEMM branch and oneDNN's JIT kernels, each with its own order of
float additions. A model trained on an AVX-512 Intel machine and on an AVX2 AMD machine therefore
ends a few ulps apart after the first step and visibly apart after an epoch (issue 35 item 0:
the CRF aligner, DECLARE and BERT-MT of `dvc repro` moved `dvc.lock` on an AMD EPYC). medsimp
pins every one of them to a branch that every x86-64 CPU runs alike:

- `ATEN_CPU_CAPABILITY=default`: ATen's portable kernels (no AVX2/AVX-512 variants);
- `MKL_CBWR=COMPATIBLE`: MKL's conditional numerical reproducibility branch for Intel and
  compatible processors (SSE2 without the approximate rcpps/rsqrtps, whose results differ by vendor);
- `torch.backends.mkldnn.enabled = False`: no oneDNN JIT kernels, whose blocking follows the ISA
  and the cache sizes;
- `OPENBLAS_CORETYPE=Haswell`: numpy's and scipy's OpenBLAS run their AVX2 kernels on every
  machine instead of the ones for the processor found (SkylakeX, Cooperlake, Zen...): the CRF's
  features and Vecalign's embeddings go through `numpy.dot`, and an AVX-512 AMD EPYC trained the
  aligner to other weights than an AVX2 one (issue 35 item 0, second round). AVX2 and FMA are on
  every x86-64 server CPU since 2013 (Intel Haswell, AMD Excavator / Zen); an older CPU is not
  supported;
- a fixed thread count (params: `align.crf.threads`, `train.threads`, ...) and PyTorch's
  deterministic algorithms, set where each model is trained.

The environment variables are read once, at the first kernel PyTorch runs, so `pin()` runs when
`medsimp` is imported (before any medsimp code can touch torch) and child processes (Beam
workers, DVC stages) inherit them. `require_pinned(torch)` is called where a model is trained
or an encoder is built: a process that ran torch kernels before importing medsimp gets one clear
error instead of numbers that differ by machine. Cost, measured on a 2-core AMD EPYC (docs/
refresh.md "Same numbers on any CPU"): about 2x the wall time of PyTorch's fastest kernels on
transformer training steps.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from medsimp.errors import MedsimpError

# What every medsimp process runs with (values a user sets are replaced: the promise is the
# same bytes on every machine, and a per-machine choice would break it silently).
PINNED_ENV = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "OPENBLAS_CORETYPE": "Haswell"}
PINNED_CAPABILITY = "DEFAULT"  # what torch.backends.cpu.get_cpu_capability() reports once pinned


def pin() -> None:
    """Set the kernel choices in this process's environment (children inherit them). Has effect
    only while torch has run no kernel in this process; `require_pinned` checks that it did."""
    os.environ.update(PINNED_ENV)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.backends.mkldnn.enabled = False


def require_pinned(torch: Any) -> None:
    """Refuse to train or encode with kernels that depend on the CPU: the pinning must have
    happened before the first torch kernel of this process."""
    pin()  # a no-op when done already; sets mkldnn off for a torch imported after medsimp
    capability = torch.backends.cpu.get_cpu_capability()
    if capability != PINNED_CAPABILITY:
        raise MedsimpError(
            f"torch already chose CPU kernels for this machine ({capability}) before medsimp was "
            f"imported, so results would differ from other CPUs: {_HOW}"
        )
    cores = openblas_cores()
    if any(core.lower() != PINNED_ENV["OPENBLAS_CORETYPE"].lower() for core in cores):
        raise MedsimpError(
            f"numpy's OpenBLAS was loaded with this machine's kernels ({', '.join(sorted(set(cores)))}) "
            f"before medsimp was imported, so results would differ from other CPUs: {_HOW}"
        )


_HOW = "import medsimp before numpy and torch, or start Python with " + " ".join(
    f"{k}={v}" for k, v in PINNED_ENV.items()
)


def openblas_cores() -> list[str]:
    """The kernel family (OpenBLAS's core type) of every OpenBLAS loaded in this process (numpy's,
    scipy's), as `threadpoolctl` reads it from the libraries; [] when none is loaded."""
    from threadpoolctl import threadpool_info

    return [
        str(lib.get("architecture") or "")
        for lib in threadpool_info()
        if lib.get("internal_api") == "openblas"
    ]
