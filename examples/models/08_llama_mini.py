"""A small Llama decoder layer in pl, prefilling a short sequence, checked against plain torch.

The layer: ``h = x + o_proj(attention(rope(q_proj(n)), rope(k_proj(n)), v_proj(n)))`` with
``n = rmsnorm(x)``, then ``out = h + down(silu(gate(m)) * up(m))`` with ``m = rmsnorm(h)``; the
attention is causal, with grouped-query heads (each KV head serves ``HEADS // KV_HEADS`` query
heads). Most of it is Qwen3's kernels from ``pypto.models.qwen3.kernels``, which a Llama layer
shares: ``rmsnorm``, the projections (``q_proj`` ... column blocks over the core groups;
``o_proj`` adds the residual in the same mixed kernel) and the SwiGLU ``mlp`` (post-attention
norm, gate/up, down + residual). Written here is only what Llama needs that a Qwen3 decode step
does not have: RoPE without Qwen3's per-head q/k norm and for every token of a prompt
(``rope``, one block per token, reusing Qwen3's ``rotate``), and causal attention of all the
prompt's queries at once (``causal_attention``, one mixed kernel per query head and query block,
an online softmax over key blocks as in ``03_flash_attention.py``, each query head reading its
group's KV head) instead of one decode token against a KV cache.

    python examples/models/08_llama_mini.py [-p a2a3sim]
"""

import argparse
import math

import torch

import pypto.language as pl
from pypto.models.qwen3.kernels.attention import rotate
from pypto.models.qwen3.kernels.mlp import mlp
from pypto.models.qwen3.kernels.projection import k_proj, o_proj, q_proj, v_proj
from pypto.models.qwen3.kernels.rmsnorm import rmsnorm
from pypto.runtime import RunConfig

SEQ, HIDDEN, INTER = 32, 128, 256
HEADS, KV_HEADS, HEAD_DIM = 4, 2, 32
BLOCK = 16  # query rows per attention block and keys per step of its loop
EPS, ROPE_THETA = 1e-5, 10000.0


@pl.jit.incore
def rope(
    q: pl.Tensor,
    k: pl.Tensor,
    cos: pl.Tensor,
    sin: pl.Tensor,
    q_rot: pl.Out[pl.Tensor],
    k_rot: pl.Out[pl.Tensor],
):
    """Block ``t`` (one per token): rotate token ``t``'s query and key heads by position ``t``;
    ``q`` ``[seq, heads * HEAD_DIM]``, ``k`` ``[seq, kv_heads * HEAD_DIM]`` and the results alike."""
    t = pl.get_block_idx()
    heads = q.shape[1] // HEAD_DIM
    kv_heads = k.shape[1] // HEAD_DIM
    cos_row = pl.load(cos, [t, 0], [1, HEAD_DIM])
    sin_row = pl.load(sin, [t, 0], [1, HEAD_DIM])
    q_heads = pl.reshape(pl.load(q, [t, 0], [1, heads * HEAD_DIM]), [heads, HEAD_DIM])  # a head per row
    pl.store(pl.reshape(rotate(q_heads, cos_row, sin_row), [1, heads * HEAD_DIM]), [t, 0], q_rot)
    k_heads = pl.reshape(pl.load(k, [t, 0], [1, kv_heads * HEAD_DIM]), [kv_heads, HEAD_DIM])
    pl.store(pl.reshape(rotate(k_heads, cos_row, sin_row), [1, kv_heads * HEAD_DIM]), [t, 0], k_rot)
    return q_rot, k_rot


@pl.jit.incore
def causal_attention(
    q: pl.Tensor,
    k: pl.Tensor,
    v: pl.Tensor,
    diag_mask: pl.Tensor,
    out: pl.Out[pl.Tensor],
    scale: pl.FP32,
):
    """Block ``i`` (query head ``i // q_blocks``, query rows ``(i % q_blocks) * BLOCK`` on):
    ``softmax(q k^T * scale + causal mask) v`` with the head's KV head; ``out`` like ``q``."""
    seq = q.shape[0]
    q_blocks = seq // BLOCK
    group = (q.shape[1] // HEAD_DIM) // (k.shape[1] // HEAD_DIM)
    i = pl.get_block_idx()
    head = i // q_blocks
    q_col = head * HEAD_DIM
    kv_col = (head // group) * HEAD_DIM
    r0 = (i % q_blocks) * BLOCK
    q_left = pl.move(
        pl.load(q, [r0, q_col], [BLOCK, HEAD_DIM], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
    )
    running_max = pl.full([BLOCK, 1], pl.FP32, -1e30)
    running_sum = pl.full([BLOCK, 1], pl.FP32, 0.0)
    acc = pl.full([BLOCK, HEAD_DIM], pl.FP32, 0.0)
    for k0 in pl.range(0, r0 + BLOCK, BLOCK):  # keys after the block's last query are never seen
        keys = pl.load(k, [k0, kv_col], [BLOCK, HEAD_DIM], target_memory=pl.Mem.Mat)
        scores = pl.matmul(q_left, pl.move(keys, target_memory=pl.Mem.Right), b_trans=True)  # cube
        scores = pl.mul(pl.move(scores, target_memory=pl.Mem.Vec), scale)  # vector from here
        if k0 == r0:  # the diagonal block: each query sees the keys up to its own position
            scores = pl.add(scores, pl.load(diag_mask, [0, 0], [BLOCK, BLOCK]))
        scratch = pl.create_tile([BLOCK, BLOCK], pl.FP32)
        new_max = pl.maximum(running_max, pl.row_max(scores, scratch))
        probs = pl.exp(pl.row_expand_sub(scores, new_max))
        rescale = pl.exp(pl.sub(running_max, new_max))
        running_sum = pl.add(pl.mul(running_sum, rescale), pl.row_sum(probs, scratch))
        values = pl.load(v, [k0, kv_col], [BLOCK, HEAD_DIM], target_memory=pl.Mem.Mat)
        probs_left = pl.move(pl.move(probs, target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        weighted = pl.matmul(probs_left, pl.move(values, target_memory=pl.Mem.Right))  # cube
        acc = pl.add(pl.row_expand_mul(acc, rescale), pl.move(weighted, target_memory=pl.Mem.Vec))
        running_max = new_max
    pl.store(pl.row_expand_div(acc, running_sum), [r0, q_col], out)
    return out


@pl.jit
def llama_layer(
    x: pl.Tensor,
    input_norm: pl.Tensor,
    q_w: pl.Tensor,
    k_w: pl.Tensor,
    v_w: pl.Tensor,
    o_w: pl.Tensor,
    post_norm: pl.Tensor,
    gate_w: pl.Tensor,
    up_w: pl.Tensor,
    down_w: pl.Tensor,
    cos: pl.Tensor,
    sin: pl.Tensor,
    diag_mask: pl.Tensor,
    out: pl.Out[pl.Tensor],
    eps: pl.FP32,
    scale: pl.FP32,
):
    """``out`` = the layer applied to the prompt's hidden states ``x`` ``[seq, hidden]`` (FP32)."""
    seq, hidden = x.shape
    q_size, kv_size = q_w.shape[0], k_w.shape[0]
    normed = pl.create_tensor([seq, hidden], pl.FP32)
    normed = rmsnorm(x, input_norm, normed, eps)
    q = pl.create_tensor([seq, q_size], pl.FP32)
    k = pl.create_tensor([seq, kv_size], pl.FP32)
    v = pl.create_tensor([seq, kv_size], pl.FP32)
    q = q_proj(normed, q_w, q, 0)
    k = k_proj(normed, k_w, k, 0)
    v = v_proj(normed, v_w, v, 0)
    q_rot = pl.create_tensor([seq, q_size], pl.FP32)
    k_rot = pl.create_tensor([seq, kv_size], pl.FP32)
    with pl.spmd(seq):
        q_rot, k_rot = rope(q, k, cos, sin, q_rot, k_rot)
    attended = pl.create_tensor([seq, q_size], pl.FP32)
    with pl.spmd((q_size // HEAD_DIM) * (seq // BLOCK)):
        attended = causal_attention(q_rot, k_rot, v, diag_mask, attended, scale)
    mid = pl.create_tensor([seq, hidden], pl.FP32)
    mid = o_proj(attended, o_w, x, mid, 0)
    out = mlp(mid, post_norm, gate_w, up_w, down_w, out, 0, eps)
    return out


# ---------------------------------------------------------------- the same layer in plain torch


def rope_tables(seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos`` and ``sin`` ``[seq, HEAD_DIM]``: position ``p`` turns pair ``j`` by ``p * theta^(-2j/d)``."""
    inv_freq = ROPE_THETA ** (-torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM)
    angles = torch.outer(torch.arange(seq).float(), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()


def reference_layer(x, w, cos, sin):
    def rmsnorm_ref(t, weight):
        return weight * (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS))

    def rope_ref(t):  # [heads, seq, dim]
        half = HEAD_DIM // 2
        rotated = torch.cat((-t[..., half:], t[..., :half]), dim=-1)
        return t * cos + rotated * sin

    seq = x.shape[0]
    n = rmsnorm_ref(x, w["input_norm"][0])
    q = (n @ w["q"].T).view(seq, HEADS, HEAD_DIM).transpose(0, 1)
    k = (n @ w["k"].T).view(seq, KV_HEADS, HEAD_DIM).transpose(0, 1)
    v = (n @ w["v"].T).view(seq, KV_HEADS, HEAD_DIM).transpose(0, 1)
    q, k = rope_ref(q), rope_ref(k)
    k = k.repeat_interleave(HEADS // KV_HEADS, dim=0)
    v = v.repeat_interleave(HEADS // KV_HEADS, dim=0)
    scores = q @ k.transpose(1, 2) / math.sqrt(HEAD_DIM)
    scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), -math.inf)
    attended = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(seq, HEADS * HEAD_DIM)
    h = x + attended @ w["o"].T
    m = rmsnorm_ref(h, w["post_norm"][0])
    return h + (torch.nn.functional.silu(m @ w["gate"].T) * (m @ w["up"].T)) @ w["down"].T


def random_weights() -> dict[str, torch.Tensor]:
    """Hugging Face's layouts: projections ``[out, in]``, norms one row per layer (one layer)."""

    def linear(out_features, in_features):
        return torch.randn(out_features, in_features) / math.sqrt(in_features)

    return {
        "input_norm": 1.0 + 0.1 * torch.randn(1, HIDDEN),
        "q": linear(HEADS * HEAD_DIM, HIDDEN),
        "k": linear(KV_HEADS * HEAD_DIM, HIDDEN),
        "v": linear(KV_HEADS * HEAD_DIM, HIDDEN),
        "o": linear(HIDDEN, HEADS * HEAD_DIM),
        "post_norm": 1.0 + 0.1 * torch.randn(1, HIDDEN),
        "gate": linear(INTER, HIDDEN),
        "up": linear(INTER, HIDDEN),
        "down": linear(HIDDEN, INTER),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    x = torch.randn(SEQ, HIDDEN)
    w = random_weights()
    cos, sin = rope_tables(SEQ)
    future = torch.ones(BLOCK, BLOCK, dtype=torch.bool).triu(1)
    diag_mask = torch.zeros(BLOCK, BLOCK).masked_fill(future, -math.inf)
    out = torch.zeros(SEQ, HIDDEN)
    llama_layer(
        x,
        w["input_norm"],
        w["q"],
        w["k"],
        w["v"],
        w["o"],
        w["post_norm"],
        w["gate"],
        w["up"],
        w["down"],
        cos,
        sin,
        diag_mask,
        out,
        EPS,
        1.0 / math.sqrt(HEAD_DIM),
        config=config,
    )
    # FP32 throughout: only the order of the sums differs from torch
    torch.testing.assert_close(out, reference_layer(x, w, cos, sin), rtol=1e-5, atol=1e-5)

    report = llama_layer.last_report
    spans: dict[str, tuple[int, int]] = {}
    for task in report.tasks:
        start, end = spans.get(task.kernel, (task.start_cycle, task.end_cycle))
        spans[task.kernel] = (min(start, task.start_cycle), max(end, task.end_cycle))
    projections = [spans[name] for name in ("q_proj", "k_proj", "v_proj")]
    assert max(start for start, _ in projections) < min(end for _, end in projections)
    print(
        f"{len({t.task_id for t in report.tasks})} launches ({len(report.tasks)} blocks) in "
        f"{report.total_cycles} modeled cycles; q_proj, k_proj and v_proj run at once"
    )
    print("OK")


if __name__ == "__main__":
    main()
