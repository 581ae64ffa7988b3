"""Two cores of one launch writing the same global-memory bytes: unordered, it is a RaceError naming
both lines (which value GM keeps would be whichever write landed last); ordered by the first
writer's publish -> fence -> syncall, disjoint, or both atomic adds, it runs clean."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import RaceError

T = pl.Tensor[[64, 64], pl.FP32]
HALF = torch.Size([32, 64])


@pl.jit
def same_region(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="same_region"):
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            pl.store(pl.relu(pl.load(x, [0, 0], [64, 64])), [0, 0], out)  # both lanes: all of out
    return out


@pl.jit
def disjoint_halves(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="disjoint_halves"):
        for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            pl.store(pl.relu(pl.load(x, [lane * 32, 0], [32, 64])), [lane * 32, 0], out)
    return out


@pl.jit
def both_add(x: T, out: pl.InOut[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="both_add"):
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            pl.assemble(out, pl.load(x, [0, 0], [64, 64]), [0, 0], atomic=pl.AtomicType.Add)
    return out


@pl.jit
def store_then_add(x: T, out: pl.InOut[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="store_then_add"):
        for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            t = pl.load(x, [0, 0], [64, 64])
            if lane == 0:
                pl.store(t, [0, 0], out)
            if lane == 1:
                pl.assemble(out, t, [0, 0], atomic=pl.AtomicType.Add)
    return out


@pl.jit
def ordered_writes(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="ordered_writes"):
        for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            t = pl.load(x, [0, 0], [64, 64])
            if lane == 0:
                pl.store(t, [0, 0], out)
                pl.system.cacheinvalid()  # publish
                pl.system.fence()
            pl.system.syncall(core_type="aiv")
            if lane == 1:
                pl.store(pl.add(t, t), [0, 0], out)  # lands after lane 0's write: out = 2x
    return out


@pl.jit
def barrier_only(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="barrier_only"):
        for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            t = pl.load(x, [0, 0], [64, 64])
            if lane == 0:
                pl.store(t, [0, 0], out)
            pl.system.syncall(core_type="aiv")
            if lane == 1:
                pl.store(pl.add(t, t), [0, 0], out)
    return out


@pl.jit
def second_writer_skips_the_round(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="skips_the_round"):
        for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            t = pl.load(x, [0, 0], [64, 64])
            if lane == 0:
                pl.store(t, [0, 0], out)
                pl.system.cacheinvalid()
                pl.system.fence()
            if lane == 1:
                slow = pl.exp(pl.exp(pl.exp(pl.exp(pl.exp(pl.exp(t))))))  # lane 0 reaches the round first
                pl.store(slow, [0, 0], out)
            pl.system.syncall(core_type="aiv")
    return out


# The cube writes all of out, the lanes each write their half of it.
@pl.jit
def cube_and_lanes(a: T, b: T, x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="cube_and_lanes"):
        a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], out)
        for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            pl.store(pl.relu(pl.load(x, [lane * 32, 0], [32, 64])), [lane * 32, 0], out)  # a lane's half
    return out


@pl.jit
def cube_then_lanes(a: T, b: T, x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="cube_then_lanes"):
        a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(b_l1, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], out)
        pl.system.cacheinvalid()  # publish
        pl.system.fence()
        pl.system.syncall()
        for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            pl.system.syncall()
            pl.store(pl.relu(pl.load(x, [lane * 32, 0], [32, 64])), [lane * 32, 0], out)
    return out


def _x() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(64, 64)


def _line(text: str) -> str:
    """``file:line`` of the first line of this file holding ``text``."""
    with open(__file__) as source:
        number = next(n for n, line in enumerate(source, 1) if text in line)
    return f"{__file__}:{number}"


def test_two_lanes_storing_the_same_region_is_a_race_naming_both_lines():
    with pytest.raises(RaceError) as info:
        same_region(_x(), torch.zeros(64, 64))
    store = _line("both lanes: all of out")
    assert info.value.message == (
        f"cg0.AIV1 writes out[0:64, 0:64] at {store} after cg0.AIV0 wrote it at {store}, but nothing "
        "orders the two: cg0.AIV0 never published its write (pl.system.cacheinvalid after it)"
    )
    assert info.value.span.line == int(store.rsplit(":", 1)[1])
    assert "pl.get_subblock_idx()" in info.value.hint and "pl.system.syncall" in info.value.hint


def test_two_lanes_storing_disjoint_halves_run_clean():
    x, out = _x(), torch.zeros(64, 64)
    disjoint_halves(x, out)
    torch.testing.assert_close(out, torch.relu(x))


def test_two_lanes_adding_atomically_into_the_same_region_run_clean():
    x, out = _x(), torch.ones(64, 64)
    both_add(x, out)
    torch.testing.assert_close(out, 1 + 2 * x)


def test_an_atomic_add_over_another_lanes_plain_store_is_a_race():
    with pytest.raises(RaceError) as info:
        store_then_add(_x(), torch.zeros(64, 64))
    assert info.value.message.startswith(
        f"cg0.AIV1 adds into out[0:64, 0:64] at {_line('pl.assemble(out, t, [0, 0], atomic')} after "
        f"cg0.AIV0 wrote it at {_line('pl.store(t, [0, 0], out)')}, but nothing orders the two"
    )


def test_publish_fence_syncall_orders_the_second_write_after_the_first():
    x, out = _x(), torch.zeros(64, 64)
    ordered_writes(x, out)
    torch.testing.assert_close(out, 2 * x)


def test_a_barrier_alone_does_not_order_two_writes():
    with pytest.raises(RaceError) as info:
        barrier_only(_x(), torch.zeros(64, 64))
    assert info.value.message.endswith(
        "but nothing orders the two: cg0.AIV0 never published its write (pl.system.cacheinvalid after it)"
    )


def test_a_second_write_before_the_round_the_first_writer_reached_is_a_race():
    with pytest.raises(RaceError) as info:
        second_writer_skips_the_round(_x(), torch.zeros(64, 64))
    assert info.value.message.endswith(
        "but nothing orders the two: cg0.AIV1 passed no pl.system.syncall that cg0.AIV0 reached after "
        "its fence"
    )


def test_the_cube_and_a_lane_writing_the_same_bytes_unordered_is_a_race():
    a, b = (torch.randn(64, 64) for _ in range(2))
    with pytest.raises(RaceError) as info:
        cube_and_lanes(a, b, _x(), torch.zeros(64, 64))
    cube_store = _line("pl.store(acc, [0, 0], out)")
    lane_store = _line("# a lane's half")
    assert info.value.message == (
        f"cg0.AIC writes out[0:32, 0:64] at {cube_store} after cg0.AIV0 wrote it at {lane_store}, but "
        "nothing orders the two: cg0.AIV0 never published its write (pl.system.cacheinvalid after it)"
    )


def test_the_lanes_overwriting_the_cubes_published_store_after_the_syncall_run_clean():
    a, b, x, out = torch.randn(64, 64), torch.randn(64, 64), _x(), torch.zeros(64, 64)
    cube_then_lanes(a, b, x, out)
    torch.testing.assert_close(out, torch.relu(x))


# pl.split(NONE) on a scope whose vector side takes nothing from the cube: no pipe at all.
@pl.jit
def unsplit_without_pipes(a: T, b: T, x: T, out: pl.Out[T], doubled: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.NONE)], name_hint="indep"):
        out[:] = pl.matmul(a, b, out_dtype=pl.FP32)
        doubled[:] = pl.add(x, x)
    return out


def test_under_pl_split_none_lane_0_alone_does_vector_work_that_uses_no_pipe():
    a, b, x = torch.randn(64, 64), torch.randn(64, 64), _x()
    out, doubled = torch.zeros(64, 64), torch.zeros(64, 64)
    unsplit_without_pipes(a, b, x, out, doubled)
    torch.testing.assert_close(doubled, 2 * x)
    torch.testing.assert_close(out, a @ b, rtol=1e-3, atol=1e-3)
    busy = unsplit_without_pipes.last_report.busy_cycles
    assert busy["cg0.AIV0"] > 0 and busy["cg0.AIV1"] == 0
