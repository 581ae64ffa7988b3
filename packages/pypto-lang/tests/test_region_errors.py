"""The pl.split_aiv region rules, as PyPTO states them: cube work stays outside the regions, vector
compute inside them (loads and stores may sit outside), ``pl.aiv_shard`` / ``pl.aic_gather`` inside
the region whose edge the tile crosses. Each violation is a ParseError at the op, naming it and the
fix."""

import pytest
from lang_diagnostics import header, rendered

import pypto.language as pl
from pypto.ir import ParseError

T64 = pl.Tensor[[64, 64], pl.FP32]
H16 = pl.Tensor[[64, 64], pl.FP16]
UP_DOWN = pl.SplitMode.UP_DOWN
FILE = __file__
CUBE_HINT = "move it before or after the region; hand tiles across with pl.aiv_shard / pl.aic_gather inside the region"


def parse_error(kernel) -> ParseError:
    with pytest.raises(ParseError) as info:
        kernel.parse()
    return info.value


def in_cube_message(name: str) -> str:
    return f"cube op {name} inside a pl.split_aiv region, whose body runs on the AIV lanes"


def test_a_matmul_inside_a_region_is_rejected_at_the_matmul():
    @pl.jit
    def cube_in_region(a: H16, b: H16, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            left = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            right = pl.move(
                pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
            )
            for _lane in pl.split_aiv(2, mode=UP_DOWN):
                acc = pl.matmul(left, right)  # cube in a region
            pl.store(acc, [0, 0], out)
        return out

    err = parse_error(cube_in_region)
    shown = rendered(err)
    message = in_cube_message("pl.matmul")
    assert err.message == message
    assert shown.header == header(
        FILE, "acc = pl.matmul(left, right)  # cube in a region", "pl.matmul", message
    )
    assert shown.underlined == "pl.matmul(left, right)"
    assert shown.hint == CUBE_HINT


def test_a_load_into_a_cube_space_inside_a_region_is_a_cube_op():
    @pl.jit
    def mat_load_in_region(a: H16, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2):
                pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)  # into L1
        return out

    err = parse_error(mat_load_in_region)
    assert err.message == in_cube_message("pl.load")
    assert rendered(err).underlined == "pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)"


@pytest.mark.parametrize("op", ["tpush_to_aiv", "tpop_from_aiv", "tfree_to_aiv", "aic_initialize_pipe"])
def test_cube_side_pipe_ops_inside_a_region_are_rejected(op):
    @pl.jit
    def tpush_to_aiv(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            for _lane in pl.split_aiv(2):
                pl.tpush_to_aiv(acc)
        return out

    @pl.jit
    def tpop_from_aiv(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2):
                pl.tpop_from_aiv(shape=[64, 64], dtype=pl.FP32)
        return out

    @pl.jit
    def tfree_to_aiv(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            popped = pl.tpop_from_aiv(shape=[64, 64], dtype=pl.FP32)
            for _lane in pl.split_aiv(2):
                pl.tfree_to_aiv(popped)
        return out

    @pl.jit
    def aic_initialize_pipe(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2):
                pl.aic_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
        return out

    kernels = {k.name: k for k in (tpush_to_aiv, tpop_from_aiv, tfree_to_aiv, aic_initialize_pipe)}
    err = parse_error(kernels[op])
    assert err.message == in_cube_message(f"pl.{op}")
    assert rendered(err).underlined.startswith(f"pl.{op}(")


def test_vector_compute_before_the_first_region_of_its_scope_is_rejected():
    @pl.jit
    def vector_outside(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.exp(pl.load(a, [0, 0], [64, 64]))  # before the region
            for _lane in pl.split_aiv(2):
                pl.store(t, [0, 0], out)
        return out

    err = parse_error(vector_outside)
    shown = rendered(err)
    message = (
        "vector op pl.exp sits outside every pl.split_aiv region of a scope that has them: the regions "
        "own the vector work"
    )
    assert err.message == message
    assert shown.header == header(
        FILE, "t = pl.exp(pl.load(a, [0, 0], [64, 64]))  # before", "pl.exp", message
    )
    assert shown.underlined == "pl.exp(pl.load(a, [0, 0], [64, 64]))"
    assert shown.hint.startswith("wrap that phase in `for _ in pl.split_aiv(2, mode=pl.SplitMode.NONE):`")


def test_loads_and_stores_may_sit_outside_the_regions():
    @pl.jit
    def staged(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 64])
            for _lane in pl.split_aiv(2):
                r = pl.exp(t)
            pl.store(r, [0, 0], out)
        return out

    staged.parse()


def test_vector_compute_after_a_region_is_rejected_too():
    @pl.jit
    def vector_after(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2):
                t = pl.load(a, [0, 0], [64, 64])
            out[:] = t + t
        return out

    err = parse_error(vector_after)
    assert err.message.startswith("vector op pl.add sits outside every pl.split_aiv region")
    assert rendered(err).underlined == "t + t"


@pytest.mark.parametrize("edge", ["aiv_shard", "aic_gather"])
def test_shard_and_gather_outside_every_region_are_rejected(edge):
    @pl.jit
    def aiv_shard(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            x_v = pl.aiv_shard(acc)
            for aiv_id in pl.split_aiv(2, mode=UP_DOWN):
                pl.store(x_v, [aiv_id * 32, 0], out)
        return out

    @pl.jit
    def aic_gather(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2, mode=UP_DOWN):
                v = pl.exp(pl.load(a, [aiv_id * 32, 0], [32, 64]))
            pl.aic_gather(v)
        return out

    err = parse_error({"aiv_shard": aiv_shard, "aic_gather": aic_gather}[edge])
    shown = rendered(err)
    assert err.message == (
        f"pl.{edge}: outside every pl.split_aiv region: it names a tile crossing a region's edge, so it "
        "is written inside the region"
    )
    assert shown.underlined.startswith(f"pl.{edge}(")
    assert shown.hint.startswith("write it inside `for aiv_id in pl.split_aiv(2, mode=...)`")


def test_a_region_with_a_crossing_that_does_full_width_work_on_both_lanes_is_rejected():
    @pl.jit
    def mixing(a: T64, bias: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            for aiv_id in pl.split_aiv(2, mode=UP_DOWN):
                x_v = pl.aiv_shard(acc)  # the lane's half
                pl.store(pl.exp(x_v), [aiv_id * 32, 0], out)
                full = pl.load(bias, [0, 0], [64, 64])  # full width
                pl.store(pl.relu(full), [0, 0], out)
        return out

    err = parse_error(mixing)
    shown = rendered(err)
    assert err.message.startswith(
        "the pl.split_aiv region (pl.SplitMode.UP_DOWN) names a crossing, so it is written per lane, "
        "but pl.load at line "
    )
    assert err.message.endswith("works on a full-width tile: both lanes would do the same work")
    assert shown.underlined == "pl.load(bias, [0, 0], [64, 64])"
    assert "mode=pl.SplitMode.NONE" in shown.hint


def test_shares_inside_a_region_and_full_width_work_in_a_none_region_are_fine():
    @pl.jit
    def separate(a: T64, bias: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            for aiv_id in pl.split_aiv(2, mode=UP_DOWN):
                pl.store(pl.exp(pl.aiv_shard(acc)), [aiv_id * 32, 0], out)
            for _lane in pl.split_aiv(2):
                pl.store(pl.relu(pl.load(bias, [0, 0], [64, 64])), [0, 0], out)
        return out

    separate.parse()


def test_split_aiv_requires_two_lanes():
    @pl.jit
    def four_lanes(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(4, mode=UP_DOWN):
                pass
        return out

    err = parse_error(four_lanes)
    assert err.message == "pl.split_aiv(4) requires n == 2: a core group has two AIV lanes"
    assert rendered(err).underlined == "4"
    assert err.hint == "write `for aiv_id in pl.split_aiv(2, mode=...):`"


def test_pl_split_and_a_region_in_one_scope_are_mutually_exclusive():
    @pl.jit
    def both(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(UP_DOWN)]):
            for _lane in pl.split_aiv(2, mode=UP_DOWN):  # the region
                pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
        return out

    err = parse_error(both)
    shown = rendered(err)
    message = "pl.split and pl.split_aiv regions are mutually exclusive in one scope"
    assert shown.header == header(
        FILE, "for _lane in pl.split_aiv(2, mode=UP_DOWN):  # the region", "pl.split_aiv", message
    )
    assert shown.underlined == "pl.split_aiv(2, mode=UP_DOWN)"
    assert "drop pl.split(...) from optimizations=" in shown.hint


def test_a_region_outside_a_core_group_scope_is_rejected():
    @pl.jit
    def unscoped(a: T64, out: pl.Out[T64]):
        for _lane in pl.split_aiv(2):
            pass
        return out

    @pl.jit
    def aiv_level(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.AIV):
            for _lane in pl.split_aiv(2):
                pass
        return out

    for kernel in (unscoped, aiv_level):
        err = parse_error(kernel)
        assert err.message == (
            "pl.split_aiv(...) outside a pl.at(level=pl.Level.CORE_GROUP) scope: a region divides "
            "a core group's vector work between its two AIV lanes"
        )
        assert rendered(err).underlined == "pl.split_aiv(2)"


def test_regions_do_not_nest():
    @pl.jit
    def nested(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2):
                for _inner in pl.split_aiv(2):
                    pass
        return out

    err = parse_error(nested)
    assert (err.message, err.hint) == ("pl.split_aiv regions do not nest", "close the outer region first")
    assert rendered(err).source.strip() == "for _inner in pl.split_aiv(2):"


def test_the_lane_does_not_exist_after_its_region():
    @pl.jit
    def lane_after(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2):  # noqa: B007 - using the lane after the region is the error
                pass
            pl.store(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), [aiv_id, 0], out)
        return out

    err = parse_error(lane_after)
    assert err.message.startswith("'aiv_id' is defined inside a loop")
    assert rendered(err).underlined == "aiv_id"


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        ("bad_mode", "pl.split_aiv() mode= takes a pl.SplitMode, got the str 'UP_DOWN'"),
        ("unknown_keyword", "pl.split_aiv(): got an unexpected keyword argument 'lanes'"),
        ("as_value", "pl.split_aiv(...) cannot be used here"),
    ],
)
def test_split_aiv_misuse(kernel, message):
    @pl.jit
    def bad_mode(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2, mode="UP_DOWN"):
                pass
        return out

    @pl.jit
    def unknown_keyword(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _lane in pl.split_aiv(2, lanes=2):
                pass
        return out

    @pl.jit
    def as_value(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.split_aiv(2)
        return out

    kernels = {k.name: k for k in (bad_mode, unknown_keyword, as_value)}
    assert parse_error(kernels[kernel]).message == message


def test_pipe_ops_outside_a_scope_name_the_op_and_the_scope_fix():
    @pl.jit
    def unscoped_pipe(a: T64, out: pl.Out[T64]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
        return out

    err = parse_error(unscoped_pipe)
    assert err.message == (
        "pl.aic_initialize_pipe outside a pl.at scope: cross-core, lane and system operations run "
        "on a core group, not directly in the @pl.jit body"
    )
    assert "with pl.at(level=pl.Level.CORE_GROUP):" in err.hint
