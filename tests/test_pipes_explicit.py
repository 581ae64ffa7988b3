"""The explicit form of the seed's Step 3: every operator by hand, and the failures the page
warns about — a missing tfree and unordered cross-core memory — reported instead of hanging."""

import time
import warnings

import pytest
import torch

import pypto.language as pl
from pypto.ir import DeadlockError, RaceError
from pypto.passes import CompileWarning
from pypto_sim_a2a3 import PipeError

torch.manual_seed(0)
X = torch.randn(128, 128, dtype=torch.float16)
W = torch.randn(128, 128, dtype=torch.float16)
BIAS = torch.randn(128, 128)


def want():
    return torch.relu(X).float() @ W.float() + BIAS


# A round trip through both pipes with the raw operators: the lanes push relu(x) to the cube,
# the cube multiplies and pushes the product back, the lanes add the bias.
@pl.jit
def round_trip(
    x: pl.Tensor[[128, 128], pl.FP16],
    w: pl.Tensor[[128, 128], pl.FP16],
    bias: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="round_trip"):
        pl.aic_initialize_pipe(dir_mask=3, slot_size=65536, slot_num=2)
        act = pl.tpop_from_aiv(shape=[128, 128], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)
        w_l1 = pl.load(w, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(act, target_memory=pl.Mem.Left), pl.move(w_l1, target_memory=pl.Mem.Right))
        pl.tfree_to_aiv(act)
        pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.aiv_initialize_pipe(dir_mask=3, slot_size=65536, slot_num=2)
            pl.tpush_to_aic(pl.relu(pl.load(x, [lane * 64, 0], [64, 128])), split=pl.SplitMode.UP_DOWN)
            prod = pl.tpop_from_aic(shape=[64, 128], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
            total = pl.add(prod, pl.load(bias, [lane * 64, 0], [64, 128]))
            pl.tfree_to_aic(prod)
            pl.store(total, [lane * 64, 0], out)
    return out


def test_raw_push_pop_free_in_both_directions_match_torch():
    out = torch.zeros(128, 128)
    round_trip(X, W, BIAS, out)
    assert torch.allclose(out, want(), rtol=1e-2, atol=1e-2)


# The same round trip with the boundary operators, named inside the regions.
@pl.jit
def shard_gather(
    x: pl.Tensor[[128, 128], pl.FP16],
    w: pl.Tensor[[128, 128], pl.FP16],
    bias: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="shard_gather"):
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            act_half = pl.relu(pl.load(x, [lane * 64, 0], [64, 128]))
            act = pl.aic_gather(act_half)
        w_l1 = pl.load(w, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(act, target_memory=pl.Mem.Left), pl.move(w_l1, target_memory=pl.Mem.Right))
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            prod = pl.aiv_shard(acc)
            pl.store(pl.add(prod, pl.load(bias, [lane * 64, 0], [64, 128])), [lane * 64, 0], out)
    return out


def test_aiv_shard_and_aic_gather_regions_match_torch_with_automatic_pipes():
    out = torch.zeros(128, 128)
    shard_gather(X, W, BIAS, out)
    assert torch.allclose(out, want(), rtol=1e-2, atol=1e-2)
    kernel = {f.name: f for f in shard_gather.lower().functions.values()}["shard_gather_aiv"]
    ops = [s.value.op for s in kernel.body if hasattr(s, "value") and hasattr(s.value, "op")]
    assert ops.count("system.tfree_to_aic") == ops.count("tile.tpop_from_aic") == 1


# A stream of four tiles through a two-slot ring whose pops are never freed.
@pl.jit
def leaky(
    a: pl.Tensor[[512, 128], pl.FP16],
    b: pl.Tensor[[128, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[512, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="leaky"):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
        b_right = pl.move(
            pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
        )
        for i in pl.range(4):
            a_l1 = pl.load(a, [i * 128, 0], [128, 128], target_memory=pl.Mem.Mat)
            pl.tpush_to_aiv(
                pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), b_right), split=pl.SplitMode.UP_DOWN
            )
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.aiv_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
            for j in pl.range(4):
                half = pl.tpop_from_aic(shape=[64, 128], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
                pl.store(pl.relu(half), [j * 128 + lane * 64, 0], out)
    return out


def test_a_pop_never_freed_is_warned_at_compile_time():
    with pytest.warns(CompileWarning, match=r"half popped by pl.tpop_from_aic is not freed on every path"):
        leaky.lower()


def test_a_pop_never_freed_is_a_deadlock_naming_the_pipe_the_slots_and_the_pop():
    a, b, out = (
        torch.randn(512, 128, dtype=torch.float16),
        torch.randn(128, 128, dtype=torch.float16),
        torch.zeros(512, 128),
    )
    start = time.perf_counter()
    with warnings.catch_warnings(), pytest.raises(DeadlockError) as info:
        warnings.simplefilter("ignore", CompileWarning)
        leaky(a, b, out)
    assert time.perf_counter() - start < 5  # reported, not hung (compile included)
    text = str(info.value)
    with open(__file__) as source:
        pop_line = next(n for n, line in enumerate(source, 1) if "half = pl.tpop_from_aic" in line)
    assert "tpush_to_aiv on pipe leaky_c2v blocks" in text
    assert f"slot 0 popped by AIV0 at {__file__}:{pop_line}" in text
    assert "never freed" in text and "missing tfree_to_aic" in text
    assert info.value.span.line == pop_line
    assert "tfree" in info.value.hint


@pl.jit
def fixed(
    a: pl.Tensor[[512, 128], pl.FP16],
    b: pl.Tensor[[128, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[512, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="fixed"):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
        b_right = pl.move(
            pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
        )
        for i in pl.range(4):
            a_l1 = pl.load(a, [i * 128, 0], [128, 128], target_memory=pl.Mem.Mat)
            pl.tpush_to_aiv(
                pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), b_right), split=pl.SplitMode.UP_DOWN
            )
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.aiv_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
            for j in pl.range(4):
                half = pl.tpop_from_aic(shape=[64, 128], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
                pl.store(pl.relu(half), [j * 128 + lane * 64, 0], out)
                pl.tfree_to_aic(half)
    return out


def test_the_same_stream_with_every_pop_freed_runs_clean():
    a, b, out = (
        torch.randn(512, 128, dtype=torch.float16),
        torch.randn(128, 128, dtype=torch.float16),
        torch.zeros(512, 128),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        fixed(a, b, out)
    assert torch.allclose(out, torch.relu(a.float() @ b.float()), rtol=1e-2, atol=1e-2)


# Cross-core ordering through global memory: the cube writes a scratch tensor, the lanes read it.
@pl.jit
def unordered(
    a: pl.Tensor[[128, 128], pl.FP16],
    b: pl.Tensor[[128, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    scratch = pl.create_tensor([128, 128], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="through_gm"):
        a_l1 = pl.load(a, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], scratch)
        pl.system.syncall()
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.system.syncall()
            t = pl.load(scratch, [lane * 64, 0], [64, 128])
            pl.store(pl.relu(t), [lane * 64, 0], out)
    return out


@pl.jit
def ordered(
    a: pl.Tensor[[128, 128], pl.FP16],
    b: pl.Tensor[[128, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    scratch = pl.create_tensor([128, 128], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="through_gm"):
        a_l1 = pl.load(a, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], scratch)
        pl.system.cacheinvalid()  # publish
        pl.system.fence()
        pl.system.syncall()
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.system.syncall()
            pl.system.cacheinvalid()  # see the cube's writes
            t = pl.load(scratch, [lane * 64, 0], [64, 128])
            pl.store(pl.relu(t), [lane * 64, 0], out)
    return out


def test_a_vector_read_of_a_cube_write_with_only_a_barrier_is_a_race_naming_both_lines():
    a, b, out = (
        torch.randn(128, 128, dtype=torch.float16),
        torch.randn(128, 128, dtype=torch.float16),
        torch.zeros(128, 128),
    )
    with pytest.raises(RaceError) as info:
        unordered(a, b, out)
    with open(__file__) as source:
        lines = source.read().splitlines()
    start = next(n for n, line in enumerate(lines, 1) if line.startswith("def unordered"))
    store = next(
        n for n, line in enumerate(lines, 1) if n > start and "pl.store(acc, [0, 0], scratch)" in line
    )
    load = next(n for n, line in enumerate(lines, 1) if n > start and "t = pl.load(scratch" in line)
    text = str(info.value)
    assert f"after cg0.AIC wrote it at {__file__}:{store}" in text
    assert "reads scratch" in text and f"{__file__}:{load}" in text
    assert "never published its write" in text
    assert "fence" in info.value.hint and "syncall" in info.value.hint and "cacheinvalid" in info.value.hint


def test_publish_fence_syncall_invalidate_orders_the_read():
    a, b, out = (
        torch.randn(128, 128, dtype=torch.float16),
        torch.randn(128, 128, dtype=torch.float16),
        torch.zeros(128, 128),
    )
    ordered(a, b, out)
    assert torch.allclose(out, torch.relu(a.float() @ b.float()), rtol=1e-2, atol=1e-2)


# The lanes free a popped block, then read it while the cube pushes the next blocks into its slot.
@pl.jit
def read_after_free(
    a: pl.Tensor[[256, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="read_after_free"):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=2)
        for i in pl.range(4):
            pl.tpush_to_aiv(
                pl.load(a, [i * 64, 0], [64, 64], target_memory=pl.Mem.Mat), split=pl.SplitMode.UP_DOWN
            )
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.aiv_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=2)
            for j in pl.range(4):
                block = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
                pl.tfree_to_aic(block)  # given back too early
                slow = pl.exp(pl.exp(pl.exp(pl.exp(pl.load(a, [lane * 32, 0], [32, 64])))))
                pl.store(pl.add(block, pl.mul(slow, 0.0)), [j * 64 + lane * 32, 0], out)  # reads it
    return out


def test_a_popped_tile_read_after_its_tfree_is_a_pipe_error_naming_the_free():
    """Not wrong numbers: once freed, the slot may already hold the cube's next block."""
    with pytest.raises(PipeError) as info:
        read_after_free(torch.randn(256, 64), torch.zeros(256, 64))
    with open(__file__) as source:
        lines = source.read().splitlines()
    free, read = (
        next(n for n, line in enumerate(lines, 1) if tag in line) for tag in ("too early", "# reads it")
    )
    assert info.value.message == (
        f"in read_after_free_aiv: pl.add on AIV0 reads block after pl.tfree_to_aic(block) at {__file__}:{free} "
        "gave its ring slot back to the producer, which may have overwritten it"
    )
    assert info.value.span.line == read
    assert (
        info.value.hint
        == "free a popped tile after its last use: move pl.tfree_to_aic(block) below this line"
    )


@pl.jit
def no_barrier(
    a: pl.Tensor[[128, 128], pl.FP16],
    b: pl.Tensor[[128, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    scratch = pl.create_tensor([128, 128], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="no_barrier"):
        a_l1 = pl.load(a, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], scratch)  # the cube's write
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            t = pl.load(scratch, [lane * 64, 0], [64, 128])  # the lanes' read
            pl.store(pl.relu(t), [lane * 64, 0], out)
    return out


def test_a_read_that_ran_before_the_write_it_needed_is_a_race_whose_hint_orders_the_write_first():
    """The lanes are not held back, so they read scratch before the cube writes it: reported as the
    cube overwriting what they read, with the fix for either order the program meant."""
    a, b = (torch.randn(128, 128, dtype=torch.float16) for _ in range(2))
    with pytest.raises(RaceError) as info:
        no_barrier(a, b, torch.zeros(128, 128))
    assert info.value.message.startswith("cg0.AIC writes scratch[0:64, 0:128] at ")
    assert "after cg0.AIV0 read it" in info.value.message
    hint = info.value.hint
    assert hint.startswith(
        "if the read should see this write, order the write first: the writer publishes it"
    )
    assert "the reader invalidates (pl.system.cacheinvalid) before it reads" in hint
    assert hint.endswith("pass a pl.system.syncall that the reader reached after its read before overwriting")


@pl.jit
def one_lane_pushes(
    x: pl.Tensor[[64, 64], pl.FP32],
    b: pl.Tensor[[64, 64], pl.FP16],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="one_lane_pushes"):
        pl.aic_initialize_pipe(dir_mask=2, slot_size=8192, slot_num=2)
        g = pl.tpop_from_aiv(shape=[64, 64], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)
        b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(g, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
        pl.tfree_to_aiv(g)
        pl.store(acc, [0, 0], out)
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.aiv_initialize_pipe(dir_mask=2, slot_size=8192, slot_num=2)
            if lane == 0:
                share = pl.cast(pl.load(x, [0, 0], [32, 64]), pl.FP16)
                pl.tpush_to_aic(share, split=pl.SplitMode.UP_DOWN)  # lane 0's share only
    return out


def test_a_gather_only_one_lane_pushed_to_is_a_deadlock_at_that_push_naming_the_missing_share():
    with pytest.raises(DeadlockError) as info:
        one_lane_pushes(torch.randn(64, 64), torch.randn(64, 64, dtype=torch.float16), torch.zeros(64, 64))
    with open(__file__) as source:
        push = next(n for n, line in enumerate(source, 1) if "# lane 0's share only" in line)
    assert info.value.span.line == push
    assert (
        "AIV0 finished after 1 push(es), AIV1 finished after 0 push(es): one lane's share of a tile is missing"
        in (info.value.message)
    )
    assert info.value.hint == "both AIV lanes push their share of every tile"
