"""The Qwen3 MLP (SwiGLU): ``down(silu(gate(x)) * up(x))`` plus the residual.

:func:`project_gate_up` is one mixed kernel per column block of the intermediate size: the cube computes
the block's gate and up products, the vector lanes apply ``silu(gate) * up`` to them (split by
columns). :data:`down_proj` is the projections' mixed ``residual + x @ W^T``
(:func:`~pypto.models.qwen3.kernels.projection.projection_residual`), and :func:`mlp` composes the
post-attention RMSNorm, the two and the residual.
"""

from __future__ import annotations

import pypto.language as pl
from pypto.models.qwen3.kernels.projection import column_block, projection, projection_residual, times_rows_t
from pypto.models.qwen3.kernels.rmsnorm import rmsnorm

down_proj = projection_residual("down_proj")
# A tensor-parallel rank's share of down_proj: its intermediate columns, a partial product.
down_proj_partial = projection("down_proj_partial")


@pl.jit.inline
def swiglu(gate, up, dtype):
    """``silu(gate) * up`` (``silu(g) = g * sigmoid(g)``) in FP32, cast to ``dtype``."""
    act = pl.mul(pl.mul(gate, pl.sigmoid(gate)), up)
    return act if dtype == pl.FP32 else pl.cast(act, dtype)


@pl.jit.opaque
def project_gate_up(
    x: pl.Tensor, gate_w: pl.Tensor, up_w: pl.Tensor, out: pl.Out[pl.Tensor], layer: pl.INDEX
):
    """``out = silu(x @ gate_w_layer^T) * (x @ up_w_layer^T)``: ``x`` ``[rows, hidden]``, the
    weights ``[layers * inter, hidden]``, ``out`` ``[rows, inter]`` in the weights' dtype."""
    n = out.shape[1]
    block = column_block(n)
    full = n // block
    for i in pl.spmd(full, name_hint="gate_up", optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
        c0 = i * block
        gate = times_rows_t(x, gate_w, layer * n + c0, block)  # cube
        up = times_rows_t(x, up_w, layer * n + c0, block)  # cube
        out[:, c0 : c0 + block] = swiglu(gate, up, out.dtype)  # vector
    if n > full * block:
        c0 = full * block
        with pl.at(
            level=pl.Level.CORE_GROUP,
            optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)],
            name_hint="gate_up_tail",
        ):
            gate = times_rows_t(x, gate_w, layer * n + c0, n - c0)
            up = times_rows_t(x, up_w, layer * n + c0, n - c0)
            out[:, c0:n] = swiglu(gate, up, out.dtype)
    return out


@pl.jit.opaque
def mlp(
    x: pl.Tensor,
    norm_w: pl.Tensor,
    gate_w: pl.Tensor,
    up_w: pl.Tensor,
    down_w: pl.Tensor,
    out: pl.Out[pl.Tensor],
    layer: pl.INDEX,
    eps: pl.FP32,
):
    """``out = x + mlp(rmsnorm(x))`` for layer ``layer``: ``x`` and ``out`` ``[rows, hidden]`` FP32."""
    rows, hidden = x.shape
    inter = gate_w.shape[0] // norm_w.shape[0]
    normed = pl.create_tensor([rows, hidden], gate_w.dtype)
    normed = rmsnorm(x, norm_w, normed, eps, layer)
    act = pl.create_tensor([rows, inter], gate_w.dtype)
    act = project_gate_up(normed, gate_w, up_w, act, layer)
    out = down_proj(act, down_w, x, out, layer)
    return out
