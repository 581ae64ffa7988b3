"""A plain-torch Qwen3 decode step over the same weights and KV-cache layout as the ``pl`` one:
the reference the models example and the full-size benchmark check the simulator against (the
tests check this reference and the ``pl`` model against transformers).

It computes as the ``pl`` kernels do: the residual stream in FP32, the projections as FP32
products of the model-dtype operands, the q/k norm, RoPE and softmax in FP32, the norm outputs,
the attention probabilities and the SwiGLU activation rounded to the model's dtype where the
kernels round them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from pypto.models.qwen3.weights import Qwen3Weights, layer_shapes


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Qwen3's RMSNorm of FP32 rows, cast to the weight's dtype before the weight multiplies."""
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return weight * normed.to(weight.dtype)


def _linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return F.linear(x.float(), weight.float())


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
) -> None:
    """Layer ``layer`` of a decode step, in place on ``x`` ``[batch, hidden]`` (FP32) and on the
    caches (``[layers * batch * max_seq, kv_heads * head_dim]``), as the ``pl`` decoder layer."""
    config, dtype = weights.config, weights.dtype
    batch, eps = x.shape[0], config.rms_norm_eps
    dim, heads, kv_heads = config.head_dim, config.num_heads, config.num_kv_heads
    max_seq = k_cache.shape[0] // (config.num_layers * batch)
    shapes = layer_shapes(config)

    def w(name: str) -> torch.Tensor:
        rows = shapes[name][0] if len(shapes[name]) == 2 else 1
        return getattr(weights, name)[layer * rows : (layer + 1) * rows]

    normed = _rmsnorm(x, w("input_norm"), eps)
    q = _linear(normed, w("q_proj")).view(batch, heads, dim)
    k = _linear(normed, w("k_proj")).view(batch, kv_heads, dim)
    v = _linear(normed, w("v_proj")).view(batch, kv_heads, dim)
    attended = torch.empty(batch, heads * dim, dtype=dtype)
    for b in range(batch):
        pos = int(positions[b])
        q_b = _rotate(_rmsnorm(q[b], w("q_norm").float(), eps), cos[pos], sin[pos]).to(dtype)
        k_b = _rotate(_rmsnorm(k[b], w("k_norm").float(), eps), cos[pos], sin[pos])
        base = (layer * batch + b) * max_seq
        k_cache[base + pos] = k_b.reshape(-1).to(dtype)
        v_cache[base + pos] = v[b].reshape(-1).to(dtype)
        keys = k_cache[base : base + pos + 1].view(pos + 1, kv_heads, dim).float()
        values = v_cache[base : base + pos + 1].view(pos + 1, kv_heads, dim)
        group = heads // kv_heads
        for h in range(kv_heads):
            scores = q_b[h * group : (h + 1) * group].float() @ keys[:, h].T * dim**-0.5
            # As the kernel's softmax: the unnormalised probabilities meet the values in the
            # model's dtype, the FP32 sum divides after.
            probs = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
            heads_out = (probs.to(dtype).float() @ values[:, h].float()) / probs.sum(dim=-1, keepdim=True)
            attended[b, h * group * dim : (h + 1) * group * dim] = heads_out.reshape(-1).to(dtype)
    mid = x + _linear(attended, w("o_proj"))
    normed = _rmsnorm(mid, w("post_norm"), eps)
    gate, up = _linear(normed, w("gate_proj")), _linear(normed, w("up_proj"))
    act = (F.silu(gate) * up).to(dtype)
    x.copy_(mid + _linear(act, w("down_proj")))


def decode_step(
    weights: Qwen3Weights,
    tokens: torch.Tensor,
    positions: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One decode step as :func:`pypto.models.qwen3.decode_step` computes it: the final hidden
    states (model dtype) and the logits (FP32); the caches are written in place."""
    x = weights.embed[tokens.long()].float()
    for layer in range(weights.config.num_layers):
        decode_layer(weights, layer, x, positions, cos, sin, k_cache, v_cache)
    hidden = _rmsnorm(x, weights.final_norm[0], weights.config.rms_norm_eps)
    return hidden, _linear(hidden, weights.lm_head)
