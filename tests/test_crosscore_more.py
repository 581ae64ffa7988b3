"""Cross-core leftovers of issue #12: tile views in printed IR and ``pl.create_tile(tile_view=)``,
valid shapes through hand-written pipes, ``pl.aiv_shard`` of a tensor region, and manual ring
buffers inside a ``pl.at`` scope. Numbers against torch, errors by their exact text."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import MemoryBudgetError, ParseError, print_ir, structural_diff
from pypto.runtime import RunConfig
from pypto_sim_a2a3.errors import PipeError

SIM = RunConfig(platform="a2a3sim")


@pl.jit
def viewed_rows(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.create_tile([64, 64], pl.FP32, tile_view=pl.TileView(valid_shape=[40, 64]))
        t = pl.tile.assemble(t, pl.load(x, [0, 0], [64, 64]), [0, 0])
        pl.store(pl.row_sum(pl.add(t, t), pl.create_tile([64, 64], pl.FP32)), [0, 0], out)
    return out


def test_create_tile_with_a_tile_view_makes_a_partial_tile():
    x = torch.randn(64, 64)
    out = torch.full((64, 1), -1.0)
    viewed_rows(x, out, config=SIM)
    assert torch.allclose(out[:40], 2 * x[:40].sum(1, keepdim=True), atol=1e-4)
    assert bool((out[40:] == -1).all())  # rows past the view's 40 are not real: never stored


def test_the_printer_writes_a_valid_shape_as_a_tile_view_that_reads_back_equal():
    x, out = torch.randn(64, 64), torch.zeros(64, 1)
    program = viewed_rows.lower(x, out, config=SIM)
    text = program.as_python()
    assert "pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[40, 64])] = " in text
    assert "valid [40, 64]" not in text  # no longer a comment
    assert structural_diff(program, pl.parse(text)) is None


def test_a_tile_view_outside_the_created_tile_is_a_parse_error_at_the_call():
    def bad(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.create_tile([64, 64], pl.FP32, tile_view=pl.TileView(valid_shape=[80, 64]))
            pl.store(t, [0, 0], out)
        return out

    with pytest.raises(ParseError) as err:
        pl.jit(bad)(torch.zeros(64, 64), torch.zeros(64, 64), config=SIM)
    assert err.value.message == (
        "pl.create_tile: pl.TileView valid_shape [80, 64] does not lie inside the tile's [64, 64]"
    )
    assert err.value.hint == "give one extent per dim, each between 1 and the tile's extent"
    assert "tile_view=pl.TileView(valid_shape=[80, 64])" in str(err.value)


def _blocks(declared_rows):
    """A hand-written pipe: the cube pushes 32-row product blocks of a run-time row count, the
    last one partial; each lane pops its 16-row half with the valid shape ``declared_rows``
    gives it and stores the row sums of the real rows."""

    @pl.jit
    def blocks(
        a: pl.Tensor[[96, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[96, 1], pl.FP32]],
        n: pl.INDEX,
    ):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="blocks"):
            pl.aic_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=2)
            w = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            for r0 in pl.range(0, n, 32):
                a_l = pl.move(
                    pl.load(a, [r0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
                )
                pl.tpush_to_aiv(
                    pl.set_validshape(pl.matmul(a_l, w), pl.minimum(32, n - r0), 64),
                    split=pl.SplitMode.UP_DOWN,
                )
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.aiv_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=2)
                for r0 in pl.range(0, n, 32):
                    rows = declared_rows(pl.minimum(32, n - r0), lane)
                    half = pl.tpop_from_aic(
                        shape=[16, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN, valid_shape=[rows, 64]
                    )
                    pl.store(pl.row_sum(half, pl.create_tile([16, 64], pl.FP32)), [r0 + lane * 16, 0], out)
                    pl.tfree_to_aic(half)
        return out

    return blocks


@pl.jit.inline
def lane_rows(rows, lane):
    return pl.minimum(16, pl.maximum(rows - lane * 16, 0))


@pl.jit.inline
def whole_half(rows, lane):
    return pl.minimum(16, rows + 16)


@pytest.mark.parametrize("n", [72, 88, 96])
def test_a_pop_with_a_run_time_valid_shape_sees_only_the_real_rows_of_a_partial_last_block(n):
    a, b = torch.randn(96, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    out = torch.full((96, 1), -1.0)
    _blocks(lane_rows)(a, b, out, n, config=SIM)
    want = (a.float() @ b.float()).sum(1, keepdim=True)
    assert torch.allclose(out[:n], want[:n], rtol=1e-2, atol=1e-1)
    assert bool((out[n:] == -1).all())  # the rows past n were pushed but are not real


def test_a_pop_whose_valid_shape_disagrees_with_the_push_is_a_pipe_error_naming_both_lines():
    a, b = torch.randn(96, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    with pytest.raises(PipeError) as err:
        _blocks(whole_half)(a, b, torch.zeros(96, 1), 72, config=SIM)
    message = err.value.message
    assert message.startswith("tpop_from_aic declares valid_shape=[16, 64], but the tile pushed at ")
    assert message.endswith(" has valid shape [8, 64] (the popped part of it)")
    assert "test_crosscore_more.py" in message and "test_crosscore_more.py" in str(err.value.span)
    assert err.value.hint.startswith("give the pop the valid shape of the tile that was pushed")


@pl.jit
def biased_blocks(
    a: pl.Tensor[[128, 64], pl.FP16],
    b: pl.Tensor[[64, 64], pl.FP16],
    bias: pl.Tensor[[128, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="biased"):
        w = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        for r0 in pl.range(0, 128, 64):
            a_l = pl.move(pl.load(a, [r0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            mm = pl.matmul(a_l, w)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                prod = pl.aiv_shard(mm)
                bias_half = pl.aiv_shard(bias[r0 : r0 + 64, :])
                pl.store(pl.add(prod, bias_half), [r0 + lane * 32, 0], out)
    return out


def test_aiv_shard_of_a_tensor_region_loads_each_lanes_rows_from_global_memory():
    a, b = torch.randn(128, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    bias, out = torch.randn(128, 64), torch.zeros(128, 64)
    biased_blocks(a, b, bias, out, config=SIM)
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    aiv = {f.name: f for f in biased_blocks.lower(a, b, bias, out).functions.values()}["biased_aiv"]
    # the lane loads its share of the region itself: no pipe carries it
    assert "pl.tile.load(bias, [r0 + (lane * 32), 0], shape=[32, 64]" in print_ir(aiv)


@pl.jit
def odd_columns(x: pl.Tensor[[32, 63], pl.FP32], out: pl.Out[pl.Tensor[[32, 63], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="odd"):
        for lane in pl.split_aiv(2, mode=pl.SplitMode.LEFT_RIGHT):
            xs = pl.aiv_shard(x)
            pl.store(pl.mul(xs, xs), [0, lane * 32], out)
    return out


def test_aiv_shard_of_an_odd_tensor_gives_lane_0_the_larger_half():
    x, out = torch.randn(32, 63), torch.full((32, 63), -1.0)
    odd_columns(x, out, config=SIM)
    assert torch.allclose(out, x * x)


def test_a_tensor_shard_outside_every_region_is_a_parse_error():
    def outside(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            xs = pl.aiv_shard(x, split=pl.SplitMode.UP_DOWN)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.relu(xs), [lane * 32, 0], out)
        return out

    with pytest.raises(ParseError) as err:
        pl.jit(outside)(torch.zeros(64, 64), torch.zeros(64, 64), config=SIM)
    assert err.value.message == (
        "pl.aiv_shard: outside every pl.split_aiv region: it names a tile crossing a region's edge, "
        "so it is written inside the region"
    )
    assert "x_v = pl.aiv_shard(x) at the top of the region" in err.value.hint


def test_a_shard_in_an_automatic_split_scope_is_an_error_pl_split_inserts_its_own():
    def auto_biased(
        a: pl.Tensor[[128, 64], pl.FP16],
        bias: pl.Tensor[[128, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            pl.store(pl.aiv_shard(bias[0:64, :]), [0, 0], out)
        return out

    with pytest.raises(ParseError) as err:
        pl.jit(auto_biased).parse()
    assert "outside every pl.split_aiv region" in err.value.message
    assert "let pl.split(...) insert the transfers" in err.value.hint


def _ringed(slots):
    """A mixed scope that reserves its own cube->vector ring of ``slots`` 32768-byte slots."""

    @pl.jit
    def ringed(
        a: pl.Tensor[[256, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        bias: pl.Tensor[[256, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="ringed"):
            ring = pl.import_peer_buffer(name="c2v_ring")
            pl.aic_initialize_pipe(dir_mask=1, slot_size=32768, c2v_consumer_buf=ring)
            w = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            for r0 in pl.range(0, 256, 128):
                a_l = pl.move(
                    pl.load(a, [r0, 0], [128, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
                )
                pl.tpush_to_aiv(pl.matmul(a_l, w), split=pl.SplitMode.UP_DOWN)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                buf = pl.reserve_buffer(name="c2v_ring", size=slots * 32768)
                pl.aiv_initialize_pipe(dir_mask=1, slot_size=32768, c2v_consumer_buf=buf)
                for r0 in pl.range(0, 256, 128):
                    half = pl.tpop_from_aic(shape=[64, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
                    rows = r0 + lane * 64
                    pl.store(pl.add(half, pl.load(bias, [rows, 0], [64, 64])), [rows, 0], out)
                    pl.tfree_to_aic(half)
        return out

    return ringed


def test_a_pl_at_scope_that_reserves_its_own_ring_runs_like_the_hand_written_kernels():
    a, b = torch.randn(256, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    bias, out = torch.randn(256, 64), torch.zeros(256, 64)
    kernel = _ringed(2)
    kernel(a, b, bias, out, config=SIM)
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    funcs = {f.name: f for f in kernel.lower(a, b, bias, out).functions.values()}
    aic, aiv = print_ir(funcs["ringed_aic"]), print_ir(funcs["ringed_aiv"])
    assert "pl.system.import_peer_buffer(name='c2v_ring')" in aic and "reserve_buffer" not in aic
    assert "pl.system.reserve_buffer(name='c2v_ring', size=65536, base=0)" in aiv and "import_peer" not in aiv
    assert "slot_num=2" in aiv  # the depth the buffer holds


def test_a_scope_ring_over_the_vec_budget_is_the_budget_error_at_its_setup():
    a, b = torch.randn(256, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    with pytest.raises(MemoryBudgetError) as err:
        _ringed(6)(a, b, torch.zeros(256, 64), torch.zeros(256, 64), config=SIM)
    assert err.value.message == (
        "Function 'ringed_aiv': Vec buffer usage (212992 bytes) exceeds platform limit (188416 bytes). "
        "The first 196608 bytes of that space are reserved by system.reserve_buffer, so tiles are "
        "allocated above them — this is the cross-core pipe ring."
    )
    assert err.value.hint == (
        "the ring holds slot_num whole crossing tiles of 32768 bytes, and 172032 bytes are left for it "
        "beside the tiles: slot_num=5 fits (pl.reserve_buffer(name='c2v_ring', size=163840))"
    )
    assert "pl.aiv_initialize_pipe(dir_mask=1, slot_size=32768, c2v_consumer_buf=buf)" in str(err.value)
