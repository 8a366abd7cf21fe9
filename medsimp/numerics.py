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
- `NPY_DISABLE_CPU_FEATURES` = the AVX-512 targets of numpy's own dispatch: numpy picks its
  ufunc loops (`tanh`, `exp`, `log`, ...) by instruction set too, and their results differ in the
  last bits (measured here: float32 `tanh`, `exp`, `log` and float64 `tanh` of the same array
  under the AVX2 and the SSE loops), so Vecalign's USE encoder (pure numpy, `np.tanh`) gave an
  AVX-512 machine other vectors than an AVX2 one and a fresh clone's `dvc repro` moved `align`,
  `filter` and the MultiCochrane builder on an AVX2 AMD EPYC (issue 38 item 7). Without its
  AVX-512 loops every AVX2 machine runs the same [AVX2, FMA3] loops;
- a fixed thread count (params: `align.crf.threads`, `train.threads`, ...) and PyTorch's
  deterministic algorithms, set where each model is trained.

ATen's and MKL's variables are read at the first kernel PyTorch runs, OpenBLAS's and numpy's
own when numpy (or scipy) loads, so `pin()` runs when `medsimp` is imported, before any medsimp code can import
numpy or touch torch, and child processes (local Beam workers, DVC stages) inherit them. Workers
started by a cluster (an EXTERNAL pool, Flink, Spark, Dataflow) do not: they import numpy with
Beam, so their environment must set `PINNED_ENV` (docker/worker.Dockerfile, docs/refresh.md).
`require_pinned(torch)` is called where a torch model is trained or an encoder is built, and
`require_blas_pinned()` where numpy's BLAS computes what is written (the CRF aligner, Vecalign's
USE encoder and dynamic programme): a process whose kernels were chosen before medsimp could pin
them gets one clear error instead of numbers that differ by machine (numpy imported before
medsimp on an AVX-512 machine also loaded OpenBLAS with that machine's kernels, which
`require_blas_pinned` refuses, and so does numpy's own AVX-512 dispatch found active in
`__cpu_features__`, what `numpy.show_runtime()` reads). The OpenBLAS pin needs
AVX2 and FMA; on x86-64 without them medsimp refuses in one line, and on other architectures
it is not set (no promise across architectures). Cost, measured on a 2-core AMD EPYC (docs/
refresh.md "Same numbers on any CPU"): about 2x the wall time of PyTorch's fastest kernels on
transformer training steps; the OpenBLAS pin 1.02-1.04x of its own choice on numpy's share.
"""

from __future__ import annotations

import functools
import os
import platform
import shlex
import sys
from typing import Any

from medsimp.errors import MedsimpError

# What every medsimp process runs with (values a user sets are replaced: the promise is the
# same bytes on every machine, and a per-machine choice would break it silently).
# numpy's AVX-512 dispatch targets (numpy 1.26, constraints.txt; tests/test_cpu_dispatch.py
# checks the installed numpy has no other): disabled, so numpy runs its AVX2 loops everywhere
NUMPY_AVX512 = (
    "AVX512F",
    "AVX512CD",
    "AVX512_KNL",
    "AVX512_KNM",
    "AVX512_SKX",
    "AVX512_CLX",
    "AVX512_CNL",
    "AVX512_ICL",
)
PINNED_ENV = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE",
    "OPENBLAS_CORETYPE": "Haswell",
    "NPY_DISABLE_CPU_FEATURES": " ".join(NUMPY_AVX512),
}
# Not a kernel choice (it moves no bit) but how PyTorch's OpenMP threads wait between parallel
# regions: passively (asleep) instead of spinning. On a machine with as many threads wanted as
# cores, e.g. two 2-thread trainings, or training beside Beam workers or pytest-xdist workers on 2
# cores, spinning threads burn the core their partner waits for: one DECLARE training step beside
# another took 10.1 s (11.7 CPU-s) spinning and 4.0 s (5.6 CPU-s) passive, and alone the same
# either way (docs/refresh.md "Same numbers on any CPU"). A value the user sets is kept.
IDLE_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}
PINNED_CAPABILITY = "DEFAULT"  # what torch.backends.cpu.get_cpu_capability() reports once pinned
BLAS_FLAGS = ("avx2", "fma")  # what OpenBLAS's Haswell kernels execute


@functools.cache
def cpu_kind() -> str:
    """'x86-avx2' (x86-64 with AVX2 and FMA, or flags unreadable), 'x86-old' (x86-64 without
    them: the Haswell kernels would stop the process with an illegal instruction), 'other'."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return "other"
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            flags = next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), None)
    except OSError:
        flags = None
    return "x86-avx2" if flags is None or all(f in flags for f in BLAS_FLAGS) else "x86-old"


def _pinned_env() -> dict[str, str]:
    """PINNED_ENV for this machine: OpenBLAS's core type only where its kernels can run, numpy's
    x86 targets only on x86 (elsewhere numpy would warn that it has no such targets)."""
    kind = cpu_kind()
    drop = {"x86-avx2": (), "x86-old": ("OPENBLAS_CORETYPE",)}.get(
        kind, ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")
    )
    return {k: v for k, v in PINNED_ENV.items() if k not in drop}


def pin() -> None:
    """Set the kernel choices in this process's environment (children inherit them). Has effect
    only while torch has run no kernel in this process; `require_pinned` checks that it did.
    `IDLE_ENV` (OpenMP's wait policy) is read when torch loads: it takes effect for a torch
    imported after this call, and in children."""
    os.environ.update(_pinned_env())
    for key, value in IDLE_ENV.items():
        os.environ.setdefault(key, value)
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


_BLAS_CHECKED = False


def require_blas_pinned() -> None:
    """Refuse to compute with numpy's BLAS on kernels that depend on the CPU: OpenBLAS must have
    been loaded after `pin()` (checked once a process: a loaded library keeps its kernels)."""
    global _BLAS_CHECKED
    if _BLAS_CHECKED:
        return
    kind = cpu_kind()
    if kind == "x86-old":
        raise MedsimpError(
            "this x86-64 CPU has no AVX2/FMA, which the CPU-independent BLAS kernels medsimp pins "
            "(OPENBLAS_CORETYPE=Haswell) need: results here could not equal other machines'"
        )
    if kind == "x86-avx2":
        cores = openblas_cores()
        if any(core.lower() != PINNED_ENV["OPENBLAS_CORETYPE"].lower() for core in cores):
            raise MedsimpError(
                f"numpy's OpenBLAS was loaded with this machine's kernels ({', '.join(sorted(set(cores)))}) "
                f"before medsimp was imported, so results would differ from other CPUs: {_HOW}"
            )
        wide = numpy_wide_loops()
        if wide:
            raise MedsimpError(
                f"numpy was loaded with this machine's AVX-512 loops ({', '.join(wide)}) before medsimp "
                f"was imported, so exp, log and tanh would differ from other CPUs: {_HOW}"
            )
    _BLAS_CHECKED = True


def numpy_wide_loops() -> list[str]:
    """The AVX-512 targets of `NUMPY_AVX512` that numpy's own dispatch has active in this process
    (numpy reads NPY_DISABLE_CPU_FEATURES once, at import, into `__cpu_features__`, where a
    disabled feature reads False: what `numpy.show_runtime()` reports); [] when numpy is not
    loaded yet (it will load pinned) or all are off. The OpenBLAS check alone passed a process
    that set only OPENBLAS_CORETYPE and imported numpy first (issue 54)."""
    if "numpy" not in sys.modules:
        return []
    from numpy.core._multiarray_umath import __cpu_features__ as features  # numpy 1.26

    return [name for name in NUMPY_AVX512 if features.get(name)]


_HOW = "import medsimp before numpy and torch, or start Python with " + " ".join(
    f"{k}={shlex.quote(v)}" for k, v in PINNED_ENV.items()
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
