"""``pl.split_aiv`` regions as PyPTO writes them (issue #35 item 4), on a2a3sim against torch.

A region's crossings are named inside it: ``pl.aiv_shard(x)`` brings a cube value into the lane
(its share under a split), ``pl.aic_gather(v)`` joins the lanes' shares for the cube after the
region. Regions sit inside ``pl.range`` / ``pl.pipeline`` loops and ``if`` arms, siblings may take
different modes, and a data-parallel region written at full width (no boundary op) is halved by
the compiler.
"""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
UP_DOWN, LEFT_RIGHT, NONE = pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT, pl.SplitMode.NONE


def rand(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


# ---------------------------------------------------------------- the seed's worked example

POOL, DIM, ROWS, HALF, Q = 1024, 512, 128, 64, 16


@pl.jit
def gathered_scores(
    pool: pl.Tensor[[POOL, DIM], pl.BF16],
    idx: pl.Tensor[[ROWS], pl.INT32],
    q: pl.Tensor[[Q, DIM], pl.BF16],
    out: pl.Out[pl.Tensor[[Q, ROWS], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scores", optimizations=[pl.cross_core_slot(slot_num=2)]):
        for aiv in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            rows = pl.full([HALF, DIM], dtype=pl.BF16, value=0.0)
            for k in pl.range(HALF):
                src = pl.cast(pl.read(idx, [aiv * HALF + k]), pl.INDEX)
                rows = pl.gather_row(rows, pool, [k, 0], [src, 0], [1, DIM])
            kv = pl.aic_gather(rows)  # visible after the region, to the cube
        out[0:Q, 0:ROWS] = pl.matmul(q, kv, b_trans=True, out_dtype=pl.FP32)  # a tensor and a tile
    return out


def test_each_lane_gathers_its_rows_and_the_cube_multiplies_the_joined_tile():
    pool, q = rand(POOL, DIM, dtype=torch.bfloat16), rand(Q, DIM, dtype=torch.bfloat16, seed=1)
    idx = ((torch.arange(ROWS) * 37) % POOL).to(torch.int32)
    out = torch.zeros(Q, ROWS)
    gathered_scores(pool, idx, q, out, config=SIM)
    torch.testing.assert_close(out, q.float() @ pool[idx.long()].float().T, rtol=1e-2, atol=1e-2)
    text = str(gathered_scores.lower(config=SIM))
    aiv, aic = (text.split(f"def scores_{side}")[1].split("def ")[0] for side in ("aiv", "aic"))
    assert "pl.Tile[[64, 512], pl.BF16" in aiv and "pl.tile.tpush_to_aic(" in aiv
    assert "pl.tile.tpop_from_aiv(" in aic and "pl.Tile[[128, 512], pl.BF16" in aic
    assert "pl.tile.extract(" in aic  # the gathered tile reaches L0B in K blocks
    assert "slot_num=2" in aic and "size=262144" in aic


@pl.jit
def too_deep(
    pool: pl.Tensor[[POOL, DIM], pl.BF16],
    idx: pl.Tensor[[ROWS], pl.INT32],
    q: pl.Tensor[[Q, DIM], pl.BF16],
    out: pl.Out[pl.Tensor[[Q, ROWS], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="deep", optimizations=[pl.cross_core_slot(slot_num=8)]):
        for aiv in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            rows = pl.full([HALF, DIM], dtype=pl.BF16, value=0.0)
            for k in pl.range(HALF):
                src = pl.cast(pl.read(idx, [aiv * HALF + k]), pl.INDEX)
                rows = pl.gather_row(rows, pool, [k, 0], [src, 0], [1, DIM])
            kv = pl.aic_gather(rows)
        out[0:Q, 0:ROWS] = pl.matmul(q, kv, b_trans=True, out_dtype=pl.FP32)
    return out


def test_a_ring_too_deep_for_l1_names_the_reserved_bytes_and_the_knob():
    with pytest.raises(ValueError) as info:  # a MemoryBudgetError is a ValueError, as in PyPTO
        too_deep.lower(config=SIM)
    message = str(info.value)
    # 8 slots of the joined [128, 512] BF16 tile, and q's [16, 512] BF16 tile staged in Mat.
    assert "Mat buffer usage (1064960 bytes) exceeds platform limit (524288 bytes)" in message
    assert "The first 1048576 bytes of that space are reserved by system.reserve_buffer" in message
    assert "pl.cross_core_slot(slot_num=N)" in message


# ---------------------------------------------------------------- regions in loops and ifs


@pl.jit
def shard_in_a_loop(
    a: pl.Tensor[[256, 64], pl.FP16],
    b: pl.Tensor[[64, 64], pl.FP16],
    bias: pl.Tensor[[256, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="looped"):
        w = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        for r0 in pl.range(0, 256, 64):
            a_l = pl.move(pl.load(a, [r0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            prod = pl.matmul(a_l, w)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                half = pl.aiv_shard(prod)  # the lane's 32 rows of the cube's product
                rows = r0 + lane * 32
                pl.store(pl.add(half, pl.load(bias, [rows, 0], [32, 64])), [rows, 0], out)
    return out


def test_a_region_inside_a_loop_shards_each_iterations_product():
    a, b = rand(256, 64, dtype=torch.float16), rand(64, 64, dtype=torch.float16, seed=1)
    bias, out = rand(256, 64, seed=2), torch.zeros(256, 64)
    shard_in_a_loop(a, b, bias, out, config=SIM)
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)


@pl.jit
def pipelined(
    a: pl.Tensor[[256, 64], pl.FP16],
    b: pl.Tensor[[64, 64], pl.FP16],
    out: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="pipelined"):
        w = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        for r0 in pl.pipeline(0, 256, 64, stage=2):
            a_l = pl.move(pl.load(a, [r0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            prod = pl.matmul(a_l, w)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.LEFT_RIGHT):
                half = pl.exp(pl.aiv_shard(prod))  # the lane's 32 columns
                pl.store(half, [r0, lane * 32], out)
    return out


def test_a_left_right_region_inside_a_pipelined_loop():
    a, b = rand(256, 64, dtype=torch.float16) / 8, rand(64, 64, dtype=torch.float16, seed=1) / 8
    out = torch.zeros(256, 64)
    pipelined(a, b, out, config=SIM)
    torch.testing.assert_close(out, torch.exp(a.float() @ b.float()), rtol=1e-2, atol=1e-2)


@pl.jit
def branchy(
    a: pl.Tensor[[64, 64], pl.FP16],
    b: pl.Tensor[[64, 64], pl.FP16],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    flag: pl.Tensor[[1], pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="branchy"):
        a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_r = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        prod = pl.matmul(a_l, b_r)
        if pl.read(flag, [0]) > 0:
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.exp(pl.aiv_shard(prod)), [lane * 32, 0], out)
        else:
            for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                whole = pl.aiv_shard(prod)  # both lanes hold the whole tile
                if lane == 0:
                    pl.store(pl.neg(whole), [0, 0], out)
    return out


@pytest.mark.parametrize("taken", [1, 0])
def test_regions_in_the_arms_of_an_if_with_different_modes(taken):
    a, b = rand(64, 64, dtype=torch.float16) / 8, rand(64, 64, dtype=torch.float16, seed=1) / 8
    out = torch.zeros(64, 64)
    branchy(a, b, out, torch.tensor([taken], dtype=torch.int32), config=SIM)
    product = a.float() @ b.float()
    torch.testing.assert_close(out, torch.exp(product) if taken else -product, rtol=1e-2, atol=1e-2)


@pl.jit
def round_trip(
    x: pl.Tensor[[64, 64], pl.FP16],
    w: pl.Tensor[[64, 64], pl.FP16],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="round_trip"):
        x_l = pl.move(pl.load(x, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        w_mat = pl.load(w, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        first = pl.matmul(x_l, pl.move(w_mat, target_memory=pl.Mem.Right))
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            act = pl.cast(pl.relu(pl.aiv_shard(first)), pl.FP16)
            back = pl.aic_gather(act)  # both lanes' halves joined, in the cube's Mat
        pl.store(pl.matmul(back, w_mat), [0, 0], out)  # Mat operands: the compiler stages them
    return out


def test_a_gathered_value_feeds_a_second_matmul_after_the_region():
    x, w = rand(64, 64, dtype=torch.float16) / 8, rand(64, 64, dtype=torch.float16, seed=1) / 8
    out = torch.zeros(64, 64)
    round_trip(x, w, out, config=SIM)
    act = torch.relu(x.float() @ w.float()).half().float()
    torch.testing.assert_close(out, act @ w.float(), rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------- a full-width region, halved


@pl.jit
def full_width(
    x: pl.Tensor[[128, 64], pl.FP32],
    y: pl.Tensor[[128, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="full_width"):
        for _ in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            t = pl.add(pl.load(x, [0, 0], [128, 64]), pl.load(y, [0, 0], [128, 64]))
            pl.store(t, [0, 0], out)  # written at full width: the compiler halves it
    return out


def test_a_region_without_boundary_ops_is_written_at_full_width_and_halved():
    x, y, out = rand(128, 64), rand(128, 64, seed=1), torch.zeros(128, 64)
    full_width(x, y, out, config=SIM)
    torch.testing.assert_close(out, x + y)
    text = str(full_width.lower(config=SIM))
    aiv = text.split("@pl.function(type=pl.FunctionType.AIV)")[1]
    assert "pl.Tile[[64, 64], pl.FP32" in aiv and "pl.Tile[[128, 64]" not in aiv


# ---------------------------------------------------------------- the rules, at the user's line


def _error(kernel, *args):
    with pytest.raises(ParseError) as info:
        kernel.parse(*args)
    return info.value


def test_a_shard_outside_every_region_is_an_error():
    @pl.jit
    def outside(a: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            v = pl.aiv_shard(pl.matmul(a_l, b_r))
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.exp(v), [lane * 32, 0], out)
        return out

    err = _error(outside)
    assert "outside every pl.split_aiv region" in err.message
    assert err.span.line == outside.__wrapped__.__code__.co_firstlineno + 5
    assert "pl.aiv_shard(x) at the top of the region" in err.hint


def test_a_gather_outside_every_region_is_an_error():
    @pl.jit
    def outside(x: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                v = pl.load(x, [lane * 32, 0], [32, 64])
            back = pl.aic_gather(v)
            pl.store(pl.matmul(back, back), [0, 0], out)
        return out

    err = _error(outside)
    assert "outside every pl.split_aiv region" in err.message and "pl.aic_gather" in err.message


def test_a_cube_value_read_in_a_region_without_a_shard_names_the_value():
    @pl.jit
    def unnamed(a: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            mm = pl.matmul(a_l, b_r)
            for _lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                pl.store(pl.exp(mm), [0, 0], out)
        return out

    err = _error(unnamed)
    assert err.message.startswith("'mm' is produced on the CUBE lane")
    assert "mm_v = pl.aiv_shard(mm)" in err.hint


def test_a_lane_value_read_by_the_cube_without_a_gather_names_the_value():
    @pl.jit
    def unnamed(x: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                v = pl.load(x, [0, 0], [64, 64])
            moved = pl.move(v, target_memory=pl.Mem.Left)
            pl.store(moved, [0, 0], out)
        return out

    err = _error(unnamed)
    assert err.message.startswith("'v' is defined inside a pl.split_aiv region")
    assert "v = pl.aic_gather(v)" in err.hint


def test_vector_compute_outside_the_regions_of_a_scope_that_has_them_is_an_error():
    @pl.jit
    def stray(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.exp(pl.load(x, [0, 0], [64, 64]))
            for _lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                pl.store(t, [0, 0], out)
        return out

    err = _error(stray)
    assert "sits outside every pl.split_aiv region" in err.message
    assert "pl.split_aiv(2, mode=pl.SplitMode.NONE)" in err.hint


def test_full_width_work_in_a_region_that_names_a_crossing_is_an_error():
    @pl.jit
    def mixed_widths(
        a: pl.Tensor[[64, 64], pl.FP16],
        x: pl.Tensor[[64, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            mm = pl.matmul(a_l, b_r)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                half = pl.aiv_shard(mm)
                whole = pl.exp(pl.load(x, [0, 0], [64, 64]))  # the same full tile on both lanes
                pl.store(pl.add(half, half), [lane * 32, 0], out)
                pl.store(whole, [0, 0], out)
        return out

    err = _error(mixed_widths)
    assert "names a crossing, so it is written per lane" in err.message
    assert "pl.load" in err.message


def test_a_split_that_disagrees_with_its_region_is_an_error():
    @pl.jit
    def disagree(a: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            mm = pl.matmul(a_l, b_r)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.aiv_shard(mm, split=pl.SplitMode.LEFT_RIGHT), [lane * 32, 0], out)
        return out

    err = _error(disagree)
    assert "split=LEFT_RIGHT in a region of mode=UP_DOWN" in err.message


def test_a_crossing_under_a_branch_on_the_lane_is_an_error():
    @pl.jit
    def guarded(a: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            mm = pl.matmul(a_l, b_r)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                if lane == 0:
                    pl.store(pl.aiv_shard(mm), [0, 0], out)
        return out

    with pytest.raises(ParseError) as info:
        guarded.lower(config=SIM)
    assert "cannot follow it" in info.value.message and "'lane" in info.value.message
    assert "shard at the top of the region" in info.value.hint
