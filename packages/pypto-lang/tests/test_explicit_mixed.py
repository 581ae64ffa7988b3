"""The explicit mixed form parses: pipe ops, aiv_shard / aic_gather, split_aiv regions, lane indices."""

import pytest
from lang_kernels_explicit import explicit

import pypto.language as pl
from pypto.ir import INDEX, Assign, Call, Eval, ParseError, ScopeStmt, SplitAivRegion, SplitMode, print_ir
from pypto.ir.filecheck import filecheck
from pypto.ir.nodes import walk_stmts

T64 = pl.Tensor[[64, 64], pl.FP32]
STEP3_OPS = {
    "system.aic_initialize_pipe",
    "system.aiv_initialize_pipe",
    "tile.tpush_to_aiv",
    "tile.tpush_to_aic",
    "tile.tpop_from_aic",
    "tile.tpop_from_aiv",
    "system.tfree_to_aic",
    "system.tfree_to_aiv",
    "tile.aiv_shard",
    "tile.aic_gather",
}


def calls(program):
    stmts = walk_stmts(program.entry_function.body)
    return [s.value for s in stmts if isinstance(s, (Assign, Eval)) and isinstance(s.value, Call)]


def regions(program):
    return [s for s in walk_stmts(program.entry_function.body) if isinstance(s, SplitAivRegion)]


def test_every_operator_of_the_step3_table_parses_to_its_op():
    program = explicit.parse()
    filecheck(
        print_ir(program),
        """
        CHECK-LABEL: with pl.at(level=pl.Level.CORE_GROUP, name_hint='explicit'):
        CHECK-NEXT:  pl.system.aic_initialize_pipe(dir_mask=3, slot_size=16384, slot_num=2)
        CHECK-NEXT:  load: pl.Tile[[64, 128], pl.FP16, pl.Mem.Mat] = pl.tile.load(a, [0, 0], shape=[64, 128], target_memory=pl.Mem.Mat)
        CHECK-NEXT:  a_l: pl.Tile[[64, 128], pl.FP16, pl.Mem.Left] = pl.tile.move(load, target_memory=pl.Mem.Left)
        CHECK-NEXT:  load_1: pl.Tile[[128, 64], pl.FP16, pl.Mem.Mat] = pl.tile.load(b, [0, 0], shape=[128, 64], target_memory=pl.Mem.Mat)
        CHECK-NEXT:  b_r: pl.Tile[[128, 64], pl.FP16, pl.Mem.Right] = pl.tile.move(load_1, target_memory=pl.Mem.Right)
        CHECK-NEXT:  acc: pl.Tile[[64, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a_l, b_r)
        CHECK-NEXT:  pl.tile.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
        CHECK-NEXT:  for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
        CHECK-NEXT:  pl.system.aiv_initialize_pipe(dir_mask=3, slot_size=16384, slot_num=2)
        CHECK-NEXT:  half: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
        CHECK-NEXT:  load_2: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(bias, [aiv_id * 32, 0], shape=[32, 64], target_memory=pl.Mem.Vec)
        CHECK-NEXT:  y: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(half, load_2)
        CHECK-NEXT:  pl.system.tfree_to_aic(half)
        CHECK-NEXT:  pl.tile.tpush_to_aic(y, split=pl.SplitMode.UP_DOWN)
        CHECK-NEXT:  whole: pl.Tile[[64, 64], pl.FP32, pl.Mem.Mat] = pl.tile.tpop_from_aiv(shape=[64, 64], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
        CHECK-NEXT:  load_3: pl.Tile[[64, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(w, [0, 0], shape=[64, 64], target_memory=pl.Mem.Mat)
        CHECK-NEXT:  w_r: pl.Tile[[64, 64], pl.FP32, pl.Mem.Right] = pl.tile.move(load_3, target_memory=pl.Mem.Right)
        CHECK-NEXT:  move: pl.Tile[[64, 64], pl.FP32, pl.Mem.Left] = pl.tile.move(whole, target_memory=pl.Mem.Left)
        CHECK-NEXT:  again: pl.Tile[[64, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(move, w_r)
        CHECK-NEXT:  pl.system.tfree_to_aiv(whole)
        CHECK-NEXT:  pl.tile.store(again, [0, 0], back)
        CHECK-NEXT:  for aiv_id_1 in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
        CHECK-NEXT:  acc_v: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.aiv_shard(acc, split=pl.SplitMode.UP_DOWN)
        CHECK-NEXT:  z: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(acc_v)
        CHECK-NEXT:  pl.tile.store(z, [aiv_id_1 * 32, 0], out)
        CHECK-NEXT:  gathered: pl.Tile[[64, 64], pl.FP32, pl.Mem.Mat] = pl.tile.aic_gather(z, split=pl.SplitMode.UP_DOWN)
        CHECK-NEXT:  move_1: pl.Tile[[64, 64], pl.FP32, pl.Mem.Left] = pl.tile.move(gathered, target_memory=pl.Mem.Left)
        CHECK-NEXT:  matmul: pl.Tile[[64, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(move_1, w_r)
        CHECK-NEXT:  pl.tile.store(matmul, [0, 0], back)
        CHECK-NEXT:  return out, back
        """,
    )
    assert {c.op for c in calls(program)} >= STEP3_OPS
    assert [r.mode for r in regions(program)] == [SplitMode.UP_DOWN, SplitMode.UP_DOWN]
    first = regions(program)[0]
    assert [s.value.op for s in first.body] == [
        "system.aiv_initialize_pipe",
        "tile.tpop_from_aic",
        "tile.load",
        "tile.add",
        "system.tfree_to_aic",
        "tile.tpush_to_aic",
    ]


def test_a_region_binds_its_lane_to_an_index_var_and_keeps_its_body():
    first, second = regions(explicit.parse())
    assert (first.lane.name, first.lane.type) == ("aiv_id", INDEX)
    assert second.lane.name == "aiv_id_1"  # a second region's lane is a new variable
    assert [s.value.op for s in second.body] == [
        "tile.aiv_shard",
        "tile.exp",
        "tile.store",
        "tile.aic_gather",
    ]


def test_a_name_bound_in_a_region_is_the_same_variable_after_it():
    program = explicit.parse()
    assigns = [s for s in walk_stmts(program.entry_function.body) if isinstance(s, Assign)]
    z = next(s.target for s in assigns if s.target.name == "z")
    gather = next(c for c in calls(program) if c.op == "tile.aic_gather")
    assert gather.args[0] is z


@pytest.mark.parametrize("mode", [SplitMode.UP_DOWN, SplitMode.LEFT_RIGHT, SplitMode.NONE])
def test_shard_and_gather_split_as_their_region_does(mode):
    @pl.jit
    def boundary(a: T64, b: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.matmul(
                pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            for _lane in pl.split_aiv(2, mode=mode):
                y = pl.relu(pl.aiv_shard(acc))
                c = pl.aic_gather(y)
            pl.store(c, [0, 0], out)
        return out

    ops = ("tile.aiv_shard", "tile.aic_gather")
    shard, gather = (c for c in calls(boundary.parse()) if c.op in ops)
    assert shard.attrs == {"split": mode} and gather.attrs == {"split": mode}
    halved = {SplitMode.UP_DOWN: (32, 64), SplitMode.LEFT_RIGHT: (64, 32), SplitMode.NONE: (64, 64)}
    assert shard.type.shape == halved[mode] and gather.type.shape == (64, 64)


def test_a_stated_split_that_matches_the_region_is_accepted_and_one_outside_every_region_is_not():
    @pl.jit
    def stated(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.LEFT_RIGHT):
                left = pl.aiv_shard(acc, split=2)  # PyPTO's code for LEFT_RIGHT
                pl.store(pl.add(left, left), [0, lane * 32], out)
            pl.aiv_shard(acc)
        return out

    with pytest.raises(ParseError) as info:
        stated.parse()
    assert "outside every pl.split_aiv region" in info.value.message
    assert info.value.span.line == stated.__wrapped__.__code__.co_firstlineno + 7


def test_regions_in_an_incore_helper_and_the_lane_and_block_indices():
    @pl.jit.incore
    def lanes(a: T64, out: pl.Out[T64]):
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            sub = pl.get_subblock_idx()
            row = (pl.get_block_idx() * 2 + sub) * 16
            pl.store(pl.exp(pl.load(a, [row, 0], [16, 64])), [row, 0], out)
        return out

    kernel = lanes.parse().function("lanes_kernel")
    (region,) = [s for s in kernel.body if isinstance(s, SplitAivRegion)]
    ops = [s.value.op for s in region.body]
    assert ops[:2] == ["tile.get_subblock_idx", "get_block_idx"]
    assert region.body[0].target.type == INDEX


def test_get_block_num_and_lane_bounds_drive_run_time_loops():
    @pl.jit
    def strided(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2):
                for r in pl.range(aiv_id, pl.get_block_num() * 8, 2):
                    pl.store(pl.load(a, [r, 0], [1, 64]), [r, 0], out)
        return out

    scope = strided.parse().entry_function.body[0]
    assert isinstance(scope, ScopeStmt)
    region = scope.body[0]
    number, loop = region.body
    assert isinstance(number, Assign) and number.value.op == "get_block_num"
    assert loop.start is region.lane
    assert loop.stop.op == "scalar.mul" and loop.stop.args[0] is number.target
