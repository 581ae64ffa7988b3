"""Paged attention on the whole chip: one pl.spmd block per (sequence, KV head), against one core group.

The decode-time paged attention of ``04_paged_attention.py`` (a KV cache of shuffled fixed-size
blocks, each sequence's blocks found through its block table and its length read at run time,
an online softmax over the blocks with the last one partial) launched two ways:

- ``pl.spmd(batch * kv_heads)``: block ``i`` reads ``pl.get_block_idx()`` and attends sequence
  ``i // kv_heads`` with KV head ``i % kv_heads`` (the query heads of that group). The blocks
  are independent, so the scheduler spreads them over the chip's core groups;
- one ``pl.at`` scope on one core group that walks the same (sequence, KV head) pairs in turn.

Both are checked against softmax attention in torch over each sequence's tokens gathered through
its block table. The script prints how many core groups the SPMD launch used, the modeled cycles
of both launches and their ratio. Sequences of different lengths give blocks of different work,
so the launch lasts as long as its longest block: the speedup stays below the core-group count.
With ``--batch`` above 12 there are more blocks than the chip's 24 core groups and they run in
waves.

    python examples/models/05_spmd_paged_attention.py [-p a2a3sim] [--batch 12]
"""

import argparse
import importlib
import math

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

# The kernel is 04_paged_attention.py's (the script's directory is on the path): this file only
# launches it differently.
attend_kv_head = importlib.import_module("04_paged_attention").attend_kv_head

HEADS, KV_HEADS, HEAD_DIM, BLOCK_SIZE = 8, 2, 64, 32  # grouped-query heads: 4 query heads per KV head
MAX_CONTEXT = 256


@pl.jit
def spmd_paged_attention(
    query: pl.Tensor,
    key_cache: pl.Tensor,
    value_cache: pl.Tensor,
    block_tables: pl.Tensor,
    context_lens: pl.Tensor,
    out: pl.Out[pl.Tensor],
    head_dim: int,
    block_size: int,
):
    kv_heads = key_cache.shape[1] // head_dim
    with pl.spmd(context_lens.shape[0] * kv_heads, name_hint="paged_attention"):
        block = pl.get_block_idx()  # this block's (sequence, KV head)
        seq, kv_head = block // kv_heads, block % kv_heads
        attend_kv_head(
            query, key_cache, value_cache, block_tables, context_lens, out, seq, kv_head, head_dim, block_size
        )
    return out


@pl.jit
def one_group_paged_attention(
    query: pl.Tensor,
    key_cache: pl.Tensor,
    value_cache: pl.Tensor,
    block_tables: pl.Tensor,
    context_lens: pl.Tensor,
    out: pl.Out[pl.Tensor],
    head_dim: int,
    block_size: int,
):
    kv_heads = key_cache.shape[1] // head_dim
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="paged_attention"):
        for block in pl.range(context_lens.shape[0] * kv_heads):  # the SPMD blocks' work, in turn
            seq, kv_head = block // kv_heads, block % kv_heads
            attend_kv_head(
                query,
                key_cache,
                value_cache,
                block_tables,
                context_lens,
                out,
                seq,
                kv_head,
                head_dim,
                block_size,
            )
    return out


def make_inputs(lengths: list[int], gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Queries, a shuffled pool of cache blocks (with spare ones), block tables and lengths."""
    per_seq = [math.ceil(n / BLOCK_SIZE) for n in lengths]
    num_blocks = sum(per_seq) + 4  # spare blocks belong to no sequence
    physical = torch.randperm(num_blocks, generator=gen).to(torch.int32)
    block_tables = torch.full((len(lengths), max(per_seq)), -1, dtype=torch.int32)  # -1: never read
    taken = 0
    for seq, count in enumerate(per_seq):
        block_tables[seq, :count] = physical[taken : taken + count]
        taken += count
    query = torch.randn(len(lengths), HEADS * HEAD_DIM, generator=gen).half()
    key_cache = torch.randn(num_blocks * BLOCK_SIZE, KV_HEADS * HEAD_DIM, generator=gen).half()
    value_cache = torch.randn(num_blocks * BLOCK_SIZE, KV_HEADS * HEAD_DIM, generator=gen).half()
    return query, key_cache, value_cache, block_tables, torch.tensor(lengths, dtype=torch.int32)


def reference(query, key_cache, value_cache, block_tables, context_lens) -> torch.Tensor:
    """Softmax attention in torch over each sequence's tokens, gathered through its block table."""
    group = HEADS // KV_HEADS
    out = torch.empty(query.shape, dtype=torch.float32)
    for seq, length in enumerate(context_lens.tolist()):
        blocks = block_tables[seq, : math.ceil(length / BLOCK_SIZE)].long()
        rows = (blocks[:, None] * BLOCK_SIZE + torch.arange(BLOCK_SIZE)).flatten()[:length]
        keys = key_cache[rows].float().view(length, KV_HEADS, HEAD_DIM).repeat_interleave(group, dim=1)
        values = value_cache[rows].float().view(length, KV_HEADS, HEAD_DIM).repeat_interleave(group, dim=1)
        q = query[seq].float().view(HEADS, HEAD_DIM)
        probs = torch.softmax(torch.einsum("hd,thd->ht", q, keys) / math.sqrt(HEAD_DIM), dim=-1)
        out[seq] = torch.einsum("ht,thd->hd", probs, values).flatten()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    parser.add_argument("--batch", type=int, default=12, help="sequences in the decode step (default: 12)")
    args = parser.parse_args()
    config = RunConfig(platform=args.platform)

    gen = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, MAX_CONTEXT + 1, (args.batch,), generator=gen).tolist()
    inputs = make_inputs(lengths, gen)
    want = reference(*inputs)
    cycles = {}
    for kernel in (spmd_paged_attention, one_group_paged_attention):
        out = torch.zeros(inputs[0].shape)
        kernel(*inputs, out, HEAD_DIM, BLOCK_SIZE, config=config)
        # The probabilities meet the values on the cube in fp16: one fp16 rounding.
        tol = torch.finfo(torch.float16).eps
        torch.testing.assert_close(out, want, rtol=tol, atol=tol)
        cycles[kernel.name] = kernel.last_report.total_cycles

    assert {task.core_group for task in one_group_paged_attention.last_report.tasks} == {0}
    tasks = spmd_paged_attention.last_report.tasks
    assert len(tasks) == args.batch * KV_HEADS  # one block per (sequence, KV head)
    core_groups = len({task.core_group for task in tasks})
    block_cycles = [task.end_cycle - task.start_cycle for task in tasks]
    spmd, one_group = cycles["spmd_paged_attention"], cycles["one_group_paged_attention"]
    speedup = one_group / spmd
    span = f"{min(lengths)} to {max(lengths)} tokens"
    print(f"{args.batch} sequences of {span}, {HEADS} query heads on {KV_HEADS} KV heads")
    print(f"pl.spmd: {len(tasks)} blocks on {core_groups} core groups, {spmd} modeled cycles")
    print(f"  blocks of {min(block_cycles)} to {max(block_cycles)} modeled cycles: the longest sets the pace")
    print(f"one core group: {one_group} modeled cycles")
    print(f"speedup in modeled time: {speedup:.1f}x")
    assert core_groups > 1 and speedup > 1.0, "the spmd launch must beat one core group"
    print("OK")


if __name__ == "__main__":
    main()
