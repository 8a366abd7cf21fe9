"""A transformer's linear layers computed by numpy's OpenBLAS instead of torch's MKL (the
`matmul: blas` option of a sentence-transformers encoder, `alignment.encoders.STEncoder`).

medsimp pins both to kernels every x86-64 CPU runs alike (medsimp.numerics): torch's MKL to its
SSE2 branch (`MKL_CBWR=COMPATIBLE`), numpy's OpenBLAS to its AVX2 kernels
(`OPENBLAS_CORETYPE=Haswell`). The products are most of MiniLM's CPU, and OpenBLAS's AVX2 kernels
do them in about a third of the time: the encoder costs 0.58x its CPU, vectors within 2e-7 of
torch's (another order of float sums, so not the same bits; docs/alignment.md "English
alignment CPU"). Inference only: no gradients flow through the weights.
"""

from __future__ import annotations

import numpy as np
import torch


class BlasLinear(torch.nn.Module):
    """`y = x W^T + b` of a `torch.nn.Linear`, by numpy's matrix product."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.weight_t = np.ascontiguousarray(linear.weight.detach().numpy().T)
        self.bias = None if linear.bias is None else linear.bias.detach().numpy().copy()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xs = x.detach().numpy()
        y = xs.reshape(-1, xs.shape[-1]) @ self.weight_t
        if self.bias is not None:
            y += self.bias
        return torch.from_numpy(y.reshape(*xs.shape[:-1], y.shape[-1]))


def blas_linears(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with each `torch.nn.Linear` replaced by a `BlasLinear` of the same weights."""
    for name, module in list(model.named_modules()):
        if isinstance(module, torch.nn.Linear):
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, child, BlasLinear(module))
    return model
