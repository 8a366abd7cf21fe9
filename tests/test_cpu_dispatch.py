"""The same model bytes on any x86-64 CPU (issue 35 item 0): PyTorch picks kernels by instruction
set (ATen AVX2/AVX-512, MKL's GEMM branch, oneDNN), so an AVX-512 Intel and an AVX2 AMD machine
trained the CRF aligner and DECLARE to different weights and a fresh clone's `dvc repro` moved
dvc.lock; numpy's OpenBLAS does the same (an AVX-512 AMD EPYC, OpenBLAS core Cooperlake, trained
the aligner to other weights than an AVX2 one), and so does numpy's own ufunc dispatch (USE's
`np.tanh` under AVX-512 and AVX2 loops moved align on an AVX2 EPYC). medsimp pins CPU-independent kernels
(medsimp.numerics); these tests train under two dispatch settings that stand in for two CPUs and
compare the bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from medsimp.numerics import NUMPY_AVX512

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "fixtures" / "dispatch" / "train_both.py"
SAMPLE = ROOT / "data" / "sample" / "medlane"

# What a newer and an older x86-64 CPU would make PyTorch choose; medsimp must undo both.
WIDE = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OPENBLAS_CORETYPE": None,  # unset: OpenBLAS would pick this CPU's own kernels
    "NPY_DISABLE_CPU_FEATURES": None,  # unset: numpy would run this CPU's widest loops
}
NARROW = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "MKL_CBWR": "AUTO",
    "OPENBLAS_CORETYPE": "Prescott",  # SSE3 kernels; WIDE leaves OpenBLAS to pick this CPU's own
    # numpy's SSE4.2 loops (other tanh/exp bits); its AVX-512 loops do not check for AVX2, so on an
    # AVX-512 CPU they are switched off by name too
    "NPY_DISABLE_CPU_FEATURES": " ".join(("AVX", "F16C", "FMA3", "AVX2", *NUMPY_AVX512)),
}


def _last_line(argv: list[str], extra: dict[str, str | None], cwd: Path, timeout: float) -> str:
    """The last stdout line of `python argv` with `extra` over this environment (None: unset)."""
    env = {k: v for k, v in {**os.environ, "HF_HUB_OFFLINE": "1", **extra}.items() if v is not None}
    done = subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def _digests(extra: dict[str, str | None], tmp_path: Path) -> dict[str, str]:
    return json.loads(_last_line([str(SCRIPT), str(SAMPLE)], extra, tmp_path, timeout=600))


@pytest.mark.slow  # two trainings of MiniLM-based models (about a minute)
def test_crf_and_one_declare_epoch_train_to_the_same_bytes_under_two_dispatch_settings(tmp_path):
    wide = _digests(WIDE, tmp_path)
    narrow = _digests(NARROW, tmp_path)
    assert set(wide) == {"crf", "declare", "use"}
    assert wide == narrow


def test_numpys_loops_differ_by_dispatch_unless_medsimp_pins_them(tmp_path):
    """The stand-in for another CPU is real: numpy's SSE4.2 and AVX2 loops give other tanh bits
    (so the test above can fail), and after `import medsimp` a user's setting is replaced by the
    pinned one, in this process and its children."""
    code = (
        "import sys, hashlib\n"
        "if sys.argv[1] == 'pin':\n"
        "    import medsimp\n"
        "import numpy as np\n"
        "x = np.linspace(-3, 3, 4099, dtype=np.float32)\n"
        "print(hashlib.sha256(np.tanh(x).tobytes() + np.exp(x).tobytes()).hexdigest())\n"
    )

    def digest(mode: str, extra: dict[str, str | None]) -> str:
        return _last_line(["-c", code, mode], extra, tmp_path, timeout=120)

    narrow = {"NPY_DISABLE_CPU_FEATURES": NARROW["NPY_DISABLE_CPU_FEATURES"]}
    wide = {"NPY_DISABLE_CPU_FEATURES": None}
    assert digest("raw", narrow) != digest("raw", wide)
    assert digest("pin", narrow) == digest("pin", wide)


def test_every_avx512_target_of_the_installed_numpy_is_pinned_off():
    """numpy reads NPY_DISABLE_CPU_FEATURES at import and ignores names it does not dispatch to:
    a numpy upgrade that adds an AVX-512 target (numpy 2's AVX512_SPR) must add it to the pin."""
    import numpy as np

    from medsimp.numerics import NUMPY_AVX512, PINNED_ENV

    simd = np.show_config(mode="dicts")["SIMD Extensions"]  # dispatch targets: found + not found
    targets = {t for t in simd["found"] + simd["not found"] if t.startswith("AVX512")}
    assert targets == set(NUMPY_AVX512)
    assert PINNED_ENV["NPY_DISABLE_CPU_FEATURES"].split() == list(NUMPY_AVX512)


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_torch_kernels_chosen_before_medsimp_are_refused(tmp_path):
    """A process that ran torch kernels before importing medsimp cannot be pinned any more: the
    trainer says so in one line instead of writing machine-dependent weights."""
    code = (
        "import torch\n"
        "torch.ones(4, 4) @ torch.ones(4, 4)\n"  # the capability is chosen here, unpinned
        "import medsimp\n"
        "from medsimp.errors import MedsimpError\n"
        "from training.trainer import seed_everything\n"
        "try:\n"
        "    seed_everything(1, 1)\n"
        "except MedsimpError as exc:\n"
        "    print('refused:', exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused: torch already chose CPU kernels"), done.stdout


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_medsimp_import_pins_the_kernels_for_this_process_and_its_children(tmp_path):
    code = (
        "import medsimp, os, torch, numpy, scipy.linalg\n"  # numpy's and scipy's own OpenBLAS
        "from medsimp.numerics import openblas_cores, require_pinned\n"
        "require_pinned(torch)\n"
        "print(torch.backends.cpu.get_cpu_capability(), torch.backends.mkldnn.enabled,"
        " os.environ['ATEN_CPU_CAPABILITY'], os.environ['MKL_CBWR'], os.environ['OPENBLAS_CORETYPE'],"
        " ','.join(sorted(openblas_cores())))\n"
    )
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AUTO", "OPENBLAS_CORETYPE": "Prescott"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["DEFAULT", "False", "default", "COMPATIBLE", "Haswell", "Haswell,Haswell"]


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_numpy_loaded_before_medsimp_with_other_blas_kernels_is_refused(tmp_path):
    """numpy's OpenBLAS reads its kernel choice when numpy is imported: a process that imported
    numpy before medsimp, on kernels other than the pinned ones, is refused in one line."""
    code = (
        "import numpy\n"
        "import medsimp, torch\n"
        "from medsimp.errors import MedsimpError\n"
        "from medsimp.numerics import require_blas_pinned, require_pinned\n"
        "require_pinned(torch)\n"  # torch alone does not depend on numpy's BLAS: not refused
        "try:\n"
        "    require_blas_pinned()\n"
        "except MedsimpError as exc:\n"
        "    print('refused:', exc)\n"
    )
    env = {**os.environ, "OPENBLAS_CORETYPE": "Prescott"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(
        "refused: numpy's OpenBLAS was loaded with this machine's kernels (Prescott)"
    )


def test_numpy_loaded_first_with_only_openblas_pinned_is_refused_on_an_avx512_cpu(tmp_path):
    """Issue 54: with only OPENBLAS_CORETYPE set and numpy imported before medsimp, the BLAS
    check passed while numpy ran its AVX-512 exp/log loops, so CRF posteriors differed silently.
    numpy's active AVX-512 targets are refused too (on a CPU without AVX-512 there are none, and
    the process is not refused: it runs the pinned loops)."""
    code = (
        "import numpy\n"
        "import medsimp\n"
        "from medsimp.errors import MedsimpError\n"
        "from medsimp.numerics import NUMPY_AVX512, require_blas_pinned\n"
        "from numpy.core._multiarray_umath import __cpu_features__ as f\n"
        "print('wide' if any(f.get(n) for n in NUMPY_AVX512) else 'narrow')\n"
        "try:\n"
        "    require_blas_pinned()\n"
        "    print('computed')\n"
        "except MedsimpError as exc:\n"
        "    print('refused:', exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    env["OPENBLAS_CORETYPE"] = "Haswell"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loops, verdict = done.stdout.splitlines()
    if loops == "wide":  # an AVX-512 CPU: numpy chose the wide loops before medsimp could pin them
        assert verdict.startswith("refused: numpy was loaded with this machine's AVX-512 loops (AVX512F")
    else:
        assert verdict == "computed"
    pinned = subprocess.run(  # imported after medsimp: pinned, computes on every CPU
        [sys.executable, "-c", code.replace("import numpy\nimport medsimp\n", "import medsimp\nimport numpy\n")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert pinned.stdout.splitlines() == ["narrow", "computed"], pinned.stderr[-2000:]


def test_an_x86_cpu_without_avx2_is_refused_where_numpys_blas_computes(monkeypatch):
    """OpenBLAS's pinned Haswell kernels need AVX2 and FMA: on an older x86-64 medsimp does not
    force them (an illegal instruction would kill the process) and refuses in one line where
    numpy's BLAS computes what is written."""
    from medsimp import numerics
    from medsimp.errors import MedsimpError

    monkeypatch.setattr(numerics, "cpu_kind", lambda: "x86-old")
    monkeypatch.setattr(numerics, "_BLAS_CHECKED", False)
    assert "OPENBLAS_CORETYPE" not in numerics._pinned_env()
    assert "NPY_DISABLE_CPU_FEATURES" in numerics._pinned_env()  # numpy's loops: pinned on any x86
    with pytest.raises(MedsimpError, match="no AVX2/FMA"):
        numerics.require_blas_pinned()


def test_cluster_workers_are_told_every_pinned_variable():
    """Workers a cluster starts import numpy with Beam before medsimp: the worker image and the
    recipe in docs/refresh.md set every variable of PINNED_ENV, with medsimp's values."""
    from medsimp.numerics import PINNED_ENV

    image = (ROOT / "docker" / "worker.Dockerfile").read_text(encoding="utf-8")
    recipe = (ROOT / "docs" / "refresh.md").read_text(encoding="utf-8")
    for key, value in PINNED_ENV.items():
        setting = f'{key}="{value}"' if " " in value else f"{key}={value}"
        assert setting in image, f"docker/worker.Dockerfile does not set {setting}"
        assert setting in recipe, f"docs/refresh.md's worker recipe does not set {setting}"


def test_openmp_threads_wait_passively_unless_the_user_says_otherwise(tmp_path):
    """`import medsimp` makes PyTorch's OpenMP threads sleep between parallel regions instead of
    spinning (two 2-thread trainings on 2 cores ran twice as fast: medsimp.numerics.IDLE_ENV),
    for this process and its children; a user's own OMP_WAIT_POLICY is kept."""
    code = "import medsimp, os, subprocess, sys\nprint(os.environ['OMP_WAIT_POLICY'])\n"
    child = "import os; print(os.environ['OMP_WAIT_POLICY'])"
    code += (
        f"print(subprocess.run([sys.executable, '-c', {child!r}], capture_output=True, text=True).stdout)\n"
    )
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    for given, expected in ((None, "PASSIVE"), ("ACTIVE", "ACTIVE")):
        env = base if given is None else {**base, "OMP_WAIT_POLICY": given}
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split() == [expected, expected]
