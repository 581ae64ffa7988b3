"""RMSNorm as Qwen3 has it: ``weight * (x * rsqrt(mean(x^2) + eps))``, the statistics in FP32.

Each row of ``x`` (one token's hidden state) is normalised on its own; the kernel is one core-group
scope whose tensor ops the compiler tiles by rows. For a BF16 / FP16 ``x`` the normalised value is
cast back to ``x``'s dtype before the weight multiplies it, as transformers' ``Qwen3RMSNorm`` does.
"""

from __future__ import annotations

import pypto.language as pl


@pl.jit.incore
def rmsnorm(x: pl.Tensor, weight: pl.Tensor, out: pl.Out[pl.Tensor], eps: pl.FP32):
    """``out = weight * rmsnorm(x)``: ``x`` and ``out`` ``[rows, hidden]``, ``weight`` ``[1, hidden]``."""
    hidden = x.shape[1]
    wide = x if x.dtype == pl.FP32 else pl.cast(x, pl.FP32)
    mean_square = pl.mul(pl.row_sum(pl.mul(wide, wide)), 1.0 / hidden)
    normed = pl.row_expand_mul(wide, pl.rsqrt(pl.add(mean_square, eps)))
    narrow = normed if x.dtype == pl.FP32 else pl.cast(normed, x.dtype)
    out[:] = pl.col_expand_mul(narrow, weight)
    return out
