"""A valid shape survives control flow: a partial tile leaving a run-time if (names rebound in
the arms, or ``pl.yield_``), carried by ``pl.range`` / ``pl.while_`` (rebound, or through
``init_values``), left by ``break`` / ``continue``, keeps its valid shape, constant or run-time.
Stores write only the valid region and reductions see only it. Numbers against torch."""

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def ints(*values):
    return torch.tensor(values, dtype=torch.int32)


@pl.jit
def picked_rows(
    x: pl.Tensor[[64, 64], pl.FP32],
    cfg: pl.Tensor[[4], pl.INT32],
    sums: pl.Out[pl.Tensor[[64, 1], pl.FP32]],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = pl.read(cfg, [0])
        if pl.read(cfg, [1]) > 0:
            t = pl.load(x, [0, 0], [64, 64], valid_shape=[rows, 64])
        else:
            t = pl.load(x, [0, 0], [64, 64], valid_shape=[16, 48])
        pl.store(pl.row_sum(t, pl.create_tile([64, 64], pl.FP32)), [0, 0], sums)
        pl.store(pl.exp(t), [0, 0], out)
    return sums, out


@pytest.mark.parametrize(("flag", "rows", "cols"), [(1, 40, 64), (0, 16, 48)])
def test_a_tile_leaving_an_if_keeps_the_valid_shape_of_the_arm_that_ran(flag, rows, cols):
    x = rand(64, 64, seed=1)
    sums, out = torch.full((64, 1), -1.0), torch.full((64, 64), -1.0)
    picked_rows(x, ints(40, flag, 0, 0), sums, out, config=SIM)
    torch.testing.assert_close(sums[:rows], x[:rows, :cols].sum(1, keepdim=True))
    assert bool((sums[rows:] == -1).all())
    want = torch.full((64, 64), -1.0)
    want[:rows, :cols] = x[:rows, :cols].exp()
    torch.testing.assert_close(out, want)


@pl.jit
def yielded_rows(
    x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [64, 64])
        if pl.read(cfg, [1]) > 0:
            r = pl.yield_(pl.set_validshape(t, pl.read(cfg, [0]), 64))
        else:
            r = pl.yield_(pl.mul(t, 2.0))
        pl.store(pl.row_max(r, pl.create_tile([64, 64], pl.FP32)), [0, 0], out)
    return out


@pytest.mark.parametrize("flag", [1, 0])
def test_a_tile_leaving_an_if_through_pl_yield_keeps_its_valid_shape(flag):
    x = rand(64, 64, seed=2)
    out = torch.full((64, 1), -1.0)
    yielded_rows(x, ints(24, flag, 0, 0), out, config=SIM)
    if flag:
        torch.testing.assert_close(out[:24], x[:24].amax(1, keepdim=True))
        assert bool((out[24:] == -1).all())
    else:
        torch.testing.assert_close(out, (2 * x).amax(1, keepdim=True))


@pl.jit
def shrinking(
    x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [64, 64])
        for i in pl.range(pl.read(cfg, [0])):
            t = pl.set_validshape(pl.add(t, 1.0), 64 - 8 * (i + 1), 64)
        pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize(("n", "rows"), [(3, 40), (0, 64)])
def test_a_tile_a_range_loop_rebinds_keeps_the_valid_shape_of_its_last_iteration(n, rows):
    x = rand(64, 64, seed=3)
    out = torch.full((64, 64), -1.0)
    shrinking(x, ints(n, 0, 0, 0), out, config=SIM)
    torch.testing.assert_close(out[:rows], x[:rows] + n)
    assert bool((out[rows:] == -1).all())


@pl.jit
def grown_by_init_values(
    x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        start = pl.set_validshape(pl.load(x, [0, 0], [64, 64]), 8, 64)
        for i, (acc,) in pl.range(pl.read(cfg, [0]), init_values=(start,)):
            bigger = pl.set_validshape(pl.mul(acc, 2.0), 8 * (i + 2), 64)
            acc = pl.yield_(bigger)
        pl.store(pl.row_sum(acc, pl.create_tile([64, 64], pl.FP32)), [0, 0], out)
    return out


@pytest.mark.parametrize(("n", "rows", "scale"), [(2, 24, 4.0), (0, 8, 1.0)])
def test_a_tile_carried_through_init_values_keeps_its_valid_shape(n, rows, scale):
    x = rand(64, 64, seed=4)
    out = torch.full((64, 1), -1.0)
    grown_by_init_values(x, ints(n, 0, 0, 0), out, config=SIM)
    torch.testing.assert_close(out[:rows], scale * x[:rows].sum(1, keepdim=True), rtol=1e-5, atol=1e-4)
    assert bool((out[rows:] == -1).all())


@pl.jit
def while_shrinking(
    x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        limit = pl.read(cfg, [0])
        t = pl.load(x, [0, 0], [64, 64], valid_shape=[limit, 64])
        for (rows,) in pl.while_(init_values=(limit,)):
            pl.cond(rows > 20)
            rows = rows - 16
            t = pl.set_validshape(pl.sub(t, 1.0), rows, 32)
        pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize(("limit", "rows", "cols", "steps"), [(60, 12, 32, 3), (10, 10, 64, 0)])
def test_a_tile_carried_through_a_while_loop_keeps_its_valid_shape(limit, rows, cols, steps):
    x = rand(64, 64, seed=5)
    out = torch.full((64, 64), -1.0)
    while_shrinking(x, ints(limit, 0, 0, 0), out, config=SIM)
    want = torch.full((64, 64), -1.0)
    want[:rows, :cols] = x[:rows, :cols] - steps
    torch.testing.assert_close(out, want)


@pl.jit
def jumps(
    x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        stop = pl.read(cfg, [0])
        t = pl.load(x, [0, 0], [64, 64])
        for i in pl.range(4):
            if i == 1:
                t = pl.set_validshape(t, 48, 64)
                continue
            if i >= stop:
                t = pl.set_validshape(t, pl.read(cfg, [1]), 16)
                break
            t = pl.add(t, 1.0)
        pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize(
    ("stop", "rows", "cols", "added"), [(3, 5, 16, 2.0), (9, 48, 64, 3.0), (0, 5, 16, 0.0)]
)
def test_break_and_continue_leave_with_the_valid_shape_the_tile_has_there(stop, rows, cols, added):
    x = rand(64, 64, seed=6)
    out = torch.full((64, 64), -1.0)
    jumps(x, ints(stop, 5, 0, 0), out, config=SIM)
    want = torch.full((64, 64), -1.0)
    want[:rows, :cols] = x[:rows, :cols] + added
    torch.testing.assert_close(out, want)


@pl.jit
def mixed_dtypes(
    x: pl.Tensor[[64, 64], pl.FP32],
    cfg: pl.Tensor[[4], pl.INT32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    n: pl.INDEX,
):
    with pl.at(level=pl.Level.CORE_GROUP):
        if pl.read(cfg, [1]) > 0:
            t = pl.load(x, [0, 0], [64, 64], valid_shape=[pl.read(cfg, [0]), 64])  # an INT32 extent
        else:
            t = pl.load(x, [0, 0], [64, 64], valid_shape=[pl.min(64, n - 32), 64])  # an INDEX one
        pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize(("flag", "rows"), [(1, 9), (0, 18)])
def test_run_time_extents_of_two_integer_dtypes_leave_an_if_as_one(flag, rows):
    x = rand(64, 64, seed=7)
    out = torch.full((64, 64), -1.0)
    mixed_dtypes(x, ints(9, flag, 0, 0), out, 50, config=SIM)
    torch.testing.assert_close(out[:rows], x[:rows])
    assert bool((out[rows:] == -1).all())


def test_the_printed_program_with_carried_extents_parses_back_to_itself():
    for kernel, args in (
        (picked_rows, (rand(64, 64), ints(40, 1, 0, 0), torch.zeros(64, 1), torch.zeros(64, 64))),
        (shrinking, (rand(64, 64), ints(3, 0, 0, 0), torch.zeros(64, 64))),
        (jumps, (rand(64, 64), ints(3, 5, 0, 0), torch.zeros(64, 64))),
        (while_shrinking, (rand(64, 64), ints(60, 0, 0, 0), torch.zeros(64, 64))),
        (mixed_dtypes, (rand(64, 64), ints(9, 1, 0, 0), torch.zeros(64, 64), 50)),
    ):
        text = kernel.parse(*args).as_python()
        assert pl.parse(text).as_python() == text, kernel.name


@pl.jit
def split_tail(
    x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        t = pl.load(x, [0, 0], [64, 64])
        for i in pl.range(pl.read(cfg, [0])):
            if i % 2 == 1:
                t = pl.set_validshape(pl.add(t, 1.0), 48 - 12 * i, 64)
        pl.store(pl.fillpad(t, pad_value=pl.PadValue.zero), [0, 0], out)
    return out


@pytest.mark.parametrize(("n", "rows", "added"), [(2, 36, 1.0), (4, 12, 2.0), (1, 64, 0.0)])
def test_a_carried_valid_shape_is_halved_across_the_lanes_of_a_split_scope(n, rows, added):
    x = rand(64, 64, seed=8)
    out = torch.full((64, 64), -1.0)
    split_tail(x, ints(n, 0, 0, 0), out, config=SIM)
    want = torch.zeros(64, 64)
    want[:rows] = x[:rows] + added
    torch.testing.assert_close(out, want)
