"""Attention: q/k RMSNorm, RoPE and the KV-cache write (``rope_cache``), then decode attention
with an online softmax over cache blocks, grouped-query heads and each batch row's length read at
run time (``decode_attention``); ``attention`` launches both. Written in
``packages/pypto-models/src/pypto/models/qwen3/kernels/attention.py``.

    python examples/models/qwen3_jit/kernels/attention.py [-p a2a3sim]

runs one decode step's attention for three batch rows at different positions (one past the
first cache block) against the same computation in torch.
"""

import argparse

import torch

from pypto.models.qwen3 import get_config, rope_tables
from pypto.models.qwen3.kernels.attention import attention, decode_attention, rope_cache
from pypto.runtime import RunConfig

__all__ = ["attention", "decode_attention", "main", "rope_cache"]


def torch_attention(q, k, v, q_norm, k_norm, cos, sin, k_cache, v_cache, positions, eps):
    """The step in torch: per row, normalise and rotate the heads, append the new key and value to
    the row's cached ones, and attend (each KV head serving its group of query heads)."""
    batch, dim, kv_heads = q.shape[0], q_norm.shape[0], k_cache.shape[2]
    heads = q.shape[1] // dim

    def norm(t, w):
        return w * t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps)

    def rotate(t, pos):
        half = dim // 2
        return t * cos[pos] + torch.cat((-t[:, half:], t[:, :half]), dim=-1) * sin[pos]

    out = torch.zeros(batch, heads * dim)
    for b in range(batch):
        pos = int(positions[b])
        q_b = rotate(norm(q[b].view(heads, dim), q_norm), pos)
        keys = torch.cat([k_cache[b, :pos], rotate(norm(k[b].view(kv_heads, dim), k_norm), pos)[None]])
        values = torch.cat([v_cache[b, :pos], v[b].view(1, kv_heads, dim)])
        for j in range(heads):
            h = j // (heads // kv_heads)
            weights = torch.softmax(q_b[j] @ keys[:, h].T * dim**-0.5, dim=-1)
            out[b, j * dim : (j + 1) * dim] = weights @ values[:, h]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)
    model = get_config("tiny")
    dim, heads, kv_heads = model.head_dim, model.num_heads, model.num_kv_heads
    batch, max_seq, eps = 3, 160, model.rms_norm_eps
    positions = torch.tensor([0, 130, 57], dtype=torch.int32)
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(batch, heads * dim),
        torch.randn(batch, kv_heads * dim),
        torch.randn(batch, kv_heads * dim),
    )
    q_norm, k_norm = 1 + 0.1 * torch.randn(1, dim), 1 + 0.1 * torch.randn(1, dim)
    k_cache, v_cache = (
        torch.randn(batch * max_seq, kv_heads * dim),
        torch.randn(batch * max_seq, kv_heads * dim),
    )
    cos, sin = rope_tables(model, max_seq)
    cached_k, cached_v = (c.view(batch, max_seq, kv_heads, dim) for c in (k_cache, v_cache))
    want = torch_attention(q, k, v, q_norm[0], k_norm[0], cos, sin, cached_k, cached_v, positions, eps)
    q_rot, out = torch.zeros(batch * heads, dim), torch.zeros(batch, heads * dim)
    caches = (k_cache.clone(), v_cache.clone())  # the kernel writes the step's key and value
    args = (q, k, v, q_norm, k_norm, cos, sin, positions, *caches, q_rot, out, 0, max_seq, eps, dim**-0.5)
    attention(*args, config=config)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    report = attention.last_report
    blocks = sum(t.kernel == "decode_attention" for t in report.tasks)
    print(
        f"attention: {blocks} decode_attention blocks (row x KV head), {report.total_cycles} modeled cycles"
    )
    print("OK")


if __name__ == "__main__":
    main()
