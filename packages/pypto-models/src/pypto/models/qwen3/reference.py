"""A plain-torch Qwen3 decode step over the same weights and KV-cache layout as the ``pl`` one:
the reference the models example and the full-size benchmark check the simulator against (the
tests check this reference and the ``pl`` model against transformers).

It computes as the ``pl`` kernels do: the residual stream in FP32, the projections as FP32
products of the model-dtype operands, the q/k norm, RoPE and softmax in FP32, the norm outputs,
the attention probabilities and the SwiGLU activation rounded to the model's dtype where the
kernels round them.

Given ``exact=True`` the same step computes every value in FP64 and rounds nothing: the step as
the same weights and inputs define it, against which the rounding of a BF16 model (this
reference's and the simulator's alike) can be measured. Its caches are FP64 tensors too (the
step writes its new keys and values there unrounded).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from pypto.models.qwen3.weights import Qwen3Weights, layer_shapes

_LINEAR_ROWS = 8192


@dataclass(frozen=True)
class _Precision:
    """Where the step computes (``wide``: the residual stream, the products' sums, the norms'
    statistics, RoPE, softmax) and what it rounds to where the kernels round (``narrow``)."""

    wide: torch.dtype
    narrow: torch.dtype

    @staticmethod
    def of(weights: Qwen3Weights, exact: bool) -> _Precision:
        if exact:
            return _Precision(torch.float64, torch.float64)
        return _Precision(torch.float32, weights.dtype)


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float, dtype: torch.dtype) -> torch.Tensor:
    """Qwen3's RMSNorm of wide rows, cast to ``dtype`` before the weight multiplies (in ``dtype``)."""
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return weight.to(dtype) * normed.to(dtype)


def _linear(x: torch.Tensor, weight: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    # By blocks of output rows: a large model's LM head widened whole would take gigabytes.
    x = x.to(dtype)
    return torch.cat([F.linear(x, block.to(dtype)) for block in weight.split(_LINEAR_ROWS)], dim=-1)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


def decode_layer(
    weights: Qwen3Weights,
    layer: int,
    x: torch.Tensor,
    positions: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    exact: bool = False,
) -> None:
    """Layer ``layer`` of a decode step, in place on ``x`` ``[batch, hidden]`` (FP32; FP64 if
    ``exact``) and on the caches (``[layers * batch * max_seq, kv_heads * head_dim]``), as the
    ``pl`` decoder layer."""
    config, precision = weights.config, _Precision.of(weights, exact)
    wide, dtype = precision.wide, precision.narrow
    batch, eps = x.shape[0], config.rms_norm_eps
    dim, heads, kv_heads = config.head_dim, config.num_heads, config.num_kv_heads
    max_seq = k_cache.shape[0] // (config.num_layers * batch)
    shapes = layer_shapes(config)

    def w(name: str) -> torch.Tensor:
        rows = shapes[name][0] if len(shapes[name]) == 2 else 1
        return getattr(weights, name)[layer * rows : (layer + 1) * rows]

    normed = _rmsnorm(x, w("input_norm"), eps, dtype)
    q = _linear(normed, w("q_proj"), wide).view(batch, heads, dim)
    k = _linear(normed, w("k_proj"), wide).view(batch, kv_heads, dim)
    v = _linear(normed, w("v_proj"), wide).view(batch, kv_heads, dim)
    attended = torch.empty(batch, heads * dim, dtype=dtype)
    for b in range(batch):
        pos = int(positions[b])
        cos_row, sin_row = cos[pos].to(wide), sin[pos].to(wide)
        q_b = _rotate(_rmsnorm(q[b], w("q_norm"), eps, wide), cos_row, sin_row).to(dtype)
        k_b = _rotate(_rmsnorm(k[b], w("k_norm"), eps, wide), cos_row, sin_row)
        base = (layer * batch + b) * max_seq
        k_cache[base + pos] = k_b.reshape(-1).to(dtype)
        v_cache[base + pos] = v[b].reshape(-1).to(dtype)
        keys = k_cache[base : base + pos + 1].view(pos + 1, kv_heads, dim).to(wide)
        values = v_cache[base : base + pos + 1].view(pos + 1, kv_heads, dim)
        group = heads // kv_heads
        for h in range(kv_heads):
            scores = q_b[h * group : (h + 1) * group].to(wide) @ keys[:, h].T * dim**-0.5
            # As the kernel's softmax: the unnormalised probabilities meet the values in the
            # model's dtype, the FP32 sum divides after.
            probs = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
            heads_out = (probs.to(dtype).to(wide) @ values[:, h].to(wide)) / probs.sum(dim=-1, keepdim=True)
            attended[b, h * group * dim : (h + 1) * group * dim] = heads_out.reshape(-1).to(dtype)
    mid = x + _linear(attended, w("o_proj"), wide)
    normed = _rmsnorm(mid, w("post_norm"), eps, dtype)
    gate, up = _linear(normed, w("gate_proj"), wide), _linear(normed, w("up_proj"), wide)
    act = (F.silu(gate) * up).to(dtype)
    x.copy_(mid + _linear(act, w("down_proj"), wide))


def decode_step(
    weights: Qwen3Weights,
    tokens: torch.Tensor,
    positions: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    exact: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One decode step as :func:`pypto.models.qwen3.decode_step` computes it: the final hidden
    states (model dtype) and the logits (FP32); the caches are written in place. ``exact``: the
    step in FP64, nothing rounded (hidden states and logits FP64; pass FP64 caches)."""
    precision = _Precision.of(weights, exact)
    x = weights.embed[tokens.long()].to(precision.wide)
    for layer in range(weights.config.num_layers):
        decode_layer(weights, layer, x, positions, cos, sin, k_cache, v_cache, exact)
    hidden = _rmsnorm(x, weights.final_norm[0], weights.config.rms_norm_eps, precision.narrow)
    return hidden, _linear(hidden, weights.lm_head, precision.wide)
