"""The cross-chip step of a tensor-parallel layer: the ranks' partial products summed over the
world, then the residual added once.

A row-parallel projection (``o_proj``, ``down_proj`` split by their input columns) leaves each rank
a partial product of the full output; :func:`allreduce_residual` sums the partials of every rank in
place on the rank's window (the collective ``pld.tensor.allreduce``, mesh mode: each rank reads
every peer's window once all have written theirs) and writes ``residual + sum`` to ``out``.
"""

from __future__ import annotations

import pypto.language as pl
import pypto.language.distributed as pld


@pl.jit.incore
def allreduce_residual(
    partial: pl.InOut[pld.DistributedTensor],
    signal: pl.InOut[pld.DistributedTensor],
    residual: pl.Tensor,
    out: pl.Out[pl.Tensor],
):
    """``out = residual + sum over the ranks of partial``: ``partial`` the rank's window ``[rows,
    n]`` (FP32, holding its partial product; the sum on return), ``signal`` an INT32 window
    ``[ranks, 1]`` (zero before the call), ``residual`` and ``out`` ``[rows, n]`` FP32."""
    pld.tensor.allreduce(partial, signal, op=pld.ReduceOp.Sum, mode="mesh")
    out[:] = pl.add(partial[:, :], residual[:, :])
    return out
