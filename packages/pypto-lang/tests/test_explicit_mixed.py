"""The explicit mixed form parses: pipe ops, aiv_shard / aic_gather, split_aiv regions, lane indices."""

import pytest
from lang_golden import check_golden
from lang_kernels_explicit import explicit

import pypto.language as pl
from pypto.ir import INDEX, Assign, Call, Eval, ScopeStmt, SplitAivRegion, SplitMode, print_ir
from pypto.ir.nodes import walk_stmts

T64 = pl.Tensor[[64, 64], pl.FP32]
STEP3_OPS = {
    "aic_initialize_pipe",
    "aiv_initialize_pipe",
    "tpush_to_aiv",
    "tpush_to_aic",
    "tpop_from_aic",
    "tpop_from_aiv",
    "tfree_to_aic",
    "tfree_to_aiv",
    "aiv_shard",
    "aic_gather",
}


def calls(program):
    stmts = walk_stmts(program.entry_function.body)
    return [s.value for s in stmts if isinstance(s, (Assign, Eval)) and isinstance(s.value, Call)]


def regions(program):
    return [s for s in walk_stmts(program.entry_function.body) if isinstance(s, SplitAivRegion)]


def test_every_operator_of_the_step3_table_parses_to_its_op():
    program = explicit.parse()
    check_golden("explicit.txt", print_ir(program))
    assert {c.op for c in calls(program)} >= STEP3_OPS
    assert [r.mode for r in regions(program)] == [SplitMode.UP_DOWN, SplitMode.UP_DOWN]


def test_a_region_binds_its_lane_to_an_index_var_and_keeps_its_body():
    first, second = regions(explicit.parse())
    assert (first.lane.name, first.lane.type) == ("aiv_id", INDEX)
    assert second.lane.name == "aiv_id_1"  # a second region's lane is a new variable
    assert [s.value.op for s in second.body] == ["tile.exp", "tile.store"]


def test_a_name_bound_in_a_region_is_the_same_variable_after_it():
    program = explicit.parse()
    assigns = [s for s in walk_stmts(program.entry_function.body) if isinstance(s, Assign)]
    z = next(s.target for s in assigns if s.target.name == "z")
    gather = next(c for c in calls(program) if c.op == "aic_gather")
    assert gather.args[0] is z


@pytest.mark.parametrize("mode", [SplitMode.UP_DOWN, SplitMode.LEFT_RIGHT, SplitMode.NONE])
def test_shard_and_gather_default_to_the_mode_of_the_region_they_feed_and_drain(mode):
    @pl.jit
    def boundary(a: T64, b: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.matmul(
                pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            x_v = pl.aiv_shard(acc)
            for _lane in pl.split_aiv(2, mode=mode):
                y = pl.relu(x_v)
            c = pl.aic_gather(y)
            pl.store(c, [0, 0], out)
        return out

    shard, gather = (c for c in calls(boundary.parse()) if c.op in ("aiv_shard", "aic_gather"))
    assert shard.attrs == {"split": mode} and gather.attrs == {"split": mode}
    halved = {SplitMode.UP_DOWN: (32, 64), SplitMode.LEFT_RIGHT: (64, 32), SplitMode.NONE: (64, 64)}
    assert shard.type.shape == halved[mode] and gather.type.shape == (64, 64)


def test_an_explicit_split_wins_and_a_shard_with_no_region_after_it_is_not_split():
    @pl.jit
    def stated(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            left = pl.aiv_shard(acc, split=pl.SplitMode.LEFT_RIGHT)
            for _lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                pl.store(pl.add(left, left), [0, 0], out)
            pl.aiv_shard(acc)
        return out

    left, trailing = (c for c in calls(stated.parse()) if c.op == "aiv_shard")
    assert left.attrs == {"split": SplitMode.LEFT_RIGHT} and left.type.shape == (64, 32)
    assert trailing.attrs == {"split": SplitMode.NONE}


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
    assert ops[:2] == ["get_subblock_idx", "get_block_idx"]
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
