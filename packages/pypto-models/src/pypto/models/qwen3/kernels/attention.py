"""Qwen3 decode attention: per-head q/k RMSNorm, rotary position embedding (RoPE), the KV-cache
write, and attention over the cache with an online softmax, grouped-query heads and the sequence
length of each batch row read at run time.

A decode step brings one new token per batch row. Two launches do the work:

- :func:`rope_cache` (one block per batch row, vector only): normalises each query and key head
  (``q_norm`` / ``k_norm``), rotates them by the row's position (``cos`` / ``sin`` tables, one row
  per position, as transformers computes them), writes the rotated queries to ``q_rot`` (one row
  per head) and the new key and value to the caches at the row's position.
- :func:`decode_attention` (one block per batch row and KV head, mixed): the cube multiplies the
  ``group`` query heads that share the KV head by a block of cached keys, the vector lanes keep
  the online softmax (running maximum, running sum, rescaled accumulator), the cube multiplies the
  probabilities by the block of cached values. Blocks run up to the row's length (its position
  + 1, read from ``positions`` at run time); the last block is partial and masked.

The caches hold one row per layer, batch row and position: ``[layers * batch * max_seq, kv_heads *
head_dim]``, row ``(layer * batch + b) * max_seq + pos``, a position's keys for every KV head side
by side (head ``h`` in columns ``h * head_dim``).
"""

from __future__ import annotations

import pypto.language as pl
from pypto.models.qwen3.kernels.rmsnorm import rmsnorm_rows

# Bytes of one block of cached keys (or values): 128 BF16 positions of a 128-wide head.
CACHE_BLOCK_BYTES = 32768


@pl.jit.inline
def as_fp32(x):
    return x if x.dtype == pl.FP32 else pl.cast(x, pl.FP32)


@pl.jit.inline
def as_dtype(x, dtype):
    return x if dtype == pl.FP32 else pl.cast(x, dtype)


@pl.jit.inline
def rotate(x, cos_row, sin_row):
    """RoPE of the rows of ``x`` ``[rows, dim]``: ``x * cos + rotate_half(x) * sin``, where
    ``rotate_half(x)`` is ``[-x2, x1]`` of the two halves (transformers' ``rotate_half``)."""
    rows = x.shape[0]
    half = x.shape[1] // 2
    rotated = pl.concat(pl.neg(pl.slice(x, [rows, half], [0, half])), pl.slice(x, [rows, half], [0, 0]))
    return pl.add(pl.col_expand_mul(x, cos_row), pl.col_expand_mul(rotated, sin_row))


@pl.jit.incore
def rope_cache(
    q: pl.Tensor,
    k: pl.Tensor,
    v: pl.Tensor,
    q_norm: pl.Tensor,
    k_norm: pl.Tensor,
    cos: pl.Tensor,
    sin: pl.Tensor,
    positions: pl.Tensor,
    q_rot: pl.Out[pl.Tensor],
    k_cache: pl.InOut[pl.Tensor],
    v_cache: pl.InOut[pl.Tensor],
    layer: pl.INDEX,
    max_seq: pl.INDEX,
    eps: pl.FP32,
):
    """Block ``b`` (one per batch row): ``q`` ``[batch, heads * dim]`` and ``k``, ``v`` ``[batch,
    kv_heads * dim]`` (the projections, FP32) -> ``q_rot`` ``[batch * heads, dim]`` and the caches'
    row of position ``positions[b]``."""
    batch = positions.shape[0]
    dim = q_norm.shape[1]
    heads = q.shape[1] // dim
    kv_heads = k.shape[1] // dim
    b = pl.get_block_idx()
    pos = pl.cast(pl.read(positions, [b]), pl.INDEX)
    cos_row = pl.load(cos, [pos, 0], [1, dim])
    sin_row = pl.load(sin, [pos, 0], [1, dim])
    q_heads = pl.reshape(pl.load(q, [b, 0], [1, heads * dim]), [heads, dim])
    q_normed = rmsnorm_rows(q_heads, as_fp32(pl.load(q_norm, [layer, 0], [1, dim])), eps)
    pl.store(as_dtype(rotate(q_normed, cos_row, sin_row), q_rot.dtype), [b * heads, 0], q_rot)
    k_heads = pl.reshape(pl.load(k, [b, 0], [1, kv_heads * dim]), [kv_heads, dim])
    k_normed = rmsnorm_rows(k_heads, as_fp32(pl.load(k_norm, [layer, 0], [1, dim])), eps)
    k_row = pl.reshape(rotate(k_normed, cos_row, sin_row), [1, kv_heads * dim])
    row = (layer * batch + b) * max_seq + pos
    pl.store(as_dtype(k_row, k_cache.dtype), [row, 0], k_cache)
    pl.store(as_dtype(pl.load(v, [b, 0], [1, kv_heads * dim]), v_cache.dtype), [row, 0], v_cache)
    return q_rot, k_cache, v_cache


@pl.jit.incore
def decode_attention(
    q_rot: pl.Tensor,
    k_cache: pl.Tensor,
    v_cache: pl.Tensor,
    positions: pl.Tensor,
    out: pl.Out[pl.Tensor],
    layer: pl.INDEX,
    max_seq: pl.INDEX,
    scale: pl.FP32,
):
    """Block ``i`` (one per batch row ``b`` and KV head ``h``): the ``group`` query heads of ``h``
    attend to the first ``positions[b] + 1`` cached positions of row ``b``; their outputs go to
    ``out`` ``[batch, heads * dim]`` (head ``j`` in columns ``j * dim``), in ``out``'s dtype."""
    batch = positions.shape[0]
    dim = q_rot.shape[1]
    heads = q_rot.shape[0] // batch
    kv_heads = k_cache.shape[1] // dim
    group = heads // kv_heads
    block = CACHE_BLOCK_BYTES // (dim * k_cache.dtype.get_byte())
    i = pl.get_block_idx()
    b = i // kv_heads
    h = i % kv_heads
    length = pl.cast(pl.read(positions, [b]), pl.INDEX) + 1
    base = (layer * batch + b) * max_seq
    q_left = pl.move(
        pl.load(q_rot, [b * heads + h * group, 0], [group, dim], target_memory=pl.Mem.Mat),
        target_memory=pl.Mem.Left,
    )
    running_max = pl.full([group, 1], pl.FP32, -1e30)
    running_sum = pl.full([group, 1], pl.FP32, 0.0)
    acc = pl.full([group, dim], pl.FP32, 0.0)
    for s0 in pl.range(0, length, block):
        valid = pl.min(block, length - s0)
        keys = pl.load(
            k_cache, [base + s0, h * dim], [block, dim], target_memory=pl.Mem.Mat, valid_shape=[valid, dim]
        )
        scores = pl.matmul(q_left, pl.move(keys, target_memory=pl.Mem.Right), b_trans=True)  # cube
        scores = pl.mul(pl.move(scores, target_memory=pl.Mem.Vec), scale)  # vector from here
        scores = pl.fillpad(pl.set_validshape(scores, group, valid), pad_value=pl.PadValue.min)
        scratch = pl.create_tile([group, block], pl.FP32)
        new_max = pl.maximum(running_max, pl.row_max(scores, scratch))
        probs = pl.exp(pl.row_expand_sub(scores, new_max))
        rescale = pl.exp(pl.sub(running_max, new_max))
        running_sum = pl.add(pl.mul(running_sum, rescale), pl.row_sum(probs, scratch))
        values = pl.load(
            v_cache, [base + s0, h * dim], [block, dim], target_memory=pl.Mem.Mat, valid_shape=[valid, dim]
        )
        probs_left = pl.move(
            pl.move(as_dtype(probs, v_cache.dtype), target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
        )
        weighted = pl.matmul(probs_left, pl.move(values, target_memory=pl.Mem.Right))  # cube
        acc = pl.add(pl.row_expand_mul(acc, rescale), pl.move(weighted, target_memory=pl.Mem.Vec))
        running_max = new_max
    heads_out = as_dtype(pl.row_expand_div(acc, running_sum), out.dtype)
    pl.store(pl.reshape(heads_out, [1, group * dim]), [b, h * group * dim], out)
    return out


@pl.jit.opaque
def attention(
    q: pl.Tensor,
    k: pl.Tensor,
    v: pl.Tensor,
    q_norm: pl.Tensor,
    k_norm: pl.Tensor,
    cos: pl.Tensor,
    sin: pl.Tensor,
    positions: pl.Tensor,
    k_cache: pl.InOut[pl.Tensor],
    v_cache: pl.InOut[pl.Tensor],
    q_rot: pl.Out[pl.Tensor],
    out: pl.Out[pl.Tensor],
    layer: pl.INDEX,
    max_seq: pl.INDEX,
    eps: pl.FP32,
    scale: pl.FP32,
):
    """One layer's attention for a decode step: RoPE and the cache write, then attention over the
    cache, ``out`` ``[batch, heads * dim]``."""
    batch = positions.shape[0]
    kv_heads = k.shape[1] // q_norm.shape[1]
    with pl.spmd(batch):
        q_rot, k_cache, v_cache = rope_cache(
            q, k, v, q_norm, k_norm, cos, sin, positions, q_rot, k_cache, v_cache, layer, max_seq, eps
        )
    with pl.spmd(batch * kv_heads):
        out = decode_attention(q_rot, k_cache, v_cache, positions, out, layer, max_seq, scale)
    return out, k_cache, v_cache
