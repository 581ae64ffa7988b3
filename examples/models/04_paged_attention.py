"""Paged attention at decode time: a KV cache of shuffled blocks, found through a block table.

The KV cache is a pool of fixed-size physical blocks, as vLLM keeps it: ``key_cache`` and
``value_cache`` are ``[num_blocks * block_size, kv_heads * head_dim]``, physical block ``p`` is
rows ``p * block_size`` to ``(p + 1) * block_size``, and a row holds one token's keys (values)
for every KV head side by side, head ``h`` in columns ``h * head_dim``. Sequence ``b`` owns the
physical blocks ``block_tables[b, 0], block_tables[b, 1], ...`` (``[batch, max_blocks]``
INT32) and its ``context_lens[b]`` tokens fill them in order, the last block partly.

Each sequence brings one new token: ``query`` is ``[batch, heads * head_dim]`` (head ``j`` in
columns ``j * head_dim``, as a q projection writes it) and ``out`` the same. For every sequence
and KV head the kernel reads the length (``pl.read``), then walks the sequence's logical
blocks: it reads the physical block from the table at run time, loads that block's keys onto
the cube and scores the ``group`` query heads that share the KV head against them, masks the
positions past the length in the last block (``pl.set_validshape`` + ``pl.fillpad``), keeps an
online softmax on the vector lanes (running maximum, running sum, rescaled accumulator) and
multiplies the probabilities by the block's values on the cube.

The reference gathers each sequence's blocks through its block table in torch and runs plain
softmax attention. The physical blocks are shuffled (and the pool has spare blocks), so a kernel
that ignored the table would read another sequence's tokens; the check asserts that it would
differ.

Variants:
  batched   sequences of different lengths in one launch, 8 query heads on 2 KV heads
  dynamic   the batch, the block table's width and the pool's rows as pl.dynamic extents: one
            compiled kernel serves three batches (``cache_info().misses == 1``)
  multi     four model configurations (MHA, GQA, MQA; head_dim 64 and 128; blocks of 16 to 128
            tokens; fp16 and bf16) through the same kernel source, each its own specialization

    python examples/models/04_paged_attention.py [--variant batched|dynamic|multi|all] [-p a2a3sim]
"""

import argparse
import math
from dataclasses import dataclass

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@dataclass(frozen=True)
class AttentionConfig:
    """The attention shape of a model and its cache's block size."""

    name: str
    heads: int
    kv_heads: int
    head_dim: int
    block_size: int
    dtype: torch.dtype = torch.float16

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.head_dim)


@pl.jit.inline
def attend_kv_head(
    query, key_cache, value_cache, block_tables, context_lens, out, seq, kv_head, head_dim, block_size
):
    """The query heads of ``kv_head`` in sequence ``seq`` attend to the sequence's cached blocks."""
    group = (query.shape[1] // head_dim) // (key_cache.shape[1] // head_dim)
    scale = head_dim**-0.5  # folds while the kernel compiles
    length = pl.cast(pl.read(context_lens, [seq]), pl.INDEX)
    q_heads = pl.load(
        query, [seq, kv_head * group * head_dim], [1, group * head_dim], target_memory=pl.Mem.Mat
    )
    q_left = pl.move(pl.reshape(q_heads, [group, head_dim]), target_memory=pl.Mem.Left)
    running_max = pl.full([group, 1], pl.FP32, -math.inf)
    running_sum = pl.full([group, 1], pl.FP32, 0.0)
    acc = pl.full([group, head_dim], pl.FP32, 0.0)
    for j in pl.range((length + block_size - 1) // block_size):
        first_row = pl.cast(pl.read(block_tables, [seq, j]), pl.INDEX) * block_size  # logical -> physical
        valid = pl.min(block_size, length - j * block_size)  # tokens of this block: the last one is partial
        keys = pl.load(
            key_cache,
            [first_row, kv_head * head_dim],
            [block_size, head_dim],
            target_memory=pl.Mem.Mat,
            valid_shape=[valid, head_dim],
        )
        scores = pl.matmul(q_left, pl.move(keys, target_memory=pl.Mem.Right), b_trans=True)  # cube
        scores = pl.mul(pl.move(scores, target_memory=pl.Mem.Vec), scale)  # vector from here
        scores = pl.fillpad(pl.set_validshape(scores, group, valid), pad_value=pl.PadValue.min)
        scratch = pl.create_tile([group, block_size], pl.FP32)
        new_max = pl.maximum(running_max, pl.row_max(scores, scratch))
        probs = pl.exp(pl.row_expand_sub(scores, new_max))
        rescale = pl.exp(pl.sub(running_max, new_max))  # shrinks what earlier blocks summed
        running_sum = pl.add(pl.mul(running_sum, rescale), pl.row_sum(probs, scratch))
        values = pl.load(
            value_cache,
            [first_row, kv_head * head_dim],
            [block_size, head_dim],
            target_memory=pl.Mem.Mat,
            valid_shape=[valid, head_dim],
        )
        probs_left = pl.move(
            pl.move(pl.cast(probs, value_cache.dtype), target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
        )
        weighted = pl.matmul(probs_left, pl.move(values, target_memory=pl.Mem.Right))  # cube
        acc = pl.add(pl.row_expand_mul(acc, rescale), pl.move(weighted, target_memory=pl.Mem.Vec))
        running_max = new_max
    heads_out = pl.reshape(pl.row_expand_div(acc, running_sum), [1, group * head_dim])
    pl.store(heads_out, [seq, kv_head * group * head_dim], out)


@pl.jit
def paged_attention(
    query: pl.Tensor,
    key_cache: pl.Tensor,
    value_cache: pl.Tensor,
    block_tables: pl.Tensor,
    context_lens: pl.Tensor,
    out: pl.Out[pl.Tensor],
    head_dim: int,
    block_size: int,
):
    batch = context_lens.shape[0]
    kv_heads = key_cache.shape[1] // head_dim
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="paged_attention"):
        for seq in pl.range(batch):
            for kv_head in pl.range(kv_heads):
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


# The dynamic variant: the model's shape is fixed, the batch and the cache's sizes are not.
DYNAMIC = AttentionConfig("dynamic", heads=4, kv_heads=2, head_dim=64, block_size=32)
Q_COLS = DYNAMIC.heads * DYNAMIC.head_dim
KV_COLS = DYNAMIC.kv_heads * DYNAMIC.head_dim
HEAD_DIM, BLOCK_SIZE = DYNAMIC.head_dim, DYNAMIC.block_size
BATCH = pl.dynamic("batch")
MAX_BLOCKS = pl.dynamic("max_blocks")
POOL_ROWS = pl.dynamic("pool_rows")


@pl.jit
def paged_attention_dynamic(
    query: pl.Tensor[[BATCH, Q_COLS], pl.FP16],
    key_cache: pl.Tensor[[POOL_ROWS, KV_COLS], pl.FP16],
    value_cache: pl.Tensor[[POOL_ROWS, KV_COLS], pl.FP16],
    block_tables: pl.Tensor[[BATCH, MAX_BLOCKS], pl.INT32],
    context_lens: pl.Tensor[[BATCH], pl.INT32],
    out: pl.Out[pl.Tensor[[BATCH, Q_COLS], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="paged_attention_dynamic"):
        for seq in pl.range(pl.tensor.dim(context_lens, 0)):  # the batch, read at run time
            for kv_head in pl.range(KV_COLS // HEAD_DIM):
                attend_kv_head(
                    query,
                    key_cache,
                    value_cache,
                    block_tables,
                    context_lens,
                    out,
                    seq,
                    kv_head,
                    HEAD_DIM,
                    BLOCK_SIZE,
                )
    return out


@dataclass
class PagedBatch:
    """One decode step's inputs: queries, the block pool and each sequence's table and length."""

    query: torch.Tensor
    key_cache: torch.Tensor
    value_cache: torch.Tensor
    block_tables: torch.Tensor
    context_lens: torch.Tensor

    @property
    def args(self) -> tuple[torch.Tensor, ...]:
        return self.query, self.key_cache, self.value_cache, self.block_tables, self.context_lens


def contiguous_tables(block_size: int, lengths: list[int]) -> torch.Tensor:
    """The block tables of a pool filled in order: sequence after sequence, -1 past each one's end."""
    per_seq = [math.ceil(n / block_size) for n in lengths]
    tables = torch.full((len(lengths), max(per_seq)), -1, dtype=torch.int32)
    start = 0
    for seq, count in enumerate(per_seq):
        tables[seq, :count] = torch.arange(start, start + count, dtype=torch.int32)
        start += count
    return tables


def make_batch(
    cfg: AttentionConfig, lengths: list[int], spare_blocks: int, gen: torch.Generator
) -> PagedBatch:
    """Random queries and caches; each sequence's blocks are scattered over a shuffled pool."""
    in_order = contiguous_tables(cfg.block_size, lengths)
    num_blocks = int(in_order.max()) + 1 + spare_blocks  # spare blocks belong to no sequence
    shuffle = torch.randperm(num_blocks, generator=gen).to(torch.int32)
    block_tables = torch.where(in_order >= 0, shuffle[in_order.clamp(min=0).long()], in_order)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(cfg.dtype)

    return PagedBatch(
        query=randn(len(lengths), cfg.heads * cfg.head_dim),
        key_cache=randn(num_blocks * cfg.block_size, cfg.kv_heads * cfg.head_dim),
        value_cache=randn(num_blocks * cfg.block_size, cfg.kv_heads * cfg.head_dim),
        block_tables=block_tables,
        context_lens=torch.tensor(lengths, dtype=torch.int32),
    )


def reference(
    cfg: AttentionConfig, batch: PagedBatch, block_tables: torch.Tensor | None = None
) -> torch.Tensor:
    """Softmax attention in torch over each sequence's tokens, gathered through its block table."""
    tables = batch.block_tables if block_tables is None else block_tables
    group = cfg.heads // cfg.kv_heads
    out = torch.empty(batch.query.shape, dtype=torch.float32)
    for seq, length in enumerate(batch.context_lens.tolist()):
        blocks = tables[seq, : math.ceil(length / cfg.block_size)].long()
        rows = (blocks[:, None] * cfg.block_size + torch.arange(cfg.block_size)).flatten()[:length]
        keys = batch.key_cache[rows].float().view(length, cfg.kv_heads, cfg.head_dim)
        values = batch.value_cache[rows].float().view(length, cfg.kv_heads, cfg.head_dim)
        keys, values = keys.repeat_interleave(group, dim=1), values.repeat_interleave(group, dim=1)
        q = batch.query[seq].float().view(cfg.heads, cfg.head_dim)
        probs = torch.softmax(torch.einsum("hd,thd->ht", q, keys) * cfg.scale, dim=-1)
        out[seq] = torch.einsum("ht,thd->hd", probs, values).flatten()
    return out


def check(cfg: AttentionConfig, batch: PagedBatch, out: torch.Tensor) -> None:
    want = reference(cfg, batch)
    # The probabilities meet the values on the cube in the cache dtype: one rounding of it.
    tol = torch.finfo(cfg.dtype).eps
    torch.testing.assert_close(out, want, rtol=tol, atol=tol)
    # A kernel that ignored the table would read the pool in order: that answer must be wrong.
    in_order = contiguous_tables(cfg.block_size, batch.context_lens.tolist())
    assert not torch.allclose(reference(cfg, batch, in_order), want, rtol=tol, atol=tol)


def run_batched(config: RunConfig, gen: torch.Generator) -> None:
    cfg = AttentionConfig("gqa", heads=8, kv_heads=2, head_dim=64, block_size=32)
    lengths = [77, 128, 5, 200]  # the last blocks hold 13, 32, 5 and 8 tokens
    batch = make_batch(cfg, lengths, spare_blocks=3, gen=gen)
    out = torch.zeros(batch.query.shape)
    paged_attention(*batch.args, out, cfg.head_dim, cfg.block_size, config=config)
    check(cfg, batch, out)
    print(
        f"batched: {len(lengths)} sequences, {cfg.heads} query heads on {cfg.kv_heads} KV heads, "
        f"{paged_attention.last_report.total_cycles} modeled cycles"
    )


def run_dynamic(config: RunConfig, gen: torch.Generator) -> None:
    paged_attention_dynamic.cache_clear()
    for lengths, spare in (([33, 96], 1), ([1, 64, 150, 31, 97], 4), ([256, 17, 70], 0)):
        batch = make_batch(DYNAMIC, lengths, spare_blocks=spare, gen=gen)
        out = torch.zeros(batch.query.shape)
        paged_attention_dynamic(*batch.args, out, config=config)
        check(DYNAMIC, batch, out)
        print(
            f"dynamic: batch {len(lengths)}, block table {list(batch.block_tables.shape)}, "
            f"pool of {batch.key_cache.shape[0] // DYNAMIC.block_size} blocks"
        )
    info = paged_attention_dynamic.cache_info()
    assert info.misses == 1 and info.hits == 2, info  # compiled once for the three batches
    print(f"dynamic: one compile for three batches ({info})")


MULTI = (
    AttentionConfig("mha", heads=4, kv_heads=4, head_dim=64, block_size=16),
    AttentionConfig("gqa", heads=8, kv_heads=2, head_dim=128, block_size=32),
    AttentionConfig("mqa", heads=8, kv_heads=1, head_dim=64, block_size=128),
    AttentionConfig("gqa-bf16", heads=16, kv_heads=2, head_dim=128, block_size=64, dtype=torch.bfloat16),
)


def run_multi(config: RunConfig, gen: torch.Generator) -> None:
    paged_attention.cache_clear()
    for cfg in MULTI:
        lengths = [cfg.block_size * 3, 1, cfg.block_size + 7]  # full blocks, a lone token, a partial tail
        batch = make_batch(cfg, lengths, spare_blocks=2, gen=gen)
        out = torch.zeros(batch.query.shape)
        paged_attention(*batch.args, out, cfg.head_dim, cfg.block_size, config=config)
        check(cfg, batch, out)
        print(
            f"multi: {cfg.name:8} heads {cfg.heads:2}/{cfg.kv_heads}, head_dim {cfg.head_dim:3}, "
            f"block {cfg.block_size:3}, {str(cfg.dtype).removeprefix('torch.'):8} "
            f"{paged_attention.last_report.total_cycles} modeled cycles"
        )
    info = paged_attention.cache_info()
    assert info.misses == len(MULTI) and info.size == len(MULTI), info  # one specialization each
    print(f"multi: {info.size} specializations of one kernel ({info})")


VARIANTS = {"batched": run_batched, "dynamic": run_dynamic, "multi": run_multi}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variant", choices=[*VARIANTS, "all"], default="all", help="what to run (default: all)"
    )
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    args = parser.parse_args()
    config = RunConfig(platform=args.platform)

    gen = torch.Generator().manual_seed(0)
    for name, run in VARIANTS.items():
        if args.variant in (name, "all"):
            run(config, gen)
    print("OK")


if __name__ == "__main__":
    main()
