"""The projections of a Qwen3 layer: ``x @ W^T`` with ``W`` in Hugging Face's ``[out, in]`` layout
(the cube reads it transposed: ``b_trans=True``), the layers' weights stacked along the rows
(``[layers * out, in]``, layer ``l``'s rows from ``l * out``).

A decode step multiplies a few rows by a large weight, so the output columns are cut into blocks
spread over the chip's core groups: one ``pl.spmd`` launch of equal blocks, and a tail launch when
the columns do not divide. :func:`projection` makes such a function; :func:`projection_residual`
the seed's mixed pattern at model scale — the cube computes each block's product and the vector
lanes add the residual to it in the same kernel, split by columns (``pl.SplitMode.LEFT_RIGHT``) so
that any number of rows, one decode token per batch row included, halves across the two lanes.

Each function names its kernels (``q_proj``, ``o_proj``, ...), which is how a profile tells the
model's modules apart; the implementation is one.
"""

from __future__ import annotations

from typing import Any

import pypto.language as pl

# Column blocks are multiples of this; a projection aims at one block per core group.
COLUMN_ALIGN = 64
CORE_GROUPS = pl.system.available_cluster_count()


@pl.jit.inline
def column_block(n):
    """The columns of one block: ``n`` spread over the core groups, rounded up to the alignment."""
    return (n + COLUMN_ALIGN * CORE_GROUPS - 1) // (COLUMN_ALIGN * CORE_GROUPS) * COLUMN_ALIGN


@pl.jit.inline
def times_rows_t(x, weight, row, rows):
    """``x @ weight[row : row + rows, :]^T`` in FP32: ``rows`` output columns."""
    return pl.matmul(x, weight[row : row + rows, :], out_dtype=pl.FP32, b_trans=True)


def projection(name: str) -> Any:
    """An ``@pl.jit.opaque`` ``project(x, weight, out, layer)``: ``out = x @ weight_layer^T`` (FP32),
    ``x`` ``[rows, in]``, ``weight`` ``[layers * out, in]``, ``out`` ``[rows, out]``; its kernels are
    named ``name`` (and ``name_tail``)."""
    tail = f"{name}_tail"

    def project(x: pl.Tensor, weight: pl.Tensor, out: pl.Out[pl.Tensor], layer: pl.INDEX):
        n = out.shape[1]
        block = column_block(n)
        full = n // block
        for i in pl.spmd(full, name_hint=name):
            out[:, i * block : i * block + block] = times_rows_t(x, weight, layer * n + i * block, block)
        if n > full * block:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint=tail):
                out[:, full * block : n] = times_rows_t(x, weight, layer * n + full * block, n - full * block)
        return out

    project.__name__ = project.__qualname__ = f"project_{name}"  # as the program shows it
    return pl.jit.opaque(project)


def projection_residual(name: str) -> Any:
    """An ``@pl.jit.opaque`` ``project(x, weight, residual, out, layer)``:
    ``out = residual + x @ weight_layer^T`` (FP32), one mixed kernel per column block."""
    tail = f"{name}_tail"

    def project(
        x: pl.Tensor, weight: pl.Tensor, residual: pl.Tensor, out: pl.Out[pl.Tensor], layer: pl.INDEX
    ):
        n = out.shape[1]
        block = column_block(n)
        full = n // block
        for i in pl.spmd(full, name_hint=name, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
            c0 = i * block
            product = times_rows_t(x, weight, layer * n + c0, block)  # cube (AIC)
            out[:, c0 : c0 + block] = pl.add(product, residual[:, c0 : c0 + block])  # vector (AIV)
        if n > full * block:
            c0 = full * block
            with pl.at(
                level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)], name_hint=tail
            ):
                product = times_rows_t(x, weight, layer * n + c0, n - c0)
                out[:, c0:n] = pl.add(product, residual[:, c0:n])
        return out

    project.__name__ = project.__qualname__ = f"project_{name}"  # as the program shows it
    return pl.jit.opaque(project)


q_proj = projection("q_proj")
k_proj = projection("k_proj")
v_proj = projection("v_proj")
o_proj = projection_residual("o_proj")
# A tensor-parallel rank's share of o_proj: its heads' columns, a partial product to be summed.
o_proj_partial = projection("o_proj_partial")
lm_head = projection("lm_head")
