"""RMSNorm as Qwen3 has it: ``weight * (x * rsqrt(mean(x^2) + eps))``, the statistics in FP32.

Each row of ``x`` (one token's hidden state) is normalised on its own; the kernel is one core-group
kernel whose tensor ops the compiler tiles by rows. The normalised value is cast to ``out``'s dtype
before the weight multiplies it, as transformers' ``Qwen3RMSNorm`` casts it back to the input
dtype: a BF16 model normalises its FP32 residual stream into BF16 for the projections.
"""

from __future__ import annotations

import pypto.language as pl


@pl.jit.incore
def rmsnorm(x: pl.Tensor, weight: pl.Tensor, out: pl.Out[pl.Tensor], eps: pl.FP32, layer: pl.INDEX = 0):
    """``out = weight[layer] * rmsnorm(x)``: ``x`` ``[rows, hidden]``, ``weight`` one row per layer
    ``[layers, hidden]`` (``[1, hidden]`` for one; in ``out``'s dtype), ``out`` ``[rows, hidden]``."""
    hidden = x.shape[1]
    wide = x if x.dtype == pl.FP32 else pl.cast(x, pl.FP32)
    mean_square = pl.mul(pl.row_sum(pl.mul(wide, wide)), 1.0 / hidden)
    normed = pl.row_expand_mul(wide, pl.rsqrt(pl.add(mean_square, eps)))
    narrow = normed if out.dtype == pl.FP32 else pl.cast(normed, out.dtype)
    out[:] = pl.col_expand_mul(narrow, weight[layer : layer + 1, :])
    return out


@pl.jit.inline
def rmsnorm_rows(x, weight, eps):
    """RMSNorm of each row of an FP32 tile ``x`` ``[rows, dim]`` by a ``[1, dim]`` FP32 weight tile
    (Qwen3's per-head q/k norm: ``rows`` heads of ``dim``)."""
    scratch = pl.create_tile(x.shape, pl.FP32)
    mean_square = pl.mul(pl.row_sum(pl.mul(x, x), scratch), 1.0 / x.shape[1])
    return pl.col_expand_mul(pl.row_expand_mul(x, pl.rsqrt(pl.add(mean_square, eps))), weight)
