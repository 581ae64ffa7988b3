"""The projections of a Qwen3 layer: ``x @ W^T`` with ``W`` in Hugging Face's ``[out, in]`` layout
(the cube reads it transposed: ``b_trans=True``), alone or with the residual add that consumes it
in one mixed scope — the seed's pattern: the cube computes the product, the vector lanes add the
residual, split by columns so any number of rows (one decode token per batch row) halves.
"""

from __future__ import annotations

import pypto.language as pl


@pl.jit.incore
def linear(x: pl.Tensor, weight: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out = x @ weight^T`` in FP32: ``x`` ``[rows, in]``, ``weight`` ``[out, in]`` (HF's layout),
    ``out`` ``[rows, out]``."""
    out[:] = pl.matmul(x, weight, out_dtype=pl.FP32, b_trans=True)
    return out


@pl.jit
def linear_residual(x: pl.Tensor, weight: pl.Tensor, residual: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out = residual + x @ weight^T`` (FP32), the cube's product handed to the vector lanes."""
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)],
        name_hint="projection_residual",
    ):
        out[:] = pl.add(pl.matmul(x, weight, out_dtype=pl.FP32, b_trans=True), residual)
    return out
