"""Flash attention: blocks of query rows against every key, with a loop-carried online softmax.

One ``@pl.jit.incore`` mixed kernel computes the attention of ``Q_BLOCK`` query rows of one head.
It walks the keys and values in blocks of ``KV_BLOCK`` with a ``pl.range`` loop that carries
three values: the running row maximum, the running row sum of ``exp(score - max)``, and the
output accumulator, rescaled by ``exp(old_max - new_max)`` whenever the maximum grows, so no
``[seq, seq]`` score matrix ever exists. The cube computes ``Q K^T`` and ``P V`` for each block,
the two vector lanes the softmax on half of the rows each (``pl.func_attr({"split":
pl.SplitMode.UP_DOWN})``); the compiler splits the kernel into its cube and vector halves and
connects them with pipes. ``pl.spmd`` launches it on one core group per (head, query block).

The causal variant stops each query block's loop at its diagonal block and adds an additive
``-inf`` upper triangle to that block's scores. Both are compared with
``softmax(q @ k^T * scale [+ mask]) @ v`` in torch. The printed lines give the modeled time of
each launch: the causal one does less work in all, but its last query block still walks every
key block, and the launch lasts as long as its slowest block.

    python examples/models/03_flash_attention.py [-p a2a3sim]
"""

import argparse
import math

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

SEQ, HEADS, HEAD_DIM = 256, 2, 64
Q_BLOCK = KV_BLOCK = 64  # the causal mask is one diagonal block: the two must agree


@pl.jit.incore
def flash_attention_block(
    q: pl.Tensor,
    k: pl.Tensor,
    v: pl.Tensor,
    diag_mask: pl.Tensor,
    out: pl.Out[pl.Tensor],
    scale: pl.FP32,
    causal: bool,
):
    """Block ``i`` (head ``i // q_blocks``, query rows ``(i % q_blocks) * Q_BLOCK`` on) of
    ``out = softmax(q k^T * scale) v``; ``q``, ``k``, ``v``, ``out`` ``[seq, heads * HEAD_DIM]``
    (head ``h`` in columns ``h * HEAD_DIM``)."""
    pl.func_attr({"split": pl.SplitMode.UP_DOWN})
    q_blocks = q.shape[0] // Q_BLOCK
    i = pl.get_block_idx()
    col = (i // q_blocks) * HEAD_DIM
    r0 = (i % q_blocks) * Q_BLOCK
    q_left = pl.move(
        pl.load(q, [r0, col], [Q_BLOCK, HEAD_DIM], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
    )
    running_max = pl.full([Q_BLOCK, 1], pl.FP32, -1e30)
    running_sum = pl.full([Q_BLOCK, 1], pl.FP32, 0.0)
    acc = pl.full([Q_BLOCK, HEAD_DIM], pl.FP32, 0.0)
    kv_end = r0 + Q_BLOCK if causal else q.shape[0]  # causal: no key after the block's last query
    for k0 in pl.range(0, kv_end, KV_BLOCK):
        keys = pl.load(k, [k0, col], [KV_BLOCK, HEAD_DIM], target_memory=pl.Mem.Mat)
        scores = pl.matmul(q_left, pl.move(keys, target_memory=pl.Mem.Right), b_trans=True)  # cube
        scores = pl.mul(pl.move(scores, target_memory=pl.Mem.Vec), scale)  # vector from here
        if causal and k0 == r0:  # the diagonal block: each query sees the keys up to its own
            scores = pl.add(scores, pl.load(diag_mask, [0, 0], [Q_BLOCK, KV_BLOCK]))
        scratch = pl.create_tile([Q_BLOCK, KV_BLOCK], pl.FP32)
        new_max = pl.maximum(running_max, pl.row_max(scores, scratch))
        probs = pl.exp(pl.row_expand_sub(scores, new_max))
        rescale = pl.exp(pl.sub(running_max, new_max))  # what the old sum and accumulator shrink by
        running_sum = pl.add(pl.mul(running_sum, rescale), pl.row_sum(probs, scratch))
        values = pl.load(v, [k0, col], [KV_BLOCK, HEAD_DIM], target_memory=pl.Mem.Mat)
        probs_mat = pl.move(pl.cast(probs, v.dtype), target_memory=pl.Mem.Mat)  # back to the cube
        weighted = pl.matmul(
            pl.move(probs_mat, target_memory=pl.Mem.Left), pl.move(values, target_memory=pl.Mem.Right)
        )  # cube
        acc = pl.add(pl.row_expand_mul(acc, rescale), pl.move(weighted, target_memory=pl.Mem.Vec))
        running_max = new_max
    pl.store(pl.row_expand_div(acc, running_sum), [r0, col], out)
    return out


@pl.jit
def flash_attention(
    q: pl.Tensor,
    k: pl.Tensor,
    v: pl.Tensor,
    diag_mask: pl.Tensor,
    out: pl.Out[pl.Tensor],
    scale: pl.FP32,
    causal: bool,
):
    heads = q.shape[1] // HEAD_DIM
    with pl.spmd(heads * (q.shape[0] // Q_BLOCK)):
        out = flash_attention_block(q, k, v, diag_mask, out, scale, causal)
    return out


def reference(q, k, v, scale, causal):
    """Per head: ``softmax(q k^T * scale [+ causal mask]) v`` in FP32."""
    seq = q.shape[0]
    future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
    heads = []
    for h in range(HEADS):
        cols = slice(h * HEAD_DIM, (h + 1) * HEAD_DIM)
        scores = q[:, cols].float() @ k[:, cols].float().T * scale
        if causal:
            scores = scores.masked_fill(future, -math.inf)
        heads.append(torch.softmax(scores, dim=-1) @ v[:, cols].float())
    return torch.cat(heads, dim=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    q, k, v = (torch.randn(SEQ, HEADS * HEAD_DIM).half() for _ in range(3))
    scale = 1.0 / math.sqrt(HEAD_DIM)
    future = torch.ones(Q_BLOCK, KV_BLOCK, dtype=torch.bool).triu(1)
    diag_mask = torch.zeros(Q_BLOCK, KV_BLOCK).masked_fill(future, -math.inf)
    for causal in (False, True):
        out = torch.zeros(SEQ, HEADS * HEAD_DIM)
        flash_attention(q, k, v, diag_mask, out, scale, causal, config=config)
        # P is rounded to FP16 for the cube's P V: about 1e-3 relative on each probability
        torch.testing.assert_close(out, reference(q, k, v, scale, causal), rtol=2e-3, atol=2e-3)
        report = flash_attention.last_report
        blocks = [t.end_cycle - t.start_cycle for t in report.tasks]
        print(
            f"{'causal' if causal else 'full'}: {len(blocks)} blocks in {report.total_cycles} modeled "
            f"cycles, the quickest {min(blocks)}, the slowest {max(blocks)}; "
            f"cube-vector overlap {report.overlap:.0%}"
        )
    print("OK")


if __name__ == "__main__":
    main()
